// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnstile-k8s/turnstile/cmd/conformance/internal/profiles"
)

// The report of TestSummarize's run as the e2e framework's junit_01.xml
// has it, which is all hydrophone downloads.
const junitReport = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="4" disabled="1" errors="0" failures="1" time="5">
  <testsuite name="Kubernetes e2e suite" tests="4" failures="1" skipped="2" time="5">
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="0.1"></testcase>
    <testcase name="[It] [sig-node] Pods should run [Conformance]" classname="Kubernetes e2e suite" status="passed" time="2"></testcase>
    <testcase name="[It] [sig-network] DNS should resolve [Conformance]" classname="Kubernetes e2e suite" status="failed" time="3">
      <failure message="timed out waiting&#xA;more detail" type="failed">[FAILED] timed out waiting</failure>
    </testcase>
    <testcase name="[It] [sig-apps] Jobs should skip itself [Conformance]" classname="Kubernetes e2e suite" status="skipped" time="0">
      <skipped message="skipped - Only supported for providers [gce]"></skipped>
    </testcase>
    <testcase name="[It] [sig-storage] NFS not selected" classname="Kubernetes e2e suite" status="skipped" time="0">
      <skipped message="skipped"></skipped>
    </testcase>
    <testcase name="[ReportAfterSuite] Kubernetes e2e suite report" classname="Kubernetes e2e suite" status="failed" time="0">
      <failure message="the report could not be written" type="failed"></failure>
    </testcase>
  </testsuite>
</testsuites>`

func TestSummarizeJUnit(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "default-hydrophone")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "junit_01.xml"), []byte(junitReport), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := profiles.Lookup("default")
	if err != nil {
		t.Fatal(err)
	}
	s, err := summarizeJUnit(dir, p, time.Minute, "")
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, o := range s.failed {
		failed = append(failed, o.name+": "+o.reason)
	}
	want := []string{"[ReportAfterSuite] Kubernetes e2e suite report: the report could not be written", "[sig-network] DNS should resolve [Conformance]: failed: timed out waiting"}
	if !slices.Equal(failed, want) {
		t.Errorf("failed %q, want %q (the suite node's failure fails the run too)", failed, want)
	}
	if len(s.passed) != 1 || s.passed[0].name != "[sig-node] Pods should run [Conformance]" || s.passed[0].took != 2*time.Second {
		t.Errorf("passed %+v, want the Pods spec, 2s", s.passed)
	}
	if len(s.skipped) != 1 || s.skipped[0].reason != "Only supported for providers [gce]" {
		t.Errorf("skipped %+v, want the Jobs spec with its reason; the spec the filter left out did not run", s.skipped)
	}
	if _, err := summarizeJUnit(t.TempDir(), p, time.Minute, ""); err == nil || !strings.Contains(err.Error(), "hydrophone wrote no report") {
		t.Errorf("without junit_01.xml: %v, want an error saying hydrophone wrote no report", err)
	}
}

func TestAgreement(t *testing.T) {
	ours := t.TempDir()
	p, err := profiles.Lookup("all-compatible")
	if err != nil {
		t.Fatal(err)
	}
	s := summary{profile: p,
		passed: []outcome{{name: "a"}, {name: "b"}, {name: "c"}},
		failed: []outcome{{name: "d"}},
	}
	if got := agreement(s, ours); !strings.Contains(got, "Our runner has no run on profile all-compatible") {
		t.Errorf("without our runner's run: %q", got)
	}
	// Ours passed a, b, c and d, and e, which this run did not select.
	if err := os.WriteFile(filepath.Join(ours, "passed.txt"), []byte("a\nb\nc\nd\ne\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := agreement(s, ours)
	if !strings.Contains(got, "disagree on 1 specs") || !strings.Contains(got, "### Passed by our runner, not by hydrophone\n- d\n") {
		t.Errorf("d passed by ours only:\n%s", got)
	}
	if strings.Contains(got, "- e\n") {
		t.Errorf("a spec this run did not select counts:\n%s", got)
	}
	s.passed = append(s.passed, outcome{name: "d"}, outcome{name: "f"})
	s.failed = nil
	if got := agreement(s, ours); !strings.Contains(got, "### Passed by hydrophone, not by our runner\n- f\n") {
		t.Errorf("f passed by hydrophone only:\n%s", got)
	}
	s.passed = s.passed[:4]
	if got := agreement(s, ours); !strings.Contains(got, "Both runners passed the same 4 specs") {
		t.Errorf("the same four passed:\n%s", got)
	}
}

func TestPulls(t *testing.T) {
	log := filepath.Join(t.TempDir(), "registry.log")
	lines := `2026/11/28 04:17:20 GET /v2/ 200
2026/11/28 04:17:21 HEAD /v2/e2e-test-images/agnhost/manifests/2.63.0 200
2026/11/28 04:17:21 GET /v2/e2e-test-images/agnhost/manifests/2.63.0 200
2026/11/28 04:17:21 GET /v2/e2e-test-images/agnhost/blobs/sha256:abc 200
2026/11/28 04:17:22 HEAD /v2/e2e-test-images/agnhost/manifests/sha256:0123 200
2026/11/28 04:17:23 HEAD /v2/pause/manifests/does-not-exist 404
`
	if err := os.WriteFile(log, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	served, missing, err := pulls(log)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"e2e-test-images/agnhost:2.63.0", "e2e-test-images/agnhost@sha256:0123"}; !slices.Equal(served, want) {
		t.Errorf("served %q, want %q", served, want)
	}
	if want := []string{"pause:does-not-exist"}; !slices.Equal(missing, want) {
		t.Errorf("missing %q, want %q", missing, want)
	}
	report := pullReport(log)
	if !strings.Contains(report, "it served 2 images") || !strings.Contains(report, "It refused 1 it does not have") {
		t.Errorf("report:\n%s", report)
	}
	if report := pullReport(filepath.Join(t.TempDir(), "none")); !strings.Contains(report, "could not be read") {
		t.Errorf("without a log: %s", report)
	}
}

func TestHydrophoneArgs(t *testing.T) {
	o := Options{Procs: 8, Timeout: time.Hour}
	args := strings.Join(hydrophoneArgs(o, "/k", "/d"), " ")
	if want := "--kubeconfig /k --output-dir /d --parallel 8 --verbosity 6 --disable-progress-status --extra-ginkgo-args --timeout=1h0m0s --conformance"; args != want {
		t.Errorf("args %q, want %q", args, want)
	}
	o.Focus, o.Skip = `exec "cat /tmp/health"|DNS`, "Serial"
	args = strings.Join(hydrophoneArgs(o, "/k", "/d"), " ")
	if !strings.HasSuffix(args, `--focus exec "cat /tmp/health"|DNS --extra-ginkgo-args --label-filter=Conformance --skip Serial`) || strings.Contains(args, "--conformance") {
		t.Errorf("with a focus and a skip: %q; want hydrophone's --focus kept to [Conformance] specs by their label, instead of --conformance", args)
	}
}

func TestCheckRunner(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Runner: "ours", Passes: "serial"}, ""},
		{Options{Runner: "hydrophone", Passes: DefaultPasses}, ""},
		{Options{Runner: "sonobuoy", Passes: DefaultPasses}, `-runner "sonobuoy": the runners are ours and hydrophone`},
		{Options{Runner: "hydrophone", Passes: "serial"}, "-passes is our runner's"},
		{Options{Runner: "hydrophone", Passes: DefaultPasses, Specs: "x.txt"}, "-specs is our runner's"},
	} {
		err := checkRunner(tc.o)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}
