// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnstile-k8s/turnstile/cmd/conformance/internal/check"
)

// Two passes' junit_01.xml become one: each spec once, as the pass that
// ran it reported it (a serial spec is skipped in the parallel pass),
// sorted, with the totals recounted, in the form checkSubmission reads.
func TestMergeJUnit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, cases string) string {
		path := filepath.Join(dir, name)
		doc := `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="9" disabled="0" errors="0" failures="0" time="10">
  <testsuite name="Kubernetes e2e suite" package="/bin" tests="9" skipped="0" failures="0" errors="0" time="10" timestamp="2026-11-28T02:00:00">
` + cases + `  </testsuite>
</testsuites>
`
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	parallel := write("parallel.xml", `    <testcase name="[It] [sig-b] parallel one &#34;quoted&#34; [Conformance]" classname="Kubernetes e2e suite" status="passed" time="1"><system-err>log</system-err></testcase>
    <testcase name="[It] [sig-a] serial one [Serial] [Conformance]" classname="Kubernetes e2e suite" status="skipped" time="0"><skipped message="skipped"></skipped></testcase>
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="2"></testcase>
`)
	serial := write("serial.xml", `    <testcase name="[It] [sig-b] parallel one &#34;quoted&#34; [Conformance]" classname="Kubernetes e2e suite" status="skipped" time="0"><skipped message="skipped"></skipped></testcase>
    <testcase name="[It] [sig-a] serial one [Serial] [Conformance]" classname="Kubernetes e2e suite" status="failed" time="3"><failure type="failed">boom</failure></testcase>
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="2"></testcase>
`)
	merged, err := mergeJUnit([]string{parallel, serial})
	if err != nil {
		t.Fatal(err)
	}
	cases, err := check.JUnitCases(merged)
	if err != nil {
		t.Fatalf("%v\n%s", err, merged)
	}
	var got []string
	for _, c := range cases {
		got = append(got, c.Spec()+" "+c.Status)
	}
	want := []string{ // sorted by the names as written, "[It] " first
		"[sig-a] serial one [Serial] [Conformance] failed",
		`[sig-b] parallel one "quoted" [Conformance] passed`,
		"[SynchronizedBeforeSuite] passed",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("merged cases:\n%s\nwant:\n%s\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), merged)
	}
	for _, w := range []string{`<testsuites tests="3" disabled="0" errors="0" failures="1" time="20">`, `skipped="0" errors="0" failures="1"`, `<failure type="failed">boom</failure>`, `<system-err>log</system-err>`} {
		if !strings.Contains(string(merged), w) {
			t.Errorf("merged report lacks %s:\n%s", w, merged)
		}
	}
}

// The terminal sees a line a spec, named, and the summaries; the rest of
// ginkgo's verbose output stays in the log. Both of ginkgo's forms: a
// parallel process's report (outcome, then name) and one process's
// stream (name, log, outcome).
func TestProgressWriter(t *testing.T) {
	var out strings.Builder
	w := &progressWriter{out: &out}
	log := `Running Suite: Kubernetes e2e suite - /bin
Will run 2 of 3206 specs
------------------------------
[SynchronizedBeforeSuite] PASSED [0.073 seconds]
[SynchronizedBeforeSuite]
k8s.io/kubernetes@v1.37.2/test/e2e/e2e.go:69

  Timeline >>
  I1128 02:37:28.221805   17170 e2e.go:245] e2e test version: v1.37.2
  << Timeline
------------------------------
• [3.145 seconds]
[sig-node] Pods should be submitted and removed [NodeConformance] [Conformance] [sig-node, NodeConformance, Conformance]
k8s.io/kubernetes@v1.37.2/test/e2e/node/pods.go:12
  STEP: Creating a kubernetes client @ 11/28/26 02:00:00.000
------------------------------
• [FAILED] [12.001 seconds]
[sig-apps] Job should fail [Conformance] [sig-apps, Conformance]
  STEP: doing it
------------------------------
[sig-apps] Daemon set should run and stop simple daemon [Conformance] [Serial] [sig-apps, Serial, Conformance]
k8s.io/kubernetes@v1.37.2/test/e2e/apps/daemon_set.go:179
  STEP: Creating a kubernetes client @ 11/28/26 02:53:44.549
• [3.311 seconds]
------------------------------
Summarizing 1 Failure:
  [FAIL] [sig-apps] Job should fail [Conformance]
Ran 2 of 3206 Specs in 20.1 seconds
FAIL! -- 1 Passed | 1 Failed | 0 Pending | 3204 Skipped`
	// In pieces, as a pipe delivers it.
	for len(log) > 0 {
		n := min(7, len(log))
		if _, err := w.Write([]byte(log[:n])); err != nil {
			t.Fatal(err)
		}
		log = log[n:]
	}
	w.Flush()
	want := `Running Suite: Kubernetes e2e suite - /bin
Will run 2 of 3206 specs
• [3.145 seconds] [sig-node] Pods should be submitted and removed [NodeConformance] [Conformance] [sig-node, NodeConformance, Conformance]
• [FAILED] [12.001 seconds] [sig-apps] Job should fail [Conformance] [sig-apps, Conformance]
• [3.311 seconds] [sig-apps] Daemon set should run and stop simple daemon [Conformance] [Serial] [sig-apps, Serial, Conformance]
Summarizing 1 Failure:
  [FAIL] [sig-apps] Job should fail [Conformance]
Ran 2 of 3206 Specs in 20.1 seconds
FAIL! -- 1 Passed | 1 Failed | 0 Pending | 3204 Skipped
`
	if out.String() != want {
		t.Errorf("terminal:\n%s\nwant:\n%s", out.String(), want)
	}
}
