// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

// The scale benchmark's verdict: is a side's memory and p99 within 10% of
// the baseline's at each step, or do its turns not say? At 30,000 pods on
// two cores one binary's p99 moves by up to ×2 from turn to turn (the
// garbage collector's timing on saturated cores), so a ratio of medians
// alone reads as a cost or a saving that the next run takes back. The
// verdict puts an interval on the ratio and decides only what it can.

import (
	"fmt"
	"io"
	"math/rand/v2"
	"sort"

	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/measure"
)

const (
	// tolerance is how far above the baseline's median a side's may be:
	// one-sided, since being cheaper than upstream is no fault.
	tolerance = 1.10
	// resamples is the bootstrap's count of resampled pairs of medians.
	resamples = 10000
	// fewestTurns is the count of turns a side below which no verdict is
	// given: with one turn the interval is a single point, and with two
	// the resampled medians are the two turns and their mean, which says
	// nothing about the next turn.
	fewestTurns = 3
)

// The memory measures a verdict is given on, before the p99s.
const (
	measureRSS      = "RSS"
	measureLiveHeap = "live heap"
)

// Verdicts on a ratio's interval.
const (
	verdictWithin    = "within"
	verdictOver      = "over"
	verdictUndecided = "undecided"
	verdictTooFew    = "too few turns"
)

// scaleVerdict is one side against the baseline at one step.
type scaleVerdict struct {
	Side      string    `json:"side"`
	Step      scaleStep `json:"step"`
	Turns     int       `json:"turns"`
	BaseTurns int       `json:"baseTurns"`
	// Measures are keyed measureRSS, measureLiveHeap and by the probe's
	// operations (p99s). RSS is the memory; the live heap is the
	// part of it a binary holds, without the garbage a collection's
	// timing leaves in it (RSS after the probe is its peak here: the
	// runtime has returned nothing by then).
	Measures map[string]ratioInterval `json:"measures"`
}

// ratioInterval is the ratio of a side's median to the baseline's, the
// 2.5th and 97.5th percentiles of that ratio over the bootstrap's
// resamples, and the verdict they give.
type ratioInterval struct {
	Ratio   float64 `json:"ratio"`
	Low     float64 `json:"low"`
	High    float64 `json:"high"`
	Verdict string  `json:"verdict"`
}

// verdicts compares every side but the baseline with it, at each step both
// reached, on resident memory and each operation's p99.
func verdicts(rep scaleReport) []scaleVerdict {
	var out []scaleVerdict
	for _, side := range rep.Sides {
		if side.Name == baseline {
			continue
		}
		for _, step := range rep.Steps {
			turns, base := reachedTurns(rep, side.Name, step), reachedTurns(rep, baseline, step)
			if len(turns) == 0 || len(base) == 0 {
				continue
			}
			v := scaleVerdict{Side: side.Name, Step: step, Turns: len(turns), BaseTurns: len(base), Measures: map[string]ratioInterval{}}
			measure := func(name string, value func(scaleFigure) float64) {
				if a, b := valuesOf(turns, value), valuesOf(base, value); len(a) > 0 && len(b) > 0 {
					v.Measures[name] = compareMedians(a, b)
				}
			}
			measure(measureRSS, rssOf)
			measure(measureLiveHeap, func(f scaleFigure) float64 { return f.LiveHeapMiB })
			for _, op := range scaleOps {
				measure(op, p99Of(op))
			}
			out = append(out, v)
		}
	}
	return out
}

// compareMedians bootstraps the ratio of a's median to b's, resampling
// each side's turns on its own (the turns of the two sides are separate
// clusters, not pairs). The seed is fixed, so a report's verdicts are the
// same every time it is written or merged. Percentile intervals of a
// median from a handful of turns are coarse: they take only the turns'
// own values, which is why fewestTurns gates the verdict.
func compareMedians(a, b []float64) ratioInterval {
	r := ratioInterval{Ratio: measure.Median(a) / measure.Median(b)}
	rng := rand.New(rand.NewPCG(19, 10))
	ratios := make([]float64, resamples)
	sa, sb := make([]float64, len(a)), make([]float64, len(b))
	for i := range ratios {
		for j := range sa {
			sa[j] = a[rng.IntN(len(a))]
		}
		for j := range sb {
			sb[j] = b[rng.IntN(len(b))]
		}
		ratios[i] = measure.Median(sa) / measure.Median(sb)
	}
	sort.Float64s(ratios)
	r.Low, r.High = ratios[resamples*25/1000], ratios[resamples*975/1000-1]
	switch {
	case min(len(a), len(b)) < fewestTurns:
		r.Verdict = verdictTooFew
	case r.High <= tolerance:
		r.Verdict = verdictWithin
	case r.Low > tolerance:
		r.Verdict = verdictOver
	default:
		r.Verdict = verdictUndecided
	}
	return r
}

// printVerdictTable prints each side's verdicts, one row a step.
func printVerdictTable(w io.Writer, verdicts []scaleVerdict) {
	if len(verdicts) == 0 {
		return
	}
	fmt.Fprintf(w, "\nWithin %.0f%% of %s? The ratio of the medians and its 95%% interval over %d bootstrap resamples of each side's turns: %s when the interval's top is at most ×%.2f, %s when its bottom is above, %s when it holds ×%.2f; with fewer than %d turns a side, %s.\n\n",
		100*(tolerance-1), baseline, resamples, verdictWithin, tolerance, verdictOver, verdictUndecided, tolerance, fewestTurns, verdictTooFew)
	tableHeader(w, []string{"side", "pods", "turns / " + baseline + "'s", measureRSS, measureLiveHeap}, "p99")
	cell := func(r ratioInterval, ok bool) string {
		if !ok {
			return "-"
		}
		return fmt.Sprintf("×%.2f (%.2f–%.2f) %s", r.Ratio, r.Low, r.High, r.Verdict)
	}
	for _, v := range verdicts {
		fmt.Fprintf(w, "| %s | %d | %d / %d |", v.Side, v.Step.Pods, v.Turns, v.BaseTurns)
		for _, name := range append([]string{measureRSS, measureLiveHeap}, scaleOps...) {
			r, ok := v.Measures[name]
			fmt.Fprintf(w, " %s |", cell(r, ok))
		}
		fmt.Fprintln(w)
	}
}
