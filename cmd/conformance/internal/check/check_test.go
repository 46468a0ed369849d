// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package check

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"
)

const testConformanceYAML = `- testname: Pod exec
  codename: '[sig-node] Probing container should be restarted with a exec "cat /tmp/health" liveness probe [NodeConformance] [Conformance]'
  release: v1.9
- testname: DNS hosts
  codename: '[sig-network] DNS should provide /etc/hosts entries for the cluster [Conformance]'
  release: v1.14, v1.18
- testname: New in 1.37
  codename: '[sig-apps] Job should do a new thing [Conformance]'
  release: v1.37
- testname: Not yet
  codename: '[sig-apps] Job should do a future thing [Conformance]'
  release: v1.38
`

const testJUnit = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="6" disabled="0" errors="0" failures="0">
  <testsuite name="Kubernetes e2e suite" tests="6" skipped="2" failures="0">
    <testcase name="[SynchronizedBeforeSuite]" status="passed"></testcase>
    <testcase name="[It] [sig-node] Probing container should be restarted with a exec &#34;cat /tmp/health&#34; liveness probe [NodeConformance] [Conformance]" status="passed"></testcase>
    <testcase name="[It] [sig-network] DNS should provide /etc/hosts entries for the cluster [Conformance]" status="passed"></testcase>
    <testcase name="[It] [sig-apps] Job should do a new thing [Conformance]" status="passed"></testcase>
    <testcase name="[It] [sig-storage] Slow thing [Slow]" status="skipped"><skipped message="skipped"></skipped></testcase>
    <testcase name="[ReportAfterSuite] Kubernetes e2e suite report" status="passed"></testcase>
  </testsuite>
</testsuites>
`

const testE2ELog = `I1128 02:00:00.000000 1 e2e.go:245] e2e test version: v1.37.2
Running Suite: Kubernetes e2e suite
•••

Ran 3 of 3213 Specs in 300.123 seconds
SUCCESS! -- 3 Passed | 0 Failed | 0 Pending | 3210 Skipped
PASS
`

const testProduct = `vendor: Turnstile developers
name: Turnstile
version: v1.37.2+turnstile.1
website_url: https://example.org/turnstile
repo_url: https://example.org/turnstile.git
documentation_url: https://example.org/turnstile/docs
product_logo_url: https://example.org/turnstile/logo.svg
type: distribution
description: A kube-apiserver with every admission controller the documentation has described.
contact_email_address: turnstile@example.org
`

// writeTestSubmission writes a submission that passes every check, under
// root/minor/turnstile, with edit applied to its files first.
func writeTestSubmission(t *testing.T, minor string, edit func(files map[string]string)) (dir, yamlPath string) {
	t.Helper()
	root := t.TempDir()
	yamlPath = filepath.Join(root, "conformance.yaml")
	if err := os.WriteFile(yamlPath, []byte(testConformanceYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"README.md": "# Turnstile\n\nsudo make conformance\n", "PRODUCT.yaml": testProduct, "e2e.log": testE2ELog, "junit_01.xml": testJUnit}
	if edit != nil {
		edit(files)
	}
	dir = filepath.Join(root, minor, "turnstile")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, yamlPath
}

// removeNewSpec takes the spec new in v1.37 out of both files, as a run
// of an older suite, or one that lost it, would write them.
func removeNewSpec(f map[string]string) {
	f["junit_01.xml"] = strings.Replace(f["junit_01.xml"], `    <testcase name="[It] [sig-apps] Job should do a new thing [Conformance]" status="passed"></testcase>`+"\n", "", 1)
	f["e2e.log"] = strings.NewReplacer("Ran 3 of", "Ran 2 of", "SUCCESS! -- 3 Passed", "SUCCESS! -- 2 Passed").Replace(f["e2e.log"])
}

// failures is the names of the checks that failed, with their reasons.
func failures(results []checkResult) map[string]string {
	out := map[string]string{}
	for _, r := range results {
		if r.err != nil {
			out[r.name] = r.err.Error()
		}
	}
	return out
}

func TestCheckAcceptsAGoodSubmission(t *testing.T) {
	dir, yamlPath := writeTestSubmission(t, "v1.37", nil)
	results := checkSubmission(dir, yamlPath, "v1.37.2")
	if f := failures(results); len(f) > 0 {
		t.Errorf("a good submission failed: %v", f)
	}
	if len(results) != 8 {
		t.Errorf("%d checks, want 8", len(results))
	}
}

// Each of the acceptance's bad submissions is refused, by the check a
// reviewer would name, and by no other.
func TestCheckRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, minor string
		edit        func(map[string]string)
		check, why  string
	}{
		{
			name: "a spec turned to failed in junit_01.xml", minor: "v1.37",
			edit: func(f map[string]string) {
				f["junit_01.xml"] = strings.Replace(f["junit_01.xml"], `cluster [Conformance]" status="passed"></testcase>`,
					`cluster [Conformance]" status="failed"><failure type="failed">timed out</failure></testcase>`, 1)
			},
			check: "junit_01.xml has every [Conformance] spec of the release, none failed",
			why:   "1 failed:\n  [sig-network] DNS should provide /etc/hosts entries for the cluster [Conformance]",
		},
		{
			name: "a spec removed from both files", minor: "v1.37",
			edit: func(f map[string]string) {
				removeNewSpec(f)
			},
			check: "junit_01.xml has every [Conformance] spec of the release, none failed",
			why:   "1 of the release's 3 are not there:\n  [sig-apps] Job should do a new thing [Conformance]",
		},
		{
			name: "e2e.log from another minor", minor: "v1.37",
			edit: func(f map[string]string) {
				f["e2e.log"] = strings.Replace(f["e2e.log"], "e2e test version: v1.37.2", "e2e test version: v1.36.5", 1)
			},
			check: "e2e.log says which Kubernetes it tested, and it is the folder's release",
			why:   "e2e.log tested v1.36.5, and the folder is v1.37",
		},
		{
			name: "PRODUCT.yaml without contact_email_address", minor: "v1.37",
			edit: func(f map[string]string) {
				f["PRODUCT.yaml"] = strings.Replace(f["PRODUCT.yaml"], "contact_email_address: turnstile@example.org\n", "", 1)
			},
			check: "PRODUCT.yaml describes the product with every required field",
			why:   "contact_email_address is missing or empty",
		},
		{
			name: "a folder for v1.33", minor: "v1.33",
			edit: func(f map[string]string) {
				f["e2e.log"] = strings.Replace(f["e2e.log"], "v1.37.2", "v1.33.9", 1)
				removeNewSpec(f)
			},
			check: "the release is the current one (v1.37) or one of the two before it",
			why:   "v1.33 is more than two minors older than the current release v1.37: certify on v1.35 or later",
		},
		{
			name: "a missing file", minor: "v1.37",
			edit:  func(f map[string]string) { f["README.md"] = "  \n" },
			check: "the folder holds README.md, PRODUCT.yaml, e2e.log and junit_01.xml, none of them empty",
			why:   "missing or empty: README.md",
		},
		{
			name: "a run that failed", minor: "v1.37",
			edit: func(f map[string]string) {
				f["e2e.log"] = strings.Replace(f["e2e.log"], "SUCCESS! -- 3 Passed | 0 Failed", "FAIL! -- 2 Passed | 1 Failed", 1)
			},
			check: "e2e.log ends in ginkgo's SUCCESS line, with no failed or pending spec",
			why:   `e2e.log's summary says "FAIL! -- 2 Passed | 1 Failed | 0 Pending | 3210 Skipped"`,
		},
		{
			name: "junit and e2e.log disagree", minor: "v1.37",
			edit: func(f map[string]string) {
				f["e2e.log"] = strings.Replace(f["e2e.log"], "Ran 3 of", "Ran 4 of", 1)
			},
			check: "junit_01.xml and e2e.log count the same specs",
			why:   "e2e.log ran 4 specs, junit_01.xml has 3 that ran",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, yamlPath := writeTestSubmission(t, tc.minor, tc.edit)
			f := failures(checkSubmission(dir, yamlPath, "v1.37.2"))
			if f[tc.check] != tc.why {
				t.Errorf("check %q said %q, want %q", tc.check, f[tc.check], tc.why)
			}
			if len(f) != 1 {
				t.Errorf("more checks failed than the one planted: %v", f)
			}
		})
	}
}

// The real conformance.yaml of the pinned release: the specs the bot
// requires of a submission for main's minor are the suite's.
func TestCheckCountsTheRealSuite(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dir, release, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	path := filepath.Join(dir, "test", "conformance", "testdata", "conformance.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var specs []conformanceSpec
	if err := yaml.Unmarshal(data, &specs); err != nil {
		t.Fatal(err)
	}
	current := version.MustParseGeneric(release)
	n := 0
	for _, s := range specs {
		if releasedBy(s.Release, current) {
			n++
		}
	}
	// A release's conformance.yaml lists only specs promoted in it or
	// before: every one is required of a submission for it (462 for
	// v1.37.2, 443 for v1.36.5, as docs/conformance.md counts them).
	if n != len(specs) || n < 400 {
		t.Errorf("%s: %d specs required of v1.%d, of %d listed", path, n, current.Minor(), len(specs))
	}
}
