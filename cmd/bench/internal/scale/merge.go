// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// WriteMerged combines the reports (latest.json) of earlier scale runs
// in dirs into one table, summary and plot in out (-scale-merge): a p99's
// median over four turns still moves by 10-15% from run to run, and more
// turns than one sitting holds are several runs.
func WriteMerged(dirs []string, out string) error {
	if len(dirs) == 0 {
		return fmt.Errorf("-scale-merge: no directories")
	}
	for _, dir := range dirs {
		if filepath.Clean(dir) == filepath.Clean(out) {
			return fmt.Errorf("-out %s is one of the runs merged: its report would be overwritten", out)
		}
	}
	rep, err := mergeScaleRuns(dirs)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	return writeScaleReport(out, rep, os.Stdout)
}

// mergeScaleRuns reads the runs' reports. The turns are numbered on from
// run to run; sides and steps are the union of the runs', steps by size.
// Runs of different machines, or whose probes took different numbers of
// write rounds (-probes) at the same step, are refused: a p99 of 1,000
// requests is their tenth slowest, of 5,000 the fiftieth, and the two
// spread differently. Different steps may differ: each compares its sides
// on its own.
func mergeScaleRuns(dirs []string) (scaleReport, error) {
	var merged scaleReport
	// roundsAt is each step's write rounds so far and the report they
	// were read from.
	type rounds struct {
		count int
		from  string
	}
	roundsAt := map[scaleStep]rounds{}
	for _, dir := range dirs {
		file := filepath.Join(dir, "latest.json")
		data, err := os.ReadFile(file)
		if err != nil {
			return merged, err
		}
		var rep scaleReport
		if err := json.Unmarshal(data, &rep); err != nil {
			return merged, fmt.Errorf("%s: %w", file, err)
		}
		if len(rep.Figures) == 0 {
			return merged, fmt.Errorf("%s: no figures: not a scale run's report", file)
		}
		first := filepath.Join(dirs[0], "latest.json")
		if merged.Machine == "" {
			merged.Started, merged.Machine, merged.SamePods = rep.Started, rep.Machine, rep.SamePods
		} else if rep.Machine != merged.Machine {
			return merged, fmt.Errorf("%s: ran on %q, %s on %q: figures of different machines do not compare", file, rep.Machine, first, merged.Machine)
		} else if rep.SamePods != merged.SamePods {
			return merged, fmt.Errorf("%s: -same-pods %t, %s: -same-pods %t: runs whose sides held different pods do not compare", file, rep.SamePods, first, merged.SamePods)
		}
		for _, f := range rep.Figures {
			if !f.Reached {
				continue
			}
			these := probeRounds(f)
			if before, ok := roundsAt[f.Step]; !ok {
				roundsAt[f.Step] = rounds{these, file}
			} else if these != before.count {
				return merged, fmt.Errorf("%s: probed %s with %d write rounds, %s with %d (-probes): p99s of different sample sizes do not compare", file, f.Step, these, before.from, before.count)
			}
		}
		for _, side := range rep.Sides {
			if !slices.ContainsFunc(merged.Sides, func(s scaleSide) bool { return s.Name == side.Name }) {
				merged.Sides = append(merged.Sides, side)
			}
		}
		for _, step := range rep.Steps {
			if !slices.Contains(merged.Steps, step) {
				merged.Steps = append(merged.Steps, step)
			}
		}
		turns := 0
		for _, f := range merged.Figures {
			turns = max(turns, f.Repeat)
		}
		for _, f := range rep.Figures {
			f.Repeat += turns
			merged.Figures = append(merged.Figures, f)
		}
	}
	slices.SortStableFunc(merged.Steps, func(a, b scaleStep) int { return a.Pods - b.Pods })
	return merged, nil
}

// probeRounds is how many write rounds a turn's probe took (a step whose
// probe had failures is not reached, so its count is all of them).
func probeRounds(f scaleFigure) int {
	l := f.Latency[opPodCreate]
	return l.Count + l.Errors
}
