// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package compare

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/measure"
)

// The cost guard (make test-cost, in make test and make bump's gate):
// a short run of the pods scenario that compares the apiserver's own
// counts per pod create, Turnstile over upstream, and fails above a
// limit. Counts hold still where times do not: the same tree's ratios
// stay within a fraction of a percent from run to run on two shared
// cores (docs/performance.md), so a limit can sit close to 1.
//
// same-plugins runs upstream's plugins on both sides, so any count above
// upstream's is the distribution's own (its command, its registry, the
// policy API); upstream-same adds the restored plugins, which do work of
// their own on every pod create.
var guardLimits = []struct {
	configuration string
	limit         float64
}{
	{"same-plugins", 1.02},
	{"upstream-same", 1.04},
}

// guardOptions are the guard's: three ABBA pairs of about two seconds
// each, after a two-second warm-up, with the bench's eight clients.
var guardOptions = Options{Pairs: 3, Duration: 2 * time.Second, Warmup: 2 * time.Second, Concurrency: 8, ProfileOf: "none"}

// guardCounters are the counts the guard compares.
var guardCounters = []struct {
	name  string
	value func(figure) float64
}{
	{"bytes allocated per pod create", allocBytes},
	{"objects allocated per pod create", allocObjects},
	{"etcd requests per pod create", func(f figure) float64 { return f.PerRequest.EtcdRequests }},
}

// allocBytes and allocObjects are a run's allocations per request, which
// the guard compares and its test sizes the planted regression by.
func allocBytes(f figure) float64   { return f.PerRequest.AllocBytes }
func allocObjects(f figure) float64 { return f.PerRequest.AllocObjects }

// guardCheck is one counter of one configuration against its limit.
type guardCheck struct {
	Configuration, Counter string
	// Ratio is the median of the pairs' ratios, Turnstile over upstream;
	// Low and High are the lowest and highest pair's.
	Ratio, Low, High, Limit float64
}

func (c guardCheck) passed() bool { return c.Ratio <= c.Limit }

// guardChecks judges a guard run's results.
func guardChecks(results []result) ([]guardCheck, error) {
	var checks []guardCheck
	for _, r := range results {
		limit := 0.0
		for _, l := range guardLimits {
			if l.configuration == r.Configuration {
				limit = l.limit
			}
		}
		if limit == 0 {
			return nil, fmt.Errorf("the guard has no limit for %s", r.Configuration)
		}
		if len(r.Turnstile) == 0 || len(r.Turnstile) != len(r.Upstream) {
			return nil, fmt.Errorf("%s: %d Turnstile runs and %d upstream runs: want as many of each, at least one", r.Configuration, len(r.Turnstile), len(r.Upstream))
		}
		for _, counter := range guardCounters {
			var ratios []float64
			for i := range r.Turnstile {
				t, u := counter.value(r.Turnstile[i]), counter.value(r.Upstream[i])
				if u <= 0 || r.Turnstile[i].Errors+r.Upstream[i].Errors > 0 {
					return nil, fmt.Errorf("%s, pair %d: upstream's %s is %g and the pair had %d errors: the run measured nothing (first error: %s%s)",
						r.Configuration, i, counter.name, u, r.Turnstile[i].Errors+r.Upstream[i].Errors, r.Turnstile[i].FirstError, r.Upstream[i].FirstError)
				}
				ratios = append(ratios, t/u)
			}
			lo, hi := minMax(ratios)
			checks = append(checks, guardCheck{Configuration: r.Configuration, Counter: counter.name, Ratio: measure.Median(ratios), Low: lo, High: hi, Limit: limit})
		}
	}
	return checks, nil
}

// runGuard measures the pods scenario of the configurations named (every
// guarded one if none), with binary (empty: our kube-apiserver) and extra
// arguments on the Turnstile side, and judges the results. admission is
// all-documented's AdmissionConfiguration.
func runGuard(admission, binary string, extra []string, names ...string) ([]guardCheck, []result, error) {
	admissionConfig, err := filepath.Abs(admission)
	if err != nil {
		return nil, nil, err
	}
	root, pki, err := measure.Workspace("turnstile-cost-guard-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(root)
	i := slices.IndexFunc(scenarios, func(s scenario) bool { return s.name == "pods" })
	if len(names) == 0 {
		for _, l := range guardLimits {
			names = append(names, l.configuration)
		}
	}
	var results []result
	for _, c := range configurations(admissionConfig) {
		if !slices.Contains(names, c.Name) {
			continue
		}
		if binary != "" {
			c.TurnstileBinary = binary
		}
		c.Turnstile = append(c.Turnstile, extra...)
		r, err := runScenario(guardOptions, root, pki, c, scenarios[i])
		if err != nil {
			return nil, nil, fmt.Errorf("%s / pods: %w", c.Name, err)
		}
		results = append(results, r)
	}
	checks, err := guardChecks(results)
	return checks, results, err
}

func printGuard(w io.Writer, checks []guardCheck) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "configuration\tcount\tTurnstile/upstream\tmin..max\tlimit\t\t")
	for _, c := range checks {
		verdict := "ok"
		if !c.passed() {
			verdict = "OVER"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.4f\t%.4f..%.4f\t%.2f\t%s\t\n", c.Configuration, c.Counter, c.Ratio, c.Low, c.High, c.Limit, verdict)
	}
	tw.Flush()
}
