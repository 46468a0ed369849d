// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package attribution

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/pprof/profile"
	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/plugins"
)

// PluginCost is one row of the per-plugin table.
type PluginCost struct {
	Plugin  string  `json:"plugin"`
	Seconds float64 `json:"cpuSeconds"`
	// Share is of the apiserver's whole CPU during the profile.
	Share float64 `json:"share"`
	// PerCreate is CPU microseconds per pod created during the profile.
	PerCreate float64 `json:"cpuMicrosecondsPerCreate"`
}

// ProfileReport is the CPU profile of one run (all-documented pods unless
// -profile says otherwise).
type ProfileReport struct {
	Of      string       `json:"of"`
	Seconds float64      `json:"profileSeconds"`
	CPU     float64      `json:"cpuSeconds"`
	Creates int          `json:"podCreates"`
	Chain   PluginCost   `json:"admissionChain"`
	Plugins []PluginCost `json:"plugins"`
	// File is the raw profile, for `go tool pprof`.
	File string `json:"file,omitempty"`
}

// attribute sums the profile's CPU time per plugin package, counting a
// sample once per plugin however often the plugin is on its stack.
func Attribute(p *profile.Profile, creates int, d time.Duration) (ProfileReport, error) {
	cpu := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool { return t.Type == "cpu" && t.Unit == "nanoseconds" })
	if cpu < 0 {
		return ProfileReport{}, fmt.Errorf("the profile has no cpu/nanoseconds samples")
	}
	var total, chain float64
	per := map[string]float64{}
	for _, sample := range p.Sample {
		v := float64(sample.Value[cpu]) / 1e9
		total += v
		seen := map[string]bool{}
		for _, loc := range sample.Location {
			for _, line := range loc.Line {
				pkg := plugins.PackageOf(line.Function.Name)
				if plugin, ok := plugins.Packages[pkg]; ok && !seen[plugin] {
					seen[plugin] = true
					per[plugin] += v
				}
				if pkg == admissionChain && !seen[admissionChain] {
					seen[admissionChain] = true
					chain += v
				}
			}
		}
	}
	cost := func(name string, seconds float64) PluginCost {
		c := PluginCost{Plugin: name, Seconds: seconds}
		if total > 0 {
			c.Share = seconds / total
		}
		if creates > 0 {
			c.PerCreate = seconds / float64(creates) * 1e6
		}
		return c
	}
	r := ProfileReport{Seconds: d.Seconds(), CPU: total, Creates: creates, Chain: cost("the whole admission chain", chain)}
	for plugin, seconds := range per {
		r.Plugins = append(r.Plugins, cost(plugin, seconds))
	}
	slices.SortFunc(r.Plugins, func(a, b PluginCost) int {
		if a.Seconds != b.Seconds {
			if a.Seconds > b.Seconds {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Plugin, b.Plugin)
	})
	return r, nil
}

// shares is the admission chain's and PodSecurityPolicy's share of the
// profile's CPU, as the scale table prints them.
func (r *ProfileReport) Shares() string {
	if r == nil {
		return "-"
	}
	psp := 0.0
	for _, p := range r.Plugins {
		if p.Plugin == "PodSecurityPolicy" {
			psp = p.Share
		}
	}
	return fmt.Sprintf("%.1f / %.1f", 100*r.Chain.Share, 100*psp)
}

func PrintProfile(w io.Writer, r ProfileReport) {
	fmt.Fprintf(w, "\n%s, Turnstile: CPU profile of %.0f s, %.2f CPU-seconds, %d requests.\n", r.Of, r.Seconds, r.CPU, r.Creates)
	fmt.Fprintf(w, "A plugin's CPU is every sample with its package on the stack (what it calls included). Profile: %s\n\n", r.File)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "plugin\tCPU share\tµs CPU per request\t")
	for _, c := range append([]PluginCost{r.Chain}, r.Plugins...) {
		fmt.Fprintf(tw, "%s\t%.2f%%\t%.1f\t\n", c.Plugin, c.Share*100, c.PerCreate)
	}
	tw.Flush()
}

// admissionChain is the package whose frames hold every plugin's work.
const admissionChain = "k8s.io/apiserver/pkg/admission"
