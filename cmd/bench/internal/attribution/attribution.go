// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package attribution says where an apiserver's CPU and allocations go: by
// admission plugin (Attribute), and, against another side, what one side of
// a configuration spends per request that the other does not, function by
// function, from a CPU profile and an allocation profile of each side under
// the same scenario (AttributeSides). Both are scaled to 1,000 requests and
// written beside the report, so that `go tool pprof -diff_base` reads the
// same difference this table shows.
package attribution

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/pprof/profile"
	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/measure"
	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/plugins"
)

// PerThousand merges profiled runs of one side into one profile scaled to
// 1,000 requests.
func PerThousand(runs ...Profiles) (Profiles, error) {
	var ps []*profile.Profile
	requests := 0
	for _, r := range runs {
		ps = append(ps, r.Profile)
		requests += r.Requests
	}
	merged, err := profile.Merge(ps)
	if err != nil {
		return Profiles{}, fmt.Errorf("merging the profiles of one side: %w", err)
	}
	if requests == 0 {
		return Profiles{}, fmt.Errorf("the profiled runs made no request")
	}
	merged.Scale(1000 / float64(requests))
	return Profiles{Profile: merged, Requests: requests}, nil
}

// attributionShare is the smallest difference the table lists: 0.5% of
// upstream's total per request.
const attributionShare = 0.005

// sampleKinds are the profiles' sample types the attribution compares.
var sampleKinds = []struct{ profile, sampleType, unit string }{
	{"cpu", "cpu", "µs CPU"},
	{"allocs", "alloc_space", "bytes"},
	{"allocs", "alloc_objects", "objects"},
}

// attributionRow is one function's cost per request on each side.
type attributionRow struct {
	Function  string  `json:"function"`
	Turnstile float64 `json:"turnstile"`
	Upstream  float64 `json:"upstream"`
	// Share is Turnstile's minus upstream's, of upstream's total.
	Share float64 `json:"share"`
}

// attributionTable compares one sample type of two sides.
type attributionTable struct {
	SampleType string `json:"sampleType"`
	Unit       string `json:"unit"`
	// Turnstile and Upstream are the totals per request.
	Turnstile float64 `json:"turnstile"`
	Upstream  float64 `json:"upstream"`
	// Rows are the functions whose difference is at least
	// attributionShare of upstream's total.
	Rows []attributionRow `json:"rows"`
	// Plugins are every admission plugin's cost on each side (what the
	// samples charged to its package add up to), and what is charged to
	// none; whatever the difference.
	Plugins []attributionRow `json:"plugins"`
}

// Report is the attribution of one configuration and scenario.
type Report struct {
	Of      string  `json:"of"`
	Seconds float64 `json:"profileSeconds"`
	// Requests are the profiled runs' requests by kind of profile,
	// Turnstile's then upstream's.
	Requests map[string][2]int  `json:"requests"`
	Tables   []attributionTable `json:"tables"`
	// Files are the Profiles, by side and kind ("turnstile.cpu").
	Files map[string]string `json:"files"`
}

// profiles is one side's profiled run or runs: the CPU profile, or the
// allocations the allocation profile grew by, and the requests made.
type Profiles struct {
	Profile  *profile.Profile
	Requests int
}

// AttributeSides compares the two sides' profiles (Turnstile's first in
// each pair) and writes them into dir as <of>-<side>.<kind>.pprof.
func AttributeSides(of, dir string, d time.Duration, cpu, allocs [2]Profiles) (Report, error) {
	r := Report{Of: of, Seconds: d.Seconds(), Requests: map[string][2]int{"cpu": {cpu[0].Requests, cpu[1].Requests}, "allocs": {allocs[0].Requests, allocs[1].Requests}}, Files: map[string]string{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	base := strings.ReplaceAll(of, "/", "-")
	for kind, pair := range map[string][2]Profiles{"cpu": cpu, "allocs": allocs} {
		for i, side := range []string{"turnstile", "upstream"} {
			name := filepath.Join(dir, fmt.Sprintf("%s-%s.%s.pprof", base, side, kind))
			if err := measure.WriteProfile(pair[i].Profile, name); err != nil {
				return r, err
			}
			r.Files[side+"."+kind] = name
		}
	}
	for _, k := range sampleKinds {
		pair := allocs
		if k.profile == "cpu" {
			pair = cpu
		}
		table, err := diffProfiles(pair[0].Profile, pair[1].Profile, k.sampleType)
		if err != nil {
			return r, err
		}
		table.Unit = k.unit
		r.Tables = append(r.Tables, table)
	}
	return r, nil
}

// diffProfiles sums each profile's samples of sampleType by the function
// they are attributed to (attributedFunction), per request, and lists every
// function whose difference is at least attributionShare of upstream's
// total, largest first.
func diffProfiles(t, u *profile.Profile, sampleType string) (attributionTable, error) {
	tSums, tTotal, err := sumByFunction(t, sampleType)
	if err != nil {
		return attributionTable{}, fmt.Errorf("Turnstile's profile: %w", err)
	}
	uSums, uTotal, err := sumByFunction(u, sampleType)
	if err != nil {
		return attributionTable{}, fmt.Errorf("upstream's profile: %w", err)
	}
	// Scaled to 1,000 requests; nanoseconds of CPU become microseconds.
	scale := 1.0 / 1000
	if sampleType == "cpu" {
		scale /= 1000
	}
	table := attributionTable{SampleType: sampleType, Turnstile: tTotal * scale, Upstream: uTotal * scale}
	if uTotal <= 0 {
		return table, fmt.Errorf("upstream's profile has no %s", sampleType)
	}
	table.Rows = differences(tSums, uSums, uTotal, scale, attributionShare)
	table.Plugins = differences(byPlugin(tSums), byPlugin(uSums), uTotal, scale, 0)
	return table, nil
}

// differences lists the keys of t and u whose difference is at least
// least of upstream's total, largest first.
func differences(t, u map[string]float64, uTotal, scale, least float64) []attributionRow {
	keys := map[string]bool{}
	for k := range t {
		keys[k] = true
	}
	for k := range u {
		keys[k] = true
	}
	var rows []attributionRow
	for k := range keys {
		share := (t[k] - u[k]) / uTotal
		if math.Abs(share) >= least {
			rows = append(rows, attributionRow{Function: k, Turnstile: t[k] * scale, Upstream: u[k] * scale, Share: share})
		}
	}
	slices.SortFunc(rows, func(a, b attributionRow) int {
		if c := -compareFloat(math.Abs(a.Share), math.Abs(b.Share)); c != 0 {
			return c
		}
		return strings.Compare(a.Function, b.Function)
	})
	return rows
}

// notInPlugin is what byPlugin charges the samples of no plugin to.
const notInPlugin = "(no admission plugin)"

// byPlugin adds up sums by function into sums by admission plugin.
func byPlugin(sums map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for function, v := range sums {
		plugin, ok := plugins.Packages[plugins.PackageOf(function)]
		if !ok {
			plugin = notInPlugin
		}
		out[plugin] += v
	}
	return out
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func sumByFunction(p *profile.Profile, sampleType string) (map[string]float64, float64, error) {
	i := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool { return t.Type == sampleType })
	if i < 0 {
		return nil, 0, fmt.Errorf("no %s samples", sampleType)
	}
	sums := map[string]float64{}
	var total float64
	for _, s := range p.Sample {
		v := float64(s.Value[i])
		sums[attributedFunction(s)] += v
		total += v
	}
	return sums, total, nil
}

// attributedFunction is the function a sample is charged to: the innermost
// frame of an admission plugin's package (ours or upstream's), which is why
// the work ran; else the innermost frame, the work itself, but for the
// garbage collector's background workers, charged as one (what they cost
// follows from what was allocated). A frame of Turnstile's own wrappers
// (the chain's decorator, the handler in front of the policy API) does not
// claim what runs under it: upstream's side has no such frame, and the
// two sides' rows would not compare.
func attributedFunction(s *profile.Sample) string {
	leaf := ""
	for _, loc := range s.Location {
		// A location's lines run from the innermost inlined function out.
		for _, line := range loc.Line {
			if line.Function == nil {
				continue
			}
			name := line.Function.Name
			if leaf == "" {
				leaf = name
			}
			if _, ok := plugins.Packages[plugins.PackageOf(name)]; ok {
				return name
			}
			if name == "runtime.gcBgMarkWorker" {
				return "(the garbage collector's background work)"
			}
		}
	}
	if leaf == "" {
		return "(unknown)"
	}
	return leaf
}

func Print(w io.Writer, r Report) {
	fmt.Fprintf(w, "\n%s: what Turnstile spends per request that upstream does not, from profiles of each side: CPU of two %.0f s runs on the timed servers (%d and %d requests), allocations of one run on servers sampling every %d bytes (%d and %d).\n",
		r.Of, r.Seconds, r.Requests["cpu"][0], r.Requests["cpu"][1], ProfiledMemRate, r.Requests["allocs"][0], r.Requests["allocs"][1])
	fmt.Fprintf(w, "A sample is charged to the innermost frame of an admission plugin, else to its own function; rows of at least %.1f%% of upstream's total.\n", 100*attributionShare)
	fmt.Fprintf(w, "The same, by hand: go tool pprof -top -diff_base %s %s (and -sample_index=alloc_space with %s, %s); profiles per 1,000 requests.\n",
		r.Files["upstream.cpu"], r.Files["turnstile.cpu"], r.Files["upstream.allocs"], r.Files["turnstile.allocs"])
	for _, t := range r.Tables {
		fmt.Fprintf(w, "\n%s per request: Turnstile %.1f, upstream %.1f (%+.2f%%)\n", t.Unit, t.Turnstile, t.Upstream, 100*(t.Turnstile-t.Upstream)/t.Upstream)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "admission plugin\tTurnstile\tupstream\tdifference, of upstream's total\t")
		for _, row := range t.Plugins {
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%+.2f%%\t\n", row.Function, row.Turnstile, row.Upstream, 100*row.Share)
		}
		fmt.Fprintln(tw, "\t\t\t\t")
		fmt.Fprintf(tw, "function, of %.1f%% or more\tTurnstile\tupstream\tdifference, of upstream's total\t\n", 100*attributionShare)
		for _, row := range t.Rows {
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%+.2f%%\t\n", row.Function, row.Turnstile, row.Upstream, 100*row.Share)
		}
		if len(t.Rows) == 0 {
			fmt.Fprintln(tw, "(none)\t\t\t\t")
		}
		tw.Flush()
	}
}

// ProfiledMemRate is the apiservers' allocation sampling rate for the
// attribution's allocation profiles (GODEBUG=memprofilerate): a sample
// every 4 KiB allocated instead of Go's default 512 KiB, about 85 samples
// per pod create, so that a function's share of the objects allocated is
// counted, not guessed from a few samples. Sampling that often costs CPU
// where code allocates, so these servers are started for the allocation
// profiles alone; the CPU profiles are taken on the timed pairs' servers.
const ProfiledMemRate = 4096
