// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command nodeimages writes the images a local Kubernetes node needs, so that
// nothing is ever pulled: pause, upstream's e2e busybox and agnhost, and
// CoreDNS, each a docker-archive tarball holding all of its names
// (oci.NodeImages) for `ctr -n k8s.io images import`. `make node-images`
// builds the binaries it packs and runs it:
//
//	nodeimages -out _output/images/node -bin _output/bin -kubernetes DIR
//
// where -bin holds pause, agnhost and coredns, and DIR is the
// k8s.io/kubernetes module's directory (agnhost's porter certificate).
// Busybox is Debian's busybox-static 1.37 from trixie (fetched with
// mmdebstrap), with -bin's busybox-sh as /bin/sh; agnhost adds Debian's
// bash-static.
//
// With -control-plane it writes kubeadm's control-plane images
// (oci.ControlPlaneImages) instead, from the binaries in -bin, upstream's
// kube-apiserver being kube-apiserver-upstream there; with -e2e, the rest of the images upstream's e2e
// framework runs (oci.E2EImages) into one archive, on a Debian root file
// system that mmdebstrap makes from Debian's packages (make e2e-images);
// with -conformance, upstream's conformance image on that root file system
// (oci.ConformanceImage; make conformance-image); with -airgap linux/ARCH,
// the air-gap bundle's images but our kube-apiserver, from that platform's
// binaries in -bin, kube-proxy on Debian's iptables and nftables (make
// release adds the kube-apiserver and writes the bundle).
//
// An archive whose inputs (files, their modes and contents, the configs,
// this program) are those of its last build is not written again: the
// sha256 of the inputs is kept next to the tarball, in NAME.tar.inputs. The
// Debian root file system is kept as debian-KEY.tar, KEY being the sha256 of
// what mmdebstrap is asked for.
//
// This file parses the flags; package images does the work.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/cmd/nodeimages/internal/images"
)

func main() {
	out := flag.String("out", "_output/images/node", "directory for the tarballs")
	bin := flag.String("bin", "_output/bin", "directory holding pause, agnhost and coredns (and, with -e2e, the e2e images' binaries)")
	kubernetes := flag.String("kubernetes", "", "the k8s.io/kubernetes module's directory (go list -m -f '{{.Dir}}' k8s.io/kubernetes)")
	busybox := flag.String("busybox", "", "a static busybox; empty for Debian trixie's busybox-static (1.37, upstream's e2e busybox version), fetched into -out with mmdebstrap")
	bash := flag.String("bash", "/bin/bash-static", "a static bash for the agnhost image (Debian's bash-static)")
	version := flag.String("kubernetes-version", "", "with -control-plane, the version kubeadm names the control-plane images after (v1.37.2); with -conformance, the conformance image's tag")
	controlPlane := flag.Bool("control-plane", false, "write kubeadm's kube-apiserver (from kube-apiserver-upstream), kube-controller-manager, kube-scheduler and etcd images from the binaries in -bin instead")
	e2e := flag.Bool("e2e", false, "write the rest of the e2e framework's images instead, into -out/"+oci.E2EImageArchive+" (needs mmdebstrap and Debian's package mirror)")
	airgap := flag.String("airgap", "", "with -kubernetes-version and -repository, write the air-gap bundle's images of this platform (linux/arm64) but the kube-apiserver instead, into -out/airgap-images-OS-ARCH.tar, from that platform's binaries in -bin")
	repository := flag.String("repository", "turnstile-k8s", "with -airgap, kubeadm's imageRepository")
	conformance := flag.Bool("conformance", false, "write upstream's conformance image of -kubernetes-version instead, into -out/"+oci.ConformanceImageArchive+", from e2e.test, ginkgo, kubectl and go-runner in -bin, on -e2e's Debian root file system")
	flag.Parse()
	if *conformance {
		if err := images.RunConformance(os.Stdout, *out, *bin, *kubernetes, *version); err != nil {
			fmt.Fprintf(os.Stderr, "nodeimages: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if *airgap != "" {
		if err := images.RunAirGap(os.Stdout, *out, *bin, *airgap, *repository, *version); err != nil {
			fmt.Fprintf(os.Stderr, "nodeimages: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if !*controlPlane {
		*version = ""
	} else if *version == "" {
		fmt.Fprintln(os.Stderr, "nodeimages: -control-plane needs -kubernetes-version")
		os.Exit(2)
	}
	var err error
	if *e2e {
		err = images.RunE2E(os.Stdout, *out, *bin, *kubernetes, *busybox)
	} else {
		err = images.Run(os.Stdout, *out, *bin, *kubernetes, *busybox, *bash, *version)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodeimages: %v\n", err)
		os.Exit(1)
	}
}
