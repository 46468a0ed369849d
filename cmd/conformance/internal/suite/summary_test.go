// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/turnstile-k8s/turnstile/cmd/conformance/internal/profiles"
)

// A ginkgo JSON report cut down to what summarize reads: a spec that
// passed, one that failed, one the spec skipped itself, one the label
// filter left out, and a suite node.
const report = `[{"RunTime": 5000000000, "SpecReports": [
 {"LeafNodeType": "SynchronizedBeforeSuite", "State": "passed"},
 {"ContainerHierarchyTexts": ["[sig-node] Pods"], "LeafNodeText": "should run [Conformance]", "LeafNodeType": "It", "State": "passed", "RunTime": 2000000000, "NumAttempts": 1},
 {"ContainerHierarchyTexts": ["[sig-network] DNS"], "LeafNodeText": "should resolve [Conformance]", "LeafNodeType": "It", "State": "failed", "NumAttempts": 1,
  "Failure": {"Message": "timed out waiting\nmore detail", "Location": {"FileName": "dns.go", "LineNumber": 7}}},
 {"ContainerHierarchyTexts": ["[sig-apps] Jobs"], "LeafNodeText": "should skip itself [Conformance]", "LeafNodeType": "It", "State": "skipped", "NumAttempts": 1,
  "Failure": {"Message": "Only supported for providers [gce]"}},
 {"ContainerHierarchyTexts": ["[sig-storage] NFS"], "LeafNodeText": "not selected", "LeafNodeType": "It", "State": "skipped"}
]}]`

func TestSummarize(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "default")
	if err := os.MkdirAll(filepath.Join(out, "upstream"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// upstream's last run passed the DNS spec, and one this run did not select.
	upstreamPassed := "[sig-network] DNS should resolve [Conformance]\n[sig-storage] other\n"
	if err := os.WriteFile(filepath.Join(out, "upstream", "passed.txt"), []byte(upstreamPassed), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report-parallel.json"), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := profiles.Lookup("default")
	if err != nil {
		t.Fatal(err)
	}
	s, err := summarize(dir, p, 90*time.Second, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.passed) != 1 || len(s.failed) != 1 || len(s.skipped) != 1 || s.ran() != 2 {
		t.Fatalf("passed %v, failed %v, skipped %v; want one of each", s.passed, s.failed, s.skipped)
	}
	if got := s.failed[0].reason; got != "failed: timed out waiting" {
		t.Errorf("failure reason %q, want the state and the message's first line", got)
	}
	if got := s.lost["upstream"]; len(got) != 1 || got[0] != "[sig-network] DNS should resolve [Conformance]" {
		t.Errorf("lost against upstream: %q, want the DNS spec only", got)
	}
	summary, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"**1 passed, 1 failed, 1 skipped** of 3 [Conformance] specs run (parallel pass), in 1m30s.",
		"## Failed\n- [sig-network] DNS should resolve [Conformance] (parallel pass)\n  failed: timed out waiting\n",
		"## Passed by upstream's last run, not by this one\n- [sig-network] DNS should resolve [Conformance]\n",
		"## Skipped by the spec itself\n- [sig-apps] Jobs should skip itself [Conformance]\n  Only supported for providers [gce]\n",
		"## Passed\n- [sig-node] Pods should run [Conformance] (2s)\n",
	} {
		if !strings.Contains(string(summary), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, summary)
		}
	}
	if strings.Contains(string(summary), "not selected") {
		t.Errorf("summary.md lists a spec the filter left out:\n%s", summary)
	}
	passed, err := os.ReadFile(filepath.Join(dir, "passed.txt"))
	if err != nil || string(passed) != "[sig-node] Pods should run [Conformance]\n" {
		t.Errorf("passed.txt = %q, %v", passed, err)
	}
}

func TestSummarizeWithoutReports(t *testing.T) {
	p, _ := profiles.Lookup("default")
	if _, err := summarize(t.TempDir(), p, time.Second, ""); err == nil || !strings.Contains(err.Error(), "no ginkgo report") {
		t.Fatalf("summarize of an empty directory: %v, want no ginkgo report", err)
	}
}

func TestMissing(t *testing.T) {
	s := summary{passed: []outcome{{name: "a"}}, failed: []outcome{{name: "b"}}, skipped: []outcome{{name: "c"}}}
	if got := s.missing([]string{"a", "b", "c", "d"}); len(got) != 1 || got[0] != "d" {
		t.Fatalf("missing = %q, want [d]", got)
	}
}

func TestFocusOn(t *testing.T) {
	focus := regexp.MustCompile(focusOn([]string{"[sig-node] Pods should run [Conformance]", "a.b"}))
	for name, want := range map[string]bool{
		"Kubernetes e2e suite [sig-node] Pods should run [Conformance]":          true,
		"Kubernetes e2e suite [sig-node] Pods should run [Conformance] and more": false,
		"a.b":  true,
		"axb":  false,
		"xa.b": false,
	} {
		if got := focus.MatchString(name); got != want {
			t.Errorf("focus %s on %q: %v, want %v", focus, name, got, want)
		}
	}
}
