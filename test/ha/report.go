// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package ha

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Report is a run's figures, a row per fault or step, for the docs: as a
// table (Markdown) and as JSON.
type Report struct {
	// Title says what ran, for the table's first line.
	Title   string    `json:"title"`
	Began   time.Time `json:"began"`
	Seconds float64   `json:"seconds"`
	Steps   []Step    `json:"steps"`
	// Total is the whole run's load; Lost its ledger errors.
	Total Step `json:"total"`
	// Failed is whether the test failed.
	Failed bool `json:"failed"`
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

// NewStep is the row of a step that took took, from the load's window
// during it, lost ledger errors and the time the cluster took to converge.
func NewStep(name, what string, took time.Duration, w Window, lost int, converged time.Duration) Step {
	return Step{
		Name: name, What: what, Seconds: took.Seconds(),
		Writes: w.Writes, Acknowledged: w.Acked, Refused: w.Refused, Deliberate: w.Deliberate, Unknown: w.Unknown,
		Lost: lost, FailedRequests: w.Failed, ErrorWindowSeconds: w.ErrorSeconds, LongestOutageSeconds: w.OutageSeconds,
		LongestStallSeconds: w.StallSeconds, ConvergedSeconds: converged.Seconds(),
	}
}

// Markdown is the report as a table, with the pod creates and the
// versions when any step has them.
func (r *Report) Markdown() string {
	var pods, versions bool
	for _, s := range r.Steps {
		pods = pods || s.Pods != nil
		versions = versions || len(s.Versions) > 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Run of %s, %s, in %s.\n\n", r.Began.UTC().Format(time.RFC3339), r.Title, (time.Duration(r.Seconds) * time.Second).String())
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
		b.WriteString(" " + s.What + " |\n")
	}
	t := r.Total
	fmt.Fprintf(&b, "\nWhole run: %d writes, %d acknowledged, %d refused (%d of them deliberately stale updates), %d unknown; %d lost (ledger errors: acknowledged writes lost or stale, refused writes stored).\n",
		t.Writes, t.Acknowledged, t.Refused, t.Deliberate, t.Unknown, t.Lost)
	if t.Pods != nil {
		fmt.Fprintf(&b, "Pod creates decided by PodSecurityPolicy: %d sent, %d decided as expected, %d decided otherwise, %d failed.\n",
			t.Pods.Sent, t.Pods.AsExpected, t.Pods.Wrong, t.Pods.Failed)
	}
	if r.Failed {
		b.WriteString("\nTHE RUN FAILED: see the test log.\n")
	}
	return b.String()
}

// Write logs the report's table and, when path is set, writes it there
// and its JSON beside it (path with .json for .md).
func (r *Report) Write(t *testing.T, path string) {
	r.Failed = t.Failed()
	r.Seconds = time.Since(r.Began).Round(time.Second).Seconds()
	md := r.Markdown()
	t.Log("\n" + md)
	if path == "" {
		return
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Error(err)
	}
	for file, content := range map[string][]byte{path: []byte(md), strings.TrimSuffix(path, ".md") + ".json": append(data, '\n')} {
		if err := os.WriteFile(file, content, 0o644); err != nil {
			t.Error(err)
		}
	}
}
