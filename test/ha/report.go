// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package ha

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnstile-k8s/turnstile/test/ha/report"
)

// NewStep is the row of a step that took took, from the load's window
// during it, lost ledger errors and the time the cluster took to converge.
func NewStep(name, what string, took time.Duration, w Window, lost int, converged time.Duration) report.Step {
	return report.Step{
		Name: name, What: what, Seconds: took.Seconds(),
		Writes: w.Writes, Acknowledged: w.Acked, Refused: w.Refused, Deliberate: w.Deliberate, Unknown: w.Unknown,
		Lost: lost, FailedRequests: w.Failed, ErrorWindowSeconds: w.ErrorSeconds, LongestOutageSeconds: w.OutageSeconds,
		LongestStallSeconds: w.StallSeconds, ConvergedSeconds: converged.Seconds(),
	}
}

// Commit is the commit of the source the test runs from, with -dirty when
// the tree has changes that are not committed, or "unknown" outside a git
// work tree: what a report's figures were measured on.
func Commit() string {
	out, err := exec.Command("git", "rev-parse", "--short=7", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(out))
	if status, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err != nil || len(status) > 0 {
		commit += "-dirty"
	}
	return commit
}

// WriteReport logs r's table and, when path is set, writes it there and
// its JSON beside it (path with .json for .md).
func WriteReport(t *testing.T, r *report.Report, path string) {
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
