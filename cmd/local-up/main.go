// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command local-up runs a local control plane: our kube-apiserver on
// embedded etcd, kube-controller-manager and kube-scheduler. The PKI,
// kubeconfigs and command lines are kubeadm's own, produced by kubeadm's
// phases at the pinned version, so the layout is the one operators know from
// /etc/kubernetes. Only etcd differs: it runs inside the apiserver.
//
// With -upstream it runs vanilla upstream's kube-apiserver instead, on
// etcd as a process of its own (upstream has no embedded etcd): the
// baseline that `make conformance PROFILE=upstream` compares against.
//
// With -nodes n it also runs n real worker nodes (internal/localnode) and
// CoreDNS, so pods run: the apiserver then serves on the host's address on
// the nodes' bridge instead of 127.0.0.1, so that pods reach it.
//
// `make run` builds the binaries and calls this. State lives in -dir and is
// reused by later runs, with or without nodes, on other ports and plugins,
// and by the next Kubernetes minor (package controlplane's state.go); Ctrl-C stops everything, the
// nodes first and the apiserver last, removes what the nodes added to the
// host, and ends the run normally.
//
// This file parses the flags; package controlplane does the work.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/cmd/local-up/internal/controlplane"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "local-up: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var o controlplane.Options
	flag.StringVar(&o.Dir, "dir", "_output/local", "state directory: PKI, kubeconfigs, etcd data, logs")
	flag.StringVar(&o.Bin, "bin", "_output/bin", "directory with kube-apiserver, kube-controller-manager and kube-scheduler")
	flag.StringVar(&o.NodeBin, "node-bin", "", "directory with the nodes' kubelet and kube-proxy (default -bin; make run LINE= of a preview passes main's, lines/README.md)")
	flag.StringVar(&o.AdmissionConfig, "admission-config", "examples/admission/admission-config.yaml", "AdmissionConfiguration file for kube-apiserver; empty for none, as kubeadm's default")
	flag.StringVar(&o.Plugins, "admission-plugins", "", "comma-separated admission plugins to enable besides upstream's defaults and NodeRestriction")
	flag.IntVar(&o.Port, "port", int(kubeadmconstants.KubeAPIServerPort), "kube-apiserver's secure port")
	flag.IntVar(&o.ControllerManagerPort, "controller-manager-port", kubeadmconstants.KubeControllerManagerPort, "kube-controller-manager's secure port on 127.0.0.1")
	flag.IntVar(&o.SchedulerPort, "scheduler-port", kubeadmconstants.KubeSchedulerPort, "kube-scheduler's secure port on 127.0.0.1")
	flag.IntVar(&o.Nodes, "nodes", 0, "real worker nodes to run (needs root; see docs/local-nodes.md)")
	flag.StringVar(&o.Images, "images", "_output/images/node", "directory of the image tarballs the nodes import")
	flag.StringVar(&o.E2EImages, "e2e-images", "", "the archive of the rest of the e2e framework's images (make e2e-images: _output/images/e2e/"+oci.E2EImageArchive+") for the nodes to import too, with the etcd image in -images")
	flag.StringVar(&o.ExtraImages, "extra-images", "", "comma-separated image archives for the nodes to import and their registry to serve after the others (make conformance RUNNER=hydrophone: upstream's conformance image, _output/images/e2e/"+oci.ConformanceImageArchive+")")
	flag.StringVar(&o.Containerd, "containerd", "", "directory with containerd 2's containerd, containerd-shim-runc-v2 and ctr (make containerd: _output/bin/containerd-2) for the nodes to run instead of Debian's containerd 1.6")
	flag.Func("apiserver-arg", "an extra kube-apiserver flag, name=value, repeatable (for example nodes-proxy-get-requires-create=true)", func(arg string) error {
		name, value, ok := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if !ok || name == "" {
			return fmt.Errorf("%q: want name=value", arg)
		}
		o.APIServerArgs = append(o.APIServerArgs, kubeadmapi.Arg{Name: name, Value: value})
		return nil
	})
	flag.StringVar(&o.Policies, "pod-security-policies", "examples/podsecuritypolicy", "comma-separated files or directories of PodSecurityPolicies and their grants, applied when PodSecurityPolicy is enabled")
	flag.BoolVar(&o.Upstream, "upstream", false, "run vanilla kube-apiserver-upstream on etcd, both from -bin, instead of Turnstile's kube-apiserver with embedded etcd")
	flag.StringVar(&o.CleanCommand, "clean-command", "", "the command that resets -dir, for messages (make run passes `make clean-local` with its LINE); default: this program with -dir and -clean")
	clean := flag.Bool("clean", false, "remove the state in -dir, and what a killed run's nodes left on the host, instead of running")
	flag.Parse()
	if o.NodeBin == "" {
		o.NodeBin = o.Bin
	}
	for _, p := range []*string{&o.Dir, &o.Bin, &o.NodeBin, &o.AdmissionConfig, &o.Images, &o.E2EImages, &o.Containerd} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	if *clean {
		return controlplane.Clean(o.Dir)
	}
	if o.CleanCommand == "" {
		o.CleanCommand = fmt.Sprintf("`%s -dir %s -clean`", os.Args[0], o.Dir)
	}
	return controlplane.Run(o)
}
