// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package compare runs Turnstile's kube-apiserver and vanilla upstream
// kube-apiserver (built from the same module graph) alternately under the same
// load and reports the ratio of every figure, so that a user can see what
// the distribution costs.
//
// For each configuration and scenario it starts, for each binary, a fresh
// etcd and an apiserver with identical flags, warms both up, then runs
// -pairs pairs in ABBA order (Turnstile first in even pairs, upstream first
// in odd ones). Each run gets a fresh namespace. The load generator runs in
// this process. The noise-floor configuration runs upstream on both sides.
package compare

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/attribution"
	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/measure"
	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/plugins"
	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/policies"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// configuration is what the two sides run: flags for each, and for the
// noise floor, upstream's binary on the Turnstile side too.
type configuration struct {
	Name, Description   string
	Turnstile, Upstream []string
	TurnstileBinary     string // empty: our kube-apiserver
	// TurnstileSetup, when set, creates what the Turnstile side's plugins
	// need (objects of APIs that upstream does not serve) once, before the
	// warm-up.
	TurnstileSetup func(context.Context, *measure.Server) error
}

func configurations(admissionConfig string) []configuration {
	return []configuration{
		{
			Name:            "noise-floor",
			Description:     "upstream against itself: the run-to-run noise any ratio must beat",
			TurnstileBinary: "kube-apiserver-upstream",
		},
		{
			Name:        "same-plugins",
			Description: "both binaries with upstream's default admission plugins: the cost of being a distribution",
		},
		{
			Name:        "all-documented",
			Description: "Turnstile with every documented controller that can run together, upstream with its defaults",
			Turnstile: []string{
				"--enable-admission-plugins=" + strings.Join(plugins.AllDocumented, ","),
				"--admission-control-config-file=" + admissionConfig,
			},
			TurnstileSetup: policies.Setup,
		},
		{
			Name:        "upstream-same",
			Description: "all-documented against upstream with the same upstream plugins, configured the same: the cost of what we wrote",
			Turnstile: []string{
				"--enable-admission-plugins=" + strings.Join(plugins.AllDocumented, ","),
				"--admission-control-config-file=" + admissionConfig,
			},
			TurnstileSetup: policies.Setup,
			// Upstream's loader reads only the entries of the plugins it runs,
			// so the same file configures it.
			Upstream: []string{
				"--enable-admission-plugins=" + strings.Join(plugins.UpstreamOnly(plugins.AllDocumented), ","),
				"--admission-control-config-file=" + admissionConfig,
			},
		},
	}
}

type Options struct {
	Pairs       int
	Duration    time.Duration
	Warmup      time.Duration
	Concurrency int
	Out         string
	Admission   string
	Only        string
	Micro       string
	Profile     time.Duration
	ProfileOf   string
	Attribute   []string
}

// report is what the JSON file holds.
type report struct {
	Started     time.Time `json:"started"`
	Machine     string    `json:"machine"`
	Pairs       int       `json:"pairs"`
	Duration    string    `json:"duration"`
	Concurrency int       `json:"concurrency"`
	Results     []result  `json:"results"`
	// Micro is the `go test -bench` output for our plugins and registry.
	Micro string `json:"micro,omitempty"`
}

type result struct {
	Configuration string   `json:"configuration"`
	Scenario      string   `json:"scenario"`
	Turnstile     []figure `json:"turnstile"`
	Upstream      []figure `json:"upstream"`
	// Profile attributes the Turnstile side's CPU to admission plugins,
	// from one more run under a CPU profile (all-documented pods only).
	Profile *attribution.ProfileReport `json:"profile,omitempty"`
	// Attribution is what Turnstile spends that upstream does not, by
	// function (-attribute).
	Attribution *attribution.Report `json:"attribution,omitempty"`
	// cpuProfiles are the attribution's CPU attribution.Profiles, of the timed
	// servers (Turnstile's, upstream's).
	cpuProfiles [2]attribution.Profiles
}

// attributed says whether -attribute names the configuration and scenario.
func attributed(o Options, c configuration, s scenario) bool {
	return slices.Contains(o.Attribute, c.Name+"/"+s.name)
}

// profiled says whether a result gets a CPU profile: the one -profile
// names (by default the pod creates with every documented controller on,
// where the plugins do the most).
func profiled(o Options, c configuration, s scenario) bool {
	return o.ProfileOf == c.Name+"/"+s.name
}

func Run(o Options) error {
	admissionConfig, err := filepath.Abs(o.Admission)
	if err != nil {
		return err
	}
	root, pki, err := measure.Workspace("turnstile-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	rep := report{Started: time.Now().UTC(), Machine: measure.Machine(), Pairs: o.Pairs, Duration: o.Duration.String(), Concurrency: o.Concurrency}
	for _, c := range configurations(admissionConfig) {
		for _, s := range scenarios {
			if o.Only != "" && !strings.Contains(c.Name+"/"+s.name, o.Only) {
				continue
			}
			fmt.Fprintf(os.Stderr, "bench: %s / %s\n", c.Name, s.name)
			r, err := runScenario(o, root, pki, c, s)
			if err == nil && attributed(o, c, s) {
				r.Attribution, err = attributeAgainstUpstream(o, root, pki, c, s, r.cpuProfiles)
			}
			if err != nil {
				return fmt.Errorf("%s / %s: %w", c.Name, s.name, err)
			}
			rep.Results = append(rep.Results, r)
		}
	}
	if o.Micro != "" {
		data, err := os.ReadFile(o.Micro)
		if err != nil {
			return err
		}
		rep.Micro = string(data)
	}
	printTable(os.Stdout, rep)
	for _, r := range rep.Results {
		if r.Profile != nil {
			attribution.PrintProfile(os.Stdout, *r.Profile)
		}
	}
	for _, r := range rep.Results {
		if r.Attribution != nil {
			attribution.Print(os.Stdout, *r.Attribution)
		}
	}
	if rep.Micro != "" {
		fmt.Printf("\nMicrobenchmarks (go test -bench):\n%s", rep.Micro)
	}
	return writeJSON(o.Out, rep)
}

// runScenario runs one scenario of one configuration: both servers fresh, then
// alternating runs.
func runScenario(o Options, root string, pki *framework.PKI, c configuration, s scenario) (result, error) {
	ctx := context.Background()
	t, u, err := startSides(ctx, filepath.Join(root, c.Name+"-"+s.name), pki, c, "")
	if err != nil {
		return result{}, err
	}
	defer t.Stop()
	defer u.Stop()

	steps, err := warmUp(ctx, o, s, t, u)
	if err != nil {
		return result{}, err
	}
	r := result{Configuration: c.Name, Scenario: s.name}
	type side struct {
		srv *measure.Server
		out *[]figure
	}
	for i := 0; i < o.Pairs; i++ {
		// ABBA: which side goes first alternates, so an effect of position
		// within a pair (the other server's leftover work, caches) cancels.
		order := []side{{t, &r.Turnstile}, {u, &r.Upstream}}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, side := range order {
			f, err := load(ctx, side.srv, s, o.Concurrency, o.Duration, steps, fmt.Sprintf("run-%d", i))
			if err != nil {
				return result{}, err
			}
			*side.out = append(*side.out, f)
		}
	}
	if profiled(o, c, s) {
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return result{}, err
		}
		p, err := profiledLoad(ctx, t, s, o.Concurrency, o.Profile, filepath.Join(o.Out, c.Name+"-"+s.name+".pprof"))
		if err != nil {
			return result{}, err
		}
		p.Of = c.Name + "/" + s.name
		r.Profile = &p
	}
	if attributed(o, c, s) {
		if r.cpuProfiles, err = cpuProfiles(ctx, o, s, t, u); err != nil {
			return result{}, err
		}
	}
	return r, nil
}

// startSides starts a configuration's two servers, fresh, in dir, with
// godebug as each apiserver's GODEBUG (none if empty), and creates what
// the Turnstile side's plugins need.
func startSides(ctx context.Context, dir string, pki *framework.PKI, c configuration, godebug string) (t, u *measure.Server, err error) {
	t, err = measure.Start(filepath.Join(dir, "turnstile"), pki, c.TurnstileBinary, c.Turnstile, godebug)
	if err != nil {
		return nil, nil, err
	}
	if c.TurnstileSetup != nil {
		if err := c.TurnstileSetup(ctx, t); err != nil {
			t.Stop()
			return nil, nil, fmt.Errorf("setup: %w", err)
		}
	}
	u, err = measure.Start(filepath.Join(dir, "upstream"), pki, "kube-apiserver-upstream", c.Upstream, godebug)
	if err != nil {
		t.Stop()
		return nil, nil, err
	}
	return t, u, nil
}

// warmUp runs the scenario on each server for -warmup, unmeasured, and
// returns the number of steps every measured run takes: what the slower
// side did in -duration at its warm-up's pace.
func warmUp(ctx context.Context, o Options, s scenario, servers ...*measure.Server) (int64, error) {
	rate := -1.0
	for _, srv := range servers {
		f, err := load(ctx, srv, s, o.Concurrency, o.Warmup, 0, "warmup")
		if err != nil {
			return 0, err
		}
		if r := float64(f.Steps) / o.Warmup.Seconds(); rate < 0 || r < rate {
			rate = r
		}
	}
	return max(int64(rate*o.Duration.Seconds()), int64(o.Concurrency)), nil
}

func writeJSON(dir string, rep report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	name := filepath.Join(dir, "bench-"+rep.Started.Format("20060102T150405Z")+".json")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		return err
	}
	fmt.Printf("\nJSON: %s\n", name)
	return os.WriteFile(filepath.Join(dir, "latest.json"), data, 0o644)
}

// metric reads one figure from a run; lowerIsBetter only labels the table.
type metric struct {
	name  string
	unit  string
	value func(figure) float64
}

var metrics = []metric{
	{"throughput", "req/s", func(f figure) float64 { return f.Throughput }},
	{"p50", "ms", func(f figure) float64 { return f.P50 }},
	{"p90", "ms", func(f figure) float64 { return f.P90 }},
	{"p99", "ms", func(f figure) float64 { return f.P99 }},
	{"cpu", "s/1k req", func(f figure) float64 { return f.CPUPer1k }},
	{"peak rss", "MiB", func(f figure) float64 { return f.PeakRSSMiB }},
	{"allocated", "KiB/req", func(f figure) float64 { return f.PerRequest.AllocBytes / 1024 }},
	{"allocated", "objects/req", func(f figure) float64 { return f.PerRequest.AllocObjects }},
	{"etcd", "requests/req", func(f figure) float64 { return f.PerRequest.EtcdRequests }},
	{"live heap", "MiB", func(f figure) float64 { return f.LiveHeapMiB }},
	{"goroutines", "", func(f figure) float64 { return f.PerRequest.Goroutines }},
	{"errors", "", func(f figure) float64 { return float64(f.Errors) }},
}

func printTable(w *os.File, rep report) {
	fmt.Fprintf(w, "\nTurnstile vs upstream %s: %d pairs of %s runs, %d clients, on %s\n", measure.KubernetesVersion(), rep.Pairs, rep.Duration, rep.Concurrency, rep.Machine)
	fmt.Fprintf(w, "Medians over the runs; ratio = Turnstile/upstream, median of the per-pair ratios (min..max across pairs).\n")
	fmt.Fprintf(w, "noise-floor runs upstream on both sides: its ratios show how far 1.0 moves by chance.\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "configuration\tscenario\tmetric\tTurnstile\tupstream\tratio\tmin..max\t")
	for _, r := range rep.Results {
		for _, m := range metrics {
			ts, us := values(r.Turnstile, m), values(r.Upstream, m)
			var ratios []float64
			for i := range ts {
				if us[i] != 0 {
					ratios = append(ratios, ts[i]/us[i])
				}
			}
			ratio, span := "-", "-"
			if len(ratios) > 0 {
				ratio = fmt.Sprintf("%.3f", measure.Median(ratios))
				lo, hi := minMax(ratios)
				span = fmt.Sprintf("%.3f..%.3f", lo, hi)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s %s\t%.2f\t%.2f\t%s\t%s\t\n", r.Configuration, r.Scenario, m.name, m.unit, measure.Median(ts), measure.Median(us), ratio, span)
		}
	}
	tw.Flush()
}

func values(fs []figure, m metric) []float64 {
	out := make([]float64, len(fs))
	for i, f := range fs {
		out[i] = m.value(f)
	}
	return out
}

func minMax(xs []float64) (float64, float64) {
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}
