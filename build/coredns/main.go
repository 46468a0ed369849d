// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command coredns is CoreDNS, at the version kubeadm deploys, with the
// plugins a cluster's DNS uses and nothing else: kubeadm's default Corefile
// (errors, health, ready, kubernetes, prometheus, forward, cache, loop,
// reload, loadbalance) and the small plugins Corefiles commonly add. It is
// CoreDNS's own main (github.com/coredns/coredns/coredns.go) with a shorter
// plugin list, as CoreDNS documents for builds with other plugins: the
// cloud DNS backends (route53, azure, clouddns), etcd, nomad, dnstap,
// tracing, geoip and DNSSEC signing bring in most of CoreDNS's dependency
// graph, and leaving them out halves a cold build. A Corefile naming a
// plugin not built in fails at start with "no action found for directive".
//
// `make node-images` builds it, stamped with the release's commit:
//
//	go build -C build/coredns -trimpath -o ../../_output/bin/coredns .
//
// It is a module of its own so that CoreDNS's dependency graph stays out of
// Turnstile's go.mod; its go.mod pins CoreDNS at the version kubeadm deploys
// (k8s.io/kubernetes/cmd/kubeadm/app/constants.CoreDNSVersion, which a test
// checks).
package main

import (
	"github.com/coredns/coredns/coremain"

	// In core/plugin/zplugin.go's order.
	_ "github.com/coredns/coredns/plugin/any"
	_ "github.com/coredns/coredns/plugin/autopath"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/bufsize"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/cancel"
	_ "github.com/coredns/coredns/plugin/chaos"
	_ "github.com/coredns/coredns/plugin/debug"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/file"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/header"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/k8s_external"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metadata"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/minimal"
	_ "github.com/coredns/coredns/plugin/nsid"
	_ "github.com/coredns/coredns/plugin/pprof"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/rewrite"
	_ "github.com/coredns/coredns/plugin/root"
	_ "github.com/coredns/coredns/plugin/template"
	_ "github.com/coredns/coredns/plugin/transfer"
	_ "github.com/coredns/coredns/plugin/whoami"
)

func main() {
	coremain.Run()
}
