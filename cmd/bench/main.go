// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command bench measures what Turnstile's kube-apiserver costs against
// vanilla upstream kube-apiserver built from the same module graph. By
// default it runs the two alternately under the same load and reports the
// ratio of every figure (package compare; `make bench`); -scale grows a
// control plane on kwok's fake nodes step by step instead (package scale;
// `make bench-scale`), -scale-merge combines earlier scale runs, and
// -policy-heap weighs what serving policy/v1beta1 adds to the live heap.
// This file parses the flags; the packages under internal do the work.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/compare"
	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/measure"
	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/policies"
	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/scale"
)

func main() {
	var o compare.Options
	flag.IntVar(&o.Pairs, "pairs", 3, "Turnstile/upstream run pairs per scenario")
	flag.DurationVar(&o.Duration, "duration", 8*time.Second, "length of one measured run: every run takes the steps the slower side took in this long at its warm-up's pace, so that both sides do the same work (ended at 4× this at the latest)")
	flag.DurationVar(&o.Warmup, "warmup", 3*time.Second, "unmeasured load on each server before the pairs")
	flag.IntVar(&o.Concurrency, "concurrency", 8, "concurrent clients")
	flag.DurationVar(&o.Profile, "profile-duration", 30*time.Second, "length of the profiled run (100 samples a second); with -scale, of the CPU profile at the start of each step's rollout")
	flag.StringVar(&o.ProfileOf, "profile", "all-documented/pods", "configuration/scenario whose Turnstile side gets one more run under a CPU profile, attributed to admission plugins")
	attribute := flag.String("attribute", "same-plugins/pods,upstream-same/pods", "configuration/scenario,...: after the pairs, profile each side for -profile-duration more and list, function by function, what Turnstile spends per request that upstream does not (CPU, bytes and objects allocated); none: \"\"")
	flag.StringVar(&o.Out, "out", "_output/bench", "directory for the JSON report")
	flag.StringVar(&o.Admission, "admission-config", "cmd/bench/admission-config.yaml", "AdmissionConfiguration for all-documented")
	flag.StringVar(&o.Only, "only", "", "run only configurations or scenarios whose name contains this")
	flag.StringVar(&o.Micro, "micro", "", "output of `go test -bench` to include in the report")
	flag.IntVar(&policies.Scale.Teams, "psp-teams", 0, "replace the 40 named teams of PodSecurityPolicy's policy set by this many generic ones (app-NNN, each tried before privileged), as make bench-psp's clusters (0: the named teams)")
	flag.IntVar(&policies.Scale.Bindings, "psp-bindings", 0, "RoleBindings and ClusterRoleBindings to create besides the policies' grants, on the Turnstile side of the configurations with PodSecurityPolicy")
	var so scale.Options
	scaleSteps := flag.String("scale", "", "run the scale benchmark instead, through these steps: NODES/PODS/POLICIES/RULES,... (make bench-scale)")
	policyHeap := flag.String("policy-heap", "", "instead of the load, measure what serving policy/v1beta1 adds to the live heap: NODES/PODS/POLICIES on two of our apiservers, one serving the API with the policies, one not (bench-scale's largest step: 5000/30000/1000)")
	merge := flag.String("scale-merge", "", "instead of running, combine earlier scale runs (DIR,DIR,...: their latest.json) into one table, summary and plot.json in -out")
	sides := flag.String("sides", "turnstile,upstream-same,upstream", "scale: the sides to grow, one after another (turnstile, upstream-same, upstream)")
	flag.IntVar(&so.Repeats, "repeats", 1, "scale: turns in which every side grows through the steps, in alternating order; the summary compares medians")
	flag.IntVar(&so.Probes, "probes", 1000, "scale: pod and volume rounds of the probe at each step (a p99 of 1,000 is the tenth slowest)")
	flag.IntVar(&so.ListProbes, "list-probes", 100, "scale: the fewest rounds of the probe's three LISTs at each step")
	flag.DurationVar(&so.ListFor, "list-duration", 30*time.Second, "scale: the shortest time the probe's LIST rounds take at each step (more rounds on a small cluster)")
	flag.BoolVar(&so.SamePods, "same-pods", false, "scale: send every side its pods as Turnstile's PodSecurityPolicy stores them (the kubernetes.io/psp annotation and the policy's defaults), so that the sides differ in binaries only, not in the objects they hold")
	flag.IntVar(&so.Replicas, "replicas", 100, "scale: pods per Deployment")
	flag.IntVar(&so.ClientQPS, "client-qps", 200, "scale: kube-controller-manager's and kube-scheduler's --kube-api-qps (burst twice that)")
	flag.IntVar(&so.LeaseSeconds, "lease-seconds", 40, "scale: the fake nodes' lease duration (kubelet's default 40 s: renewed every 10 s)")
	flag.StringVar(&so.PodCIDR, "pod-cidr", "127.128.0.0/10", "scale: the range kwok gives pod IPs from (loopback: written in pod status only, never sent to)")
	flag.DurationVar(&so.StepTimeout, "step-timeout", 30*time.Minute, "scale: the longest one step may take")
	flag.Float64Var(&so.MinMemoryMiB, "min-memory", 3072, "scale: MiB of available memory below which no further step is attempted")
	flag.Parse()
	o.Attribute, so.Sides = splitList(*attribute), splitList(*sides)
	measure.QuietKlog()
	if *policyHeap != "" {
		size, err := scale.ParsePolicyHeapSize(*policyHeap)
		if err == nil {
			err = scale.RunPolicyHeap(size, o.Out, o.Concurrency)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if *merge != "" {
		err := fmt.Errorf("-scale and -scale-merge: one or the other")
		if *scaleSteps == "" {
			err = scale.WriteMerged(splitList(*merge), o.Out)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench-scale: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if *scaleSteps != "" {
		steps, err := scale.ParseSteps(*scaleSteps)
		if err == nil && so.Repeats < 1 {
			err = fmt.Errorf("-repeats %d: want at least 1", so.Repeats)
		}
		if err == nil && (so.Probes < 1 || so.ListProbes < 1 || so.ListFor < 0) {
			err = fmt.Errorf("-probes %d, -list-probes %d, -list-duration %s: want at least 1 round of each and no negative time", so.Probes, so.ListProbes, so.ListFor)
		}
		if err == nil {
			so.Steps, so.Out, so.Admission, so.Concurrency, so.Profile = steps, o.Out, o.Admission, o.Concurrency, o.Profile
			// Ctrl-C or SIGTERM ends the step under way, stops the
			// clusters and writes the table of what ran.
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			err = scale.Run(ctx, so)
			stop()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench-scale: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := compare.Run(o); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// splitList splits a flag's comma-separated list (-attribute, -sides,
// -scale-merge), trimmed, without empty items.
func splitList(list string) []string {
	var items []string
	for _, item := range strings.Split(list, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}
