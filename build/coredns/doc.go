// Package coredns is a module of its own so that CoreDNS's dependency graph,
// which only the local node's images need, stays out of Turnstile's go.mod.
// Its go.mod pins CoreDNS (the tool line) at the version kubeadm deploys
// (k8s.io/kubernetes/cmd/kubeadm/app/constants.CoreDNSVersion), and
// `make node-images` builds it with
//
//	go build -C build/coredns -trimpath -o ../../_output/bin/coredns github.com/coredns/coredns
package coredns
