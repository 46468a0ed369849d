// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package scale is the scale benchmark (`make bench-scale`, `bench -scale`):
// how the cost of
// each side grows with the cluster. For each side it starts a control plane
// with kwok's fake nodes (cluster.go), then grows the cluster step by
// step (nodes, pods through Deployments, PodSecurityPolicies and
// PersistentVolumeLabel rules) and measures at each step:
//   - the time the step's Deployments take to become available, and the
//     apiserver's CPU per request while they roll out;
//   - with the cluster at that size, a probe's latencies (workload.go),
//     and what else shaped them: etcd's mean fsync and commit, and how busy
//     the machine and the apiserver were (measuredProbe);
//   - the apiserver's resident memory.
//
// Sides run one after another, each alone on the machine.
//
// plan.go chooses what runs (steps, sides, turns), measure.go grows the
// clusters and measures them, report.go writes the tables and the JSON.
package scale

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/plugins"
	"sigs.k8s.io/yaml"
)

// scaleStep is the size a step grows the cluster to.
type scaleStep struct {
	Nodes       int `json:"nodes"`
	Pods        int `json:"pods"`
	Policies    int `json:"policies"`
	VolumeRules int `json:"volumeRules"`
}

func (s scaleStep) String() string {
	return fmt.Sprintf("%d nodes, %d pods, %d policies, %d volume rules", s.Nodes, s.Pods, s.Policies, s.VolumeRules)
}

// ParseSteps reads "NODES/PODS/POLICIES/RULES,...": each step at least as
// big as the one before (a step only adds).
func ParseSteps(s string) ([]scaleStep, error) {
	var steps []scaleStep
	for i, field := range strings.Split(s, ",") {
		parts := strings.Split(strings.TrimSpace(field), "/")
		if len(parts) != 4 {
			return nil, fmt.Errorf("-steps: step %d %q: want NODES/PODS/POLICIES/RULES", i+1, field)
		}
		var n [4]int
		for j, p := range parts {
			v, err := strconv.Atoi(p)
			if err != nil || v < 1 {
				return nil, fmt.Errorf("-steps: step %d %q: %q is not a positive number", i+1, field, p)
			}
			n[j] = v
		}
		step := scaleStep{Nodes: n[0], Pods: n[1], Policies: n[2], VolumeRules: n[3]}
		if len(steps) > 0 {
			prev := steps[len(steps)-1]
			if step.Nodes < prev.Nodes || step.Pods < prev.Pods || step.Policies < prev.Policies || step.VolumeRules < prev.VolumeRules {
				return nil, fmt.Errorf("-steps: step %d (%s) is smaller than step %d (%s): steps only grow", i+1, step, i, prev)
			}
		}
		steps = append(steps, step)
	}
	return steps, nil
}

type Options struct {
	Steps        []scaleStep
	Sides        []string
	Out          string
	Admission    string
	Probes       int
	ListProbes   int
	ListFor      time.Duration
	Concurrency  int
	Replicas     int
	ClientQPS    int
	LeaseSeconds int
	PodCIDR      string
	StepTimeout  time.Duration
	MinMemoryMiB float64
	Profile      time.Duration
	// Repeats is how many times every side grows through the steps, in
	// turns whose order alternates (A B, then B A), so that neither side
	// always runs on the machine first.
	Repeats int
	// SamePods sends every side its pods as Turnstile stores them
	// (workloadPod).
	SamePods bool
}

// scaleSide is one control plane the benchmark grows.
type scaleSide struct {
	Name, Description string
	Binary            string // empty: our kube-apiserver
	Args              []string
	// Turnstile sides get the PodSecurityPolicies and the
	// PersistentVolumeLabel rules; upstream has neither.
	Turnstile bool
}

func scaleSides(admissionConfig string) []scaleSide {
	return []scaleSide{
		{
			Name:        "turnstile",
			Description: "Turnstile with every documented controller that can run together (all-documented)",
			Args:        []string{"--enable-admission-plugins=" + strings.Join(plugins.AllDocumented, ","), "--admission-control-config-file=" + admissionConfig},
			Turnstile:   true,
		},
		{
			Name:        "upstream-same",
			Description: "upstream with the upstream plugins of all-documented, configured the same",
			Binary:      "kube-apiserver-upstream",
			Args:        []string{"--enable-admission-plugins=" + strings.Join(plugins.UpstreamOnly(plugins.AllDocumented), ","), "--admission-control-config-file=" + admissionConfig},
		},
		{
			Name:        "upstream",
			Description: "upstream with its default plugins",
			Binary:      "kube-apiserver-upstream",
		},
	}
}

// chooseSides returns the sides names lists, in the order of all; a name
// that is no side is an error that lists them.
func chooseSides(all []scaleSide, names []string) ([]scaleSide, error) {
	var known []string
	for _, side := range all {
		known = append(known, side.Name)
	}
	wanted := map[string]bool{}
	for _, name := range names {
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("-sides: %q is not a side; the sides are %s", name, strings.Join(known, ", "))
		}
		wanted[name] = true
	}
	var chosen []scaleSide
	for _, side := range all {
		if wanted[side.Name] {
			chosen = append(chosen, side)
		}
	}
	if len(chosen) == 0 {
		return nil, fmt.Errorf("-sides %q: no side chosen; the sides are %s", strings.Join(names, ","), strings.Join(known, ", "))
	}
	return chosen, nil
}

// turnOrder is the order the sides grow in on turn repeat (from 1): as
// given on odd turns, reversed on even ones.
func turnOrder(sides []scaleSide, repeat int) []scaleSide {
	order := slices.Clone(sides)
	if repeat%2 == 0 {
		slices.Reverse(order)
	}
	return order
}

// fileStem names a side's files of one step and turn in the output
// directory; the first turn keeps the names a single run has always had.
func fileStem(side string, repeat, step int) string {
	if repeat <= 1 {
		return fmt.Sprintf("%s-step%d", side, step)
	}
	return fmt.Sprintf("%s-run%d-step%d", side, repeat, step)
}

// writeScaleAdmissionConfig writes cmd/bench's AdmissionConfiguration with
// its paths made absolute and PersistentVolumeLabel's entry pointing at
// volumeRules, which each step rewrites and Turnstile reloads.
func writeScaleAdmissionConfig(source, dest, volumeRules string) error {
	source, err := filepath.Abs(source)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(source)
	if err != nil {
		return err
	}
	var config map[string]any
	if err := yaml.Unmarshal(data, &config); err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	plugins, _ := config["plugins"].([]any)
	found := false
	for _, p := range plugins {
		entry, ok := p.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: plugins: an entry is not a mapping", source)
		}
		if entry["name"] == "PersistentVolumeLabel" {
			entry["path"], found = volumeRules, true
			delete(entry, "configuration")
		} else if path, ok := entry["path"].(string); ok && !filepath.IsAbs(path) {
			entry["path"] = filepath.Join(filepath.Dir(source), path)
		}
	}
	if !found {
		return fmt.Errorf("%s: no PersistentVolumeLabel entry for the scale benchmark's rules", source)
	}
	out, err := yaml.Marshal(config)
	if err != nil {
		return err
	}
	return os.WriteFile(dest, out, 0o600)
}
