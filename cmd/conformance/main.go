// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command conformance runs upstream's [Conformance] specs against a local
// control plane with real nodes: local-up -nodes 2 with the e2e
// framework's images, under one of the profiles of package profiles. e2e.test
// and ginkgo are upstream's, built from test/conformance's module at the
// pinned versions.
//
// It runs the specs in two passes, as upstream's conformance image does:
// those that may run in parallel with -procs ginkgo processes, then the
// [Serial] ones alone. Each pass writes ginkgo's JUnit and JSON reports in
// -out/<profile>; then it writes summary.md there (passed, failed and
// skipped, with names) and passed.txt, which the next run of another profile
// compares against. `make conformance` builds everything and calls it.
//
// With -runner hydrophone (package suite's hydrophone.go) it runs the suite as
// certification does instead: sigs.k8s.io/hydrophone starts upstream's
// conformance image in the cluster, and the run's reports are the e2e.log
// and junit_01.xml hydrophone downloads, in -out/<profile>-hydrophone,
// compared spec for spec with our runner's last run on the profile.
//
// Every run that finishes writes the submission folder for
// cncf/k8s-conformance (package suite's submission.go).
//
// `conformance check DIR` applies the checks of cncf/k8s-conformance's bot
// to a submission folder (package check); `make conformance-check DIR=...`
// passes it the release's conformance.yaml and the current release.
//
// This file parses the flags; the packages under internal do the work.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/turnstile-k8s/turnstile/cmd/conformance/internal/check"
	"github.com/turnstile-k8s/turnstile/cmd/conformance/internal/suite"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "check" {
		if err := check.Command(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "conformance: %v\n", err)
			os.Exit(1)
		}
		return
	}
	var o suite.Options
	flag.StringVar(&o.Profile, "profile", "all-compatible", "the control plane to test (cmd/conformance/internal/profiles; docs/conformance.md)")
	flag.StringVar(&o.Bin, "bin", "_output/bin", "directory with e2e.test, ginkgo, local-up and the binaries local-up runs")
	flag.StringVar(&o.Images, "images", "_output/images/node", "the nodes' image tarballs (make node-images control-plane-images)")
	flag.StringVar(&o.E2EImages, "e2e-images", "_output/images/e2e/e2e.tar", "the e2e framework's other images (make e2e-images); empty for none, when the specs run need only the node images")
	flag.StringVar(&o.Containerd, "containerd", "_output/bin/containerd-2", "containerd 2's binaries for the nodes (make containerd); empty for Debian's containerd 1.6, which has no image volumes")
	flag.StringVar(&o.Runner, "runner", suite.RunnerOurs, "who runs the suite: ours (ginkgo and e2e.test on this machine) or hydrophone (upstream's conformance image in the cluster, started by hydrophone in -bin, as certification runs it)")
	flag.StringVar(&o.ConformanceImage, "conformance-image", "_output/images/e2e/conformance.tar", "with -runner hydrophone, the archive of upstream's conformance image (make conformance-image) for the nodes to import")
	flag.StringVar(&o.Out, "out", "_output/conformance", "where each profile's reports go, in a directory of its name")
	flag.StringVar(&o.Focus, "focus", "", "run only the [Conformance] specs whose names match this regular expression")
	flag.StringVar(&o.Skip, "skip", "", "leave out the specs whose names match this regular expression")
	flag.StringVar(&o.Specs, "specs", "", "run only the specs this file names, one full name a line (# starts a comment); each must run")
	flag.IntVar(&o.Procs, "procs", 8, "ginkgo processes for the parallel pass (they mostly wait for pods)")
	flag.IntVar(&o.Nodes, "nodes", 2, "real worker nodes (two: one spec needs two untainted nodes)")
	flag.StringVar(&o.Passes, "passes", suite.DefaultPasses, "which passes to run, in this order: parallel (the specs that may share the cluster), serial (the [Serial] ones, alone)")
	flag.DurationVar(&o.Timeout, "timeout", 3*time.Hour, "ginkgo's timeout for each pass")
	flag.StringVar(&o.Product, "product", suite.ProductFile, "the submission's PRODUCT.yaml (${VERSION} becomes the tested kube-apiserver's version)")
	flag.StringVar(&o.Reproduce, "reproduce", "", "the command that reproduces this run, for the submission's README.md (make conformance passes it); default: this command line")
	flag.Parse()
	if err := suite.Run(o); err != nil {
		fmt.Fprintf(os.Stderr, "conformance: %v\n", err)
		os.Exit(1)
	}
}
