// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/attribution"
	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/measure"
	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/policies"
)

// scaleFigure is what one side measured at one step.
type scaleFigure struct {
	Side string    `json:"side"`
	Step scaleStep `json:"step"`
	// Repeat is the turn, from 1, in which the side grew to Step.
	Repeat int `json:"repeat"`
	// Reached is false when the step could not be made; Reason says why.
	Reached bool   `json:"reached"`
	Reason  string `json:"reason,omitempty"`
	// RolloutSeconds is from the step's first Deployment create until
	// every workload pod is available.
	RolloutSeconds float64 `json:"rolloutSeconds"`
	// RolloutRequests and CPUPerRequestMs: the apiserver's requests
	// (apiserver_request_total) and CPU per request while the step grew
	// the cluster and its Deployments rolled out.
	RolloutRequests float64            `json:"rolloutRequests"`
	CPUPerRequestMs float64            `json:"cpuPerRequestMs"`
	Latency         map[string]latency `json:"latency,omitempty"`
	RSSMiB          float64            `json:"rssMiB"`
	PeakRSSMiB      float64            `json:"peakRssMiB"`
	// LiveHeapMiB is the heap in use after a garbage collection, once
	// the step is probed: the part of RSS that is neither garbage waiting
	// for the collector nor memory the runtime has yet to return.
	LiveHeapMiB float64 `json:"liveHeapMiB"`
	HeapProfile string  `json:"heapProfile,omitempty"`
	// Profile is a CPU profile of the rollout's first seconds, attributed
	// to admission plugins; its File is the raw profile.
	Profile *attribution.ProfileReport `json:"profile,omitempty"`
	// SettleSeconds is how long the apiserver's CPU kept falling after
	// the rollout, before the probe; BackgroundCores is its CPU, in
	// cores, over the last window before the probe: what the controllers
	// and kwok's heartbeats cost while the probe measures.
	SettleSeconds   float64 `json:"settleSeconds"`
	BackgroundCores float64 `json:"backgroundCores"`
	// BackgroundProfile is a CPU profile of settleWindow once settled,
	// before the probe: where the background cores go.
	BackgroundProfile string `json:"backgroundProfile,omitempty"`
	// EtcdFsyncMs and EtcdCommitMs are etcd's mean WAL fsync and backend
	// commit while the probe ran (etcdDisk): the disk's part in the
	// probe's write latencies, which is not the apiserver's.
	EtcdFsyncMs  float64 `json:"etcdFsyncMs"`
	EtcdCommitMs float64 `json:"etcdCommitMs"`
	// ProbeMachineBusy is the share of the machine's CPUs busy while the
	// probe ran, and ProbeAPIServerCores the apiserver's part, in cores:
	// at 30,000 pods the writes queue for CPU that the apiserver shares
	// with etcd, kwok and the controllers.
	ProbeMachineBusy    float64 `json:"probeMachineBusy"`
	ProbeAPIServerCores float64 `json:"probeApiserverCores"`
	// ProbeCPUPerRequestMs is the apiserver's CPU per request it answered
	// while the probe ran, the background's requests included: with equal
	// cores, a side that answers fewer requests spends more on each.
	ProbeCPUPerRequestMs float64 `json:"probeCpuPerRequestMs"`
	// AllocPerRequestKiB and ProbeAllocPerRequestKiB are the heap bytes
	// the apiserver allocated per request during the rollout and the
	// probe, and ProbeGCShare its garbage collector's share of its CPU
	// during the probe: on a heap of a gigabyte a collection takes seconds
	// of CPU, and what a side allocates decides how often one comes.
	AllocPerRequestKiB      float64 `json:"allocPerRequestKiB"`
	ProbeAllocPerRequestKiB float64 `json:"probeAllocPerRequestKiB"`
	ProbeGCShare            float64 `json:"probeGcShare"`
	// ProbeProfile is a CPU profile of the probe's first probeProfileFor,
	// its writes on a large cluster: where the apiserver's cores go while
	// the write latencies are measured.
	ProbeProfile *attribution.ProfileReport `json:"probeProfile,omitempty"`
}

type scaleReport struct {
	Started time.Time     `json:"started"`
	Machine string        `json:"machine"`
	Sides   []scaleSide   `json:"sides"`
	Steps   []scaleStep   `json:"steps"`
	Figures []scaleFigure `json:"figures"`
	// SamePods says every side was sent its pods as Turnstile's
	// PodSecurityPolicy stores them (-same-pods): such a run compares the
	// binaries holding the same objects, and does not merge with the others.
	SamePods bool `json:"samePods,omitempty"`
	// Summary and Verdicts are written with the report: Figures by side
	// and step, and whether each side is within tolerance of the baseline.
	Summary  []scaleSummary `json:"summary,omitempty"`
	Verdicts []scaleVerdict `json:"verdicts,omitempty"`
}

// scaleOps are the probe's operations in the order of the table.
var scaleOps = []string{opPodCreate, opBinding, opPodStatus, opVolumeCreate, opListPodsNS, opListPodsPage, opListNodes}

// tableHeader writes a Markdown table's header: columns, then a column per
// probe operation named with suffix; the first column left-aligned, the
// figures right-aligned.
func tableHeader(w io.Writer, columns []string, suffix string) {
	fmt.Fprintf(w, "| %s |", strings.Join(columns, " | "))
	for _, op := range scaleOps {
		fmt.Fprintf(w, " %s %s |", op, suffix)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---:|", len(columns)-1+len(scaleOps)))
}

// printScaleTable prints every turn's figures, then the report's summary
// and verdicts (writeScaleReport fills them).
func printScaleTable(w io.Writer, rep scaleReport) {
	fmt.Fprintln(w)
	if rep.SamePods {
		fmt.Fprintf(w, "Every side was sent its pods as Turnstile's PodSecurityPolicy stores them (-same-pods: the %s annotation, no privilege escalation, every capability dropped).\n\n", policies.Annotation)
	}
	tableHeader(w, []string{"side", "turn", "nodes", "pods", "policies", "rules", "rollout s", "CPU ms/req", "alloc KiB/req", "RSS MiB", "live heap MiB", "admission / PSP % of CPU", "settle s / cores", "etcd fsync / commit ms", "probe: busy % / apiserver cores / ms/req", "probe: GC % / alloc KiB/req"}, "p50/p99 ms")
	for _, f := range rep.Figures {
		s := f.Step
		if !f.Reached {
			fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | not reached: %s |\n", f.Side, f.Repeat, s.Nodes, s.Pods, s.Policies, s.VolumeRules, f.Reason)
			continue
		}
		disk, busy, alloc, gc := "-", "-", "-", "-" // not measured: a merged run from before these columns
		if f.EtcdFsyncMs > 0 {
			disk = fmt.Sprintf("%.1f / %.1f", f.EtcdFsyncMs, f.EtcdCommitMs)
		}
		if f.ProbeMachineBusy > 0 {
			busy = fmt.Sprintf("%.0f / %.2f", 100*f.ProbeMachineBusy, f.ProbeAPIServerCores)
		}
		if f.ProbeCPUPerRequestMs > 0 {
			busy += fmt.Sprintf(" / %.2f", f.ProbeCPUPerRequestMs)
		}
		if f.AllocPerRequestKiB > 0 {
			alloc = fmt.Sprintf("%.0f", f.AllocPerRequestKiB)
			gc = fmt.Sprintf("%.0f / %.0f", 100*f.ProbeGCShare, f.ProbeAllocPerRequestKiB)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %.0f | %.2f | %s | %.0f | %.0f | %s | %.0f / %.2f | %s | %s | %s |", f.Side, f.Repeat, s.Nodes, s.Pods, s.Policies, s.VolumeRules, f.RolloutSeconds, f.CPUPerRequestMs, alloc, f.RSSMiB, f.LiveHeapMiB, f.Profile.Shares(), f.SettleSeconds, f.BackgroundCores, disk, busy, gc)
		for _, op := range scaleOps {
			l := f.Latency[op]
			fmt.Fprintf(w, " %.1f / %.1f |", l.P50, l.P99)
		}
		fmt.Fprintln(w)
	}
	printSummaryTable(w, rep.Summary)
	printVerdictTable(w, rep.Verdicts)
}

// spread is one measure over the turns that reached a step.
type spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// spreadOf is the median and range of values; of none, the zero spread
// (printed as not measured).
func spreadOf(values []float64) spread {
	if len(values) == 0 {
		return spread{}
	}
	return spread{Median: measure.Median(values), Min: slices.Min(values), Max: slices.Max(values)}
}

// scaleSummary is one side at one step over every turn that reached it.
// A single run's p99 at these sizes moves by more than 10% from run to
// run of the same binary, so comparisons are between medians.
type scaleSummary struct {
	Side  string    `json:"side"`
	Step  scaleStep `json:"step"`
	Turns int       `json:"turns"`
	// ProbeRounds is the write rounds of each turn's probe: a merge
	// holds a step to one count, and steps may differ.
	ProbeRounds     int    `json:"probeRounds"`
	RolloutSeconds  spread `json:"rolloutSeconds"`
	CPUPerRequestMs spread `json:"cpuPerRequestMs"`
	RSSMiB          spread `json:"rssMiB"`
	EtcdFsyncMs     spread `json:"etcdFsyncMs"`
	// ProbeBusy and ProbeCPUPerRequestMs: the machine's busy share and
	// the apiserver's CPU per request while the probe ran.
	ProbeBusy            spread `json:"probeBusy"`
	ProbeCPUPerRequestMs spread `json:"probeCpuPerRequestMs"`
	// ProbeGCShare and ProbeAllocPerRequestKiB: the garbage collector's
	// share of the apiserver's CPU and its allocation per request then.
	ProbeGCShare            spread            `json:"probeGcShare"`
	ProbeAllocPerRequestKiB spread            `json:"probeAllocPerRequestKiB"`
	P99                     map[string]spread `json:"p99Ms"`
}

// summarize gathers the figures of each side and step, sides in the
// report's order and steps in the run's; a step no turn reached has none.
func summarize(rep scaleReport) []scaleSummary {
	var out []scaleSummary
	for _, side := range rep.Sides {
		for _, step := range rep.Steps {
			turns := reachedTurns(rep, side.Name, step)
			if len(turns) == 0 {
				continue
			}
			of := func(value func(scaleFigure) float64) spread { return spreadOf(valuesOf(turns, value)) }
			s := scaleSummary{Side: side.Name, Step: step, Turns: len(turns), ProbeRounds: probeRounds(turns[0]),
				RolloutSeconds:          of(func(f scaleFigure) float64 { return f.RolloutSeconds }),
				CPUPerRequestMs:         of(func(f scaleFigure) float64 { return f.CPUPerRequestMs }),
				RSSMiB:                  of(rssOf),
				EtcdFsyncMs:             of(func(f scaleFigure) float64 { return f.EtcdFsyncMs }),
				ProbeBusy:               of(func(f scaleFigure) float64 { return f.ProbeMachineBusy }),
				ProbeCPUPerRequestMs:    of(func(f scaleFigure) float64 { return f.ProbeCPUPerRequestMs }),
				ProbeGCShare:            of(func(f scaleFigure) float64 { return f.ProbeGCShare }),
				ProbeAllocPerRequestKiB: of(func(f scaleFigure) float64 { return f.ProbeAllocPerRequestKiB }),
				P99:                     map[string]spread{}}
			for _, op := range scaleOps {
				s.P99[op] = of(p99Of(op))
			}
			out = append(out, s)
		}
	}
	return out
}

// reachedTurns is the figures of side's turns that reached step.
func reachedTurns(rep scaleReport, side string, step scaleStep) []scaleFigure {
	var turns []scaleFigure
	for _, f := range rep.Figures {
		if f.Side == side && f.Step == step && f.Reached {
			turns = append(turns, f)
		}
	}
	return turns
}

// valuesOf is one measure of each turn. A turn merged from a run older
// than the measure has zero there and is left out: the values are what
// the turns that have it measured.
func valuesOf(turns []scaleFigure, value func(scaleFigure) float64) []float64 {
	var values []float64
	for _, f := range turns {
		if v := value(f); v > 0 {
			values = append(values, v)
		}
	}
	return values
}

func rssOf(f scaleFigure) float64 { return f.RSSMiB }

func p99Of(op string) func(scaleFigure) float64 {
	return func(f scaleFigure) float64 { return f.Latency[op].P99 }
}

// baseline is the side every other is compared with: upstream with the
// same upstream plugins, so that a ratio is the cost of what Turnstile
// adds.
const baseline = "upstream-same"

// printSummaryTable prints the medians over the turns, their range, and
// each side's ratio to the baseline's median at the same step.
func printSummaryTable(w io.Writer, summaries []scaleSummary) {
	base := map[scaleStep]scaleSummary{}
	for _, s := range summaries {
		if s.Side == baseline {
			base[s.Step] = s
		}
	}
	cell := func(v spread, of float64, format string) string {
		if v == (spread{}) {
			return "-" // not measured: merged runs from before the column
		}
		text := fmt.Sprintf(format+" ("+format+"–"+format+")", v.Median, v.Min, v.Max)
		if of > 0 {
			text += fmt.Sprintf(" ×%.2f", v.Median/of)
		}
		return text
	}
	fmt.Fprintf(w, "\nMedian (lowest–highest) over the turns that reached each step; ×: the median's ratio to %s's at the same step.\n\n", baseline)
	tableHeader(w, []string{"side", "pods", "turns", "write rounds", "rollout s", "CPU ms/req", "RSS MiB", "etcd fsync ms", "probe: busy %", "probe: CPU ms/req", "probe: GC %", "probe: alloc KiB/req"}, "p99 ms")
	for _, s := range summaries {
		b, compared := base[s.Step]
		if s.Side == baseline {
			compared = false
		}
		of := func(v spread) float64 {
			if compared {
				return v.Median
			}
			return 0
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |", s.Side, s.Step.Pods, s.Turns, s.ProbeRounds,
			cell(s.RolloutSeconds, of(b.RolloutSeconds), "%.0f"), cell(s.CPUPerRequestMs, of(b.CPUPerRequestMs), "%.2f"), cell(s.RSSMiB, of(b.RSSMiB), "%.0f"),
			cell(s.EtcdFsyncMs, of(b.EtcdFsyncMs), "%.1f"), cell(percent(s.ProbeBusy), of(percent(b.ProbeBusy)), "%.0f"), cell(s.ProbeCPUPerRequestMs, of(b.ProbeCPUPerRequestMs), "%.2f"),
			cell(percent(s.ProbeGCShare), of(percent(b.ProbeGCShare)), "%.0f"), cell(s.ProbeAllocPerRequestKiB, of(b.ProbeAllocPerRequestKiB), "%.0f"))
		for _, op := range scaleOps {
			fmt.Fprintf(w, " %s |", cell(s.P99[op], of(b.P99[op]), "%.0f"))
		}
		fmt.Fprintln(w)
	}
}

// percent is a spread of shares in percent.
func percent(v spread) spread {
	return spread{Median: 100 * v.Median, Min: 100 * v.Min, Max: 100 * v.Max}
}

// writeScaleReport writes the tables (table.md, and to echo unless nil),
// the raw figures with their summary and verdicts (latest.json) and the
// plot's panels (plot.json, for test/scale/plot): each metric's median over
// the turns against the pods in the cluster, one line per side. The summary
// and verdicts are computed here, once a write.
func writeScaleReport(dir string, rep scaleReport, echo io.Writer) error {
	rep.Summary, rep.Verdicts = summarize(rep), verdicts(rep)
	var table strings.Builder
	printScaleTable(&table, rep)
	if echo != nil {
		fmt.Fprint(echo, table.String())
	}
	if err := os.WriteFile(filepath.Join(dir, "table.md"), []byte(table.String()), 0o644); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "latest.json"), data, 0o644); err != nil {
		return err
	}
	type series struct {
		Name   string       `json:"name"`
		Points [][2]float64 `json:"points"`
	}
	type panel struct {
		Title  string   `json:"title"`
		X      string   `json:"x"`
		Y      string   `json:"y"`
		Series []series `json:"series"`
	}
	metric := func(title, y string, value func(scaleSummary) float64) panel {
		p := panel{Title: title, X: "pods in the cluster", Y: y}
		for _, side := range rep.Sides {
			s := series{Name: side.Name}
			for _, m := range rep.Summary {
				if m.Side == side.Name {
					s.Points = append(s.Points, [2]float64{float64(m.Step.Pods), value(m)})
				}
			}
			p.Series = append(p.Series, s)
		}
		return p
	}
	p99 := func(op string) func(scaleSummary) float64 {
		return func(m scaleSummary) float64 { return m.P99[op].Median }
	}
	panels := []panel{
		metric("pod create p99", "ms", p99(opPodCreate)),
		metric("binding p99", "ms", p99(opBinding)),
		metric("pod status patch p99", "ms", p99(opPodStatus)),
		metric("volume create p99", "ms", p99(opVolumeCreate)),
		metric("list pods of a namespace p99", "ms", p99(opListPodsNS)),
		metric("list nodes p99", "ms", p99(opListNodes)),
		metric("apiserver CPU per request", "ms", func(m scaleSummary) float64 { return m.CPUPerRequestMs.Median }),
		metric("apiserver resident memory", "MiB", func(m scaleSummary) float64 { return m.RSSMiB.Median }),
		metric("Deployments available after", "s", func(m scaleSummary) float64 { return m.RolloutSeconds.Median }),
	}
	plot, err := json.MarshalIndent(map[string]any{"title": "kube-apiserver cost against cluster size (" + rep.Machine + ")", "panels": panels}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "plot.json"), plot, 0o644)
}
