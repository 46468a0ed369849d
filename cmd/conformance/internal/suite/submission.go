// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

// Every run writes the folder a certification pull request to
// cncf/k8s-conformance holds: submission/v1.Y/turnstile/ with README.md
// (how to reproduce it), PRODUCT.yaml, e2e.log and junit_01.xml, in the
// form `conformance check` and the CNCF's bot read.

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/turnstile-k8s/turnstile/cmd/conformance/internal/check"
)

// productName is the folder a submission goes in, under v1.Y/.
const productName = "turnstile"

// ProductFile is the one file PRODUCT.yaml comes from: what we know of the
// product, no field invented.
const ProductFile = "cmd/conformance/PRODUCT.yaml"

// junitSuites is junit_01.xml as the e2e framework writes it: one suite.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Disabled int          `xml:"disabled,attr"`
	Errors   int          `xml:"errors,attr"`
	Failures int          `xml:"failures,attr"`
	Time     float64      `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string        `xml:"name,attr"`
	Package   string        `xml:"package,attr"`
	Tests     int           `xml:"tests,attr"`
	Disabled  int           `xml:"disabled,attr"`
	Skipped   int           `xml:"skipped,attr"`
	Errors    int           `xml:"errors,attr"`
	Failures  int           `xml:"failures,attr"`
	Time      float64       `xml:"time,attr"`
	Timestamp string        `xml:"timestamp,attr"`
	Cases     []rawTestcase `xml:"testcase"`
}

// rawTestcase keeps a testcase as written: its attributes and contents.
type rawTestcase struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Inner   []byte     `xml:",innerxml"`
}

func (c rawTestcase) attr(name string) string {
	for _, a := range c.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// mergeJUnit joins the passes' junit_01.xml into one suite, as one ginkgo
// run over every spec would have written it: the specs of each pass that
// ran, each spec once (a spec one pass left out by its label filter is
// skipped there and ran in the other), sorted by name as the framework
// sorts them, and the totals recounted.
func mergeJUnit(paths []string) ([]byte, error) {
	merged := junitSuites{}
	byName := map[string]rawTestcase{}
	var suite junitSuite
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var doc junitSuites
		if err := xml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for _, s := range doc.Suites {
			if suite.Name == "" {
				suite = junitSuite{Name: s.Name, Package: s.Package, Timestamp: s.Timestamp}
			}
			suite.Time += s.Time
			for _, c := range s.Cases {
				name := c.attr("name")
				if prev, ok := byName[name]; ok && prev.attr("status") != "skipped" {
					continue // the pass that ran it keeps it
				}
				byName[name] = c
			}
		}
	}
	if suite.Name == "" {
		return nil, fmt.Errorf("no test suite in %s", strings.Join(paths, ", "))
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		c := byName[n]
		suite.Cases = append(suite.Cases, c)
		suite.Tests++
		switch status := c.attr("status"); {
		case status == "skipped" || status == "pending":
			suite.Skipped++
		case slices.Contains(check.FailedStates, status):
			suite.Failures++
		}
	}
	merged.Suites = []junitSuite{suite}
	merged.Tests, merged.Failures, merged.Time = suite.Tests, suite.Failures, suite.Time
	out, err := xml.MarshalIndent(merged, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}

var releaseOf = regexp.MustCompile(`^v(1\.[0-9]+)\.`)

// writeSubmission writes dir/submission/v1.Y/turnstile from the run's
// logs and reports (runLogs), and returns the folder.
func writeSubmission(o Options, dir, release string, passes []pass, command string) (string, error) {
	m := releaseOf.FindStringSubmatch(release)
	if m == nil {
		return "", fmt.Errorf("release %q is not v1.Y.Z", release)
	}
	folder := filepath.Join(dir, "submission", "v"+m[1], productName)
	if err := os.RemoveAll(filepath.Join(dir, "submission")); err != nil {
		return "", err
	}
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return "", err
	}
	log, junit, err := runLogs(o.Runner, dir, passes)
	if err != nil {
		return "", err
	}
	product, err := os.ReadFile(o.Product)
	if err != nil {
		return "", err
	}
	out, err := exec.Command(filepath.Join(o.Bin, "kube-apiserver"), "--version").Output()
	if err != nil {
		return "", fmt.Errorf("kube-apiserver --version: %w", err)
	}
	product = []byte(strings.ReplaceAll(string(product), "${VERSION}", strings.TrimPrefix(strings.TrimSpace(string(out)), "Kubernetes ")))
	files := map[string][]byte{"e2e.log": log, "junit_01.xml": junit, "PRODUCT.yaml": product, "README.md": []byte(submissionReadme(o.Runner, release, command))}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(folder, name), data, 0o644); err != nil {
			return "", err
		}
	}
	return folder, nil
}

// runLogs are the submission's e2e.log and junit_01.xml: hydrophone's as it
// downloaded them; for ours, the passes' ginkgo logs one after the other,
// and their junit_01.xml merged.
func runLogs(runner, dir string, passes []pass) (log, junit []byte, err error) {
	if runner == runnerHydrophone {
		if log, err = os.ReadFile(filepath.Join(dir, "e2e.log")); err != nil {
			return nil, nil, err
		}
		junit, err = os.ReadFile(filepath.Join(dir, "junit_01.xml"))
		return log, junit, err
	}
	var reports []string
	for _, ps := range passes {
		data, err := os.ReadFile(filepath.Join(dir, "ginkgo-"+ps.name+".log"))
		if err != nil {
			return nil, nil, err
		}
		log = append(log, data...)
		reports = append(reports, filepath.Join(dir, "e2e-"+ps.name, "junit_01.xml"))
	}
	junit, err = mergeJUnit(reports)
	return log, junit, err
}

// submissionReadme is README.md: how to reproduce the run, exactly.
func submissionReadme(runner, release, command string) string {
	how := `runs upstream's
e2e.test and ginkgo of this release in two passes (the [Conformance] specs that may share the
cluster, in parallel; then the [Serial] ones alone), and writes this folder: e2e.log is the two
passes' output, one after the other, and junit_01.xml the e2e framework's report of each, merged.`
	if runner == runnerHydrophone {
		how = `runs
hydrophone (sigs.k8s.io/hydrophone) with --conformance, which starts upstream's conformance image of
this release (registry.k8s.io/conformance, built from the release's module and served to the nodes
by the run's own registry) in the cluster, and writes this folder: e2e.log and junit_01.xml are the
files hydrophone downloaded from the conformance pod, as it wrote them.`
	}
	return fmt.Sprintf(`# Turnstile %s

Turnstile is upstream's kube-apiserver with every admission controller the Kubernetes documentation
has described compiled in; this run had every one that admits conformant workloads switched on.

## How to reproduce

On a Linux machine with root, Go and the Go module proxy (nothing else is fetched: every binary and
image is built from the repository's go.mod files and Debian's packages), from a clone at the commit
this run was made from:

`+"```sh"+`
%s
make conformance-check DIR=<this folder>
`+"```"+`

The run starts a control plane (Turnstile's kube-apiserver, kube-controller-manager, kube-scheduler)
and two real worker nodes (containerd 2, the kubelet, kube-proxy) on the machine, %s
`, release, command, how)
}

// progressWriter passes ginkgo's verbose output to the terminal as a line
// a spec (its outcome and name) and the summaries, so that a run of
// hundreds of specs shows its progress without every spec's log. A spec's
// report starts at a separator. With parallel processes ginkgo prints it
// whole when the spec ends: the outcome ("• [3.1 seconds]", "• [FAILED]
// ..."), then the name. With one process it streams it: the name, the
// spec's log, then the outcome.
type progressWriter struct {
	out       io.Writer
	partial   []byte
	separated bool   // the last line was a separator
	outcome   string // a spec's outcome, waiting for its name
	name      string // a spec's name, waiting for its outcome
}

var progressLines = regexp.MustCompile(`^(Running Suite|Will run|Ran [0-9]+ of|SUCCESS!|FAIL!|Summarizing|  \[FAIL\]|  \[PANICKED\]|  \[TIMEDOUT\])`)

func (w *progressWriter) Write(p []byte) (int, error) {
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.line(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
}

func (w *progressWriter) line(l string) {
	separated := w.separated
	w.separated = false
	switch {
	case strings.HasPrefix(l, "------------------------------"):
		w.separated, w.outcome, w.name = true, "", ""
	case separated && strings.HasPrefix(l, "•"):
		w.outcome = strings.TrimSpace(l)
	case progressLines.MatchString(l):
		fmt.Fprintln(w.out, l)
	case separated && strings.TrimSpace(l) != "":
		w.name = strings.TrimSpace(l)
	case w.outcome != "" && strings.TrimSpace(l) != "":
		fmt.Fprintf(w.out, "%s %s\n", w.outcome, strings.TrimSpace(l))
		w.outcome = ""
	case w.name != "" && strings.HasPrefix(l, "•"):
		fmt.Fprintf(w.out, "%s %s\n", strings.TrimSpace(l), w.name)
		w.name = ""
	}
}

// Flush passes on a last line without its newline.
func (w *progressWriter) Flush() {
	if len(w.partial) > 0 {
		w.line(string(w.partial))
		w.partial = nil
	}
}
