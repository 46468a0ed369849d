// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package report is the figures of a run of test/ha's load through a
// highly available control plane, a row per fault or step: the run's own
// report.md and report.json, and the tables evidence pages generate from
// a report.json (cmd/verify-docs). It needs nothing but the standard
// library, so that the docs checker builds without the tests' graph.
package report

import (
	"fmt"
	"strings"
	"time"
)

// Report is a run's figures, a row per fault or step, for the docs: as a
// table (Markdown) and as JSON.
type Report struct {
	// Title says what ran, for the table's first line.
	Title string `json:"title"`
	// Command is the make target that ran it, and Commit the source's
	// commit (with -dirty when the tree had changes): an evidence page
	// states both with the figures.
	Command string    `json:"command,omitempty"`
	Commit  string    `json:"commit,omitempty"`
	Began   time.Time `json:"began"`
	Seconds float64   `json:"seconds"`
	Steps   []Step    `json:"steps"`
	// Total is the whole run's load; Lost its ledger errors.
	Total Step `json:"total"`
	// Images says where the nodes' images came from, when from air-gap
	// bundles alone.
	Images *Images `json:"images,omitempty"`
	// Failed is whether the test failed.
	Failed bool `json:"failed"`
}

// Images are an air-gapped run's: the bundles every node installed, and
// how many requests reached the registry that stands in for every
// registry and serves nothing.
type Images struct {
	Bundles          []string `json:"bundles"`
	RegistryRequests int      `json:"registryRequests"`
}

// Step is what the load saw while one fault or step lasted.
type Step struct {
	Name string `json:"name"`
	// What says what happened.
	What    string  `json:"what,omitempty"`
	Seconds float64 `json:"seconds"`
	// The writes of the ledger's load sent during the step, by outcome.
	Writes       int `json:"writes"`
	Acknowledged int `json:"acknowledged"`
	Refused      int `json:"refused"`
	// Deliberate counts the refusals of deliberately stale updates.
	Deliberate int `json:"deliberatelyRefused"`
	Unknown    int `json:"unknown"`
	// Lost counts the ledger's errors: acknowledged writes lost or stale,
	// refused writes stored.
	Lost int `json:"lost"`
	// FailedRequests are the requests of the load that did not succeed,
	// deliberate refusals excepted; the error window runs from the first
	// one's sending to the last one's end, the longest outage is the
	// longest stretch in which failing requests overlap, and the longest
	// stall the longest time no write was acknowledged.
	FailedRequests       int     `json:"failedRequests"`
	ErrorWindowSeconds   float64 `json:"errorWindowSeconds"`
	LongestOutageSeconds float64 `json:"longestOutageSeconds"`
	LongestStallSeconds  float64 `json:"longestStallSeconds"`
	// ConvergedSeconds is how long the cluster took to converge once the
	// step was over.
	ConvergedSeconds float64 `json:"convergedSeconds"`
	// Pods are the pod creates PodSecurityPolicy decided during the step,
	// when a stream of them ran.
	Pods *PodCreates `json:"podCreates,omitempty"`
	// Versions is what each node runs after the step, when known.
	Versions []NodeVersions `json:"versions,omitempty"`
}

// PodCreates counts a stream of pod creates: those decided as expected,
// those decided otherwise, and those that got no decision (the request
// failed).
type PodCreates struct {
	Sent       int `json:"sent"`
	AsExpected int `json:"asExpected"`
	Wrong      int `json:"wrong"`
	Failed     int `json:"failed"`
}

// NodeVersions is what one node runs: its apiserver's /version and its
// static pods' images (control-plane nodes), and its kubelet's version.
type NodeVersions struct {
	Node      string `json:"node"`
	APIServer string `json:"apiserver,omitempty"`
	Etcd      string `json:"etcd,omitempty"`
	Kubelet   string `json:"kubelet"`
}

func (v NodeVersions) String() string {
	var parts []string
	if v.APIServer != "" {
		parts = append(parts, "apiserver "+v.APIServer)
	}
	if v.Etcd != "" {
		parts = append(parts, "etcd "+v.Etcd)
	}
	return v.Node + ": " + strings.Join(append(parts, "kubelet "+v.Kubelet), ", ")
}

// Markdown is the run's own report: what ran, the table with every
// column that has data, and the whole run.
func (r *Report) Markdown() string {
	return fmt.Sprintf("Run of %s, %s, in %s.\n\n", r.Began.UTC().Format(time.RFC3339), r.Title, r.took()) + r.table(true) + r.summary()
}

// Evidence is the report as an evidence page holds it: the commit and
// command, the table without the nodes' versions (the page says what the
// run ends with), and the whole run.
func (r *Report) Evidence() string {
	return fmt.Sprintf("At `%s`, `%s` took %s (%s).\n\n", r.Commit, r.Command, r.took(), r.Began.UTC().Format(time.DateOnly)) + r.table(false) + r.summary()
}

func (r *Report) took() string { return (time.Duration(r.Seconds) * time.Second).String() }

// table is a row per step, with the pod creates column when any step has
// them, and the versions column when any has them and versions is set.
func (r *Report) table(versions bool) string {
	var pods, anyVersions bool
	for _, s := range r.Steps {
		pods = pods || s.Pods != nil
		anyVersions = anyVersions || len(s.Versions) > 0
	}
	versions = versions && anyVersions
	var b strings.Builder
	b.WriteString("| Step | Writes | Acknowledged | Refused (deliberate) | Unknown | Lost | Failed requests | Error window (s) | Longest outage (s) | Longest stall (s) | Converged after (s) |")
	sep := "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	if pods {
		b.WriteString(" Pod creates: as expected / wrong / failed |")
		sep += "---|"
	}
	if versions {
		b.WriteString(" Versions after |")
		sep += "---|"
	}
	b.WriteString(" What happened |\n" + sep + "---|\n")
	for _, s := range r.Steps {
		fmt.Fprintf(&b, "| %s | %d | %d | %d (%d) | %d | %d | %d | %.1f | %.1f | %.1f | %.1f |",
			s.Name, s.Writes, s.Acknowledged, s.Refused, s.Deliberate, s.Unknown, s.Lost, s.FailedRequests,
			s.ErrorWindowSeconds, s.LongestOutageSeconds, s.LongestStallSeconds, s.ConvergedSeconds)
		if pods {
			if s.Pods != nil {
				fmt.Fprintf(&b, " %d / %d / %d |", s.Pods.AsExpected, s.Pods.Wrong, s.Pods.Failed)
			} else {
				b.WriteString("  |")
			}
		}
		if versions {
			var vs []string
			for _, v := range s.Versions {
				vs = append(vs, v.String())
			}
			b.WriteString(" " + strings.Join(vs, "; ") + " |")
		}
		b.WriteString(" " + cell(s.What) + " |\n")
	}
	return b.String()
}

// cell is s as one cell of a Markdown table.
func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// summary is the whole run's load, and its pod creates.
func (r *Report) summary() string {
	var b strings.Builder
	t := r.Total
	fmt.Fprintf(&b, "\nWhole run: %d writes, %d acknowledged, %d refused (%d of them deliberately stale updates), %d unknown; %d lost (acknowledged writes lost or stale, refused writes stored).\n",
		t.Writes, t.Acknowledged, t.Refused, t.Deliberate, t.Unknown, t.Lost)
	if t.Pods != nil {
		fmt.Fprintf(&b, "Pod creates decided by PodSecurityPolicy: %d sent, %d decided as expected, %d decided otherwise, %d failed.\n",
			t.Pods.Sent, t.Pods.AsExpected, t.Pods.Wrong, t.Pods.Failed)
	}
	if r.Images != nil {
		fmt.Fprintf(&b, "Images: from the air-gap bundles alone, %s, each list's signature verified on every node; %d requests reached a registry.\n",
			strings.Join(r.Images.Bundles, " and "), r.Images.RegistryRequests)
	}
	if r.Failed {
		b.WriteString("\nTHE RUN FAILED: see the test log.\n")
	}
	return b.String()
}
