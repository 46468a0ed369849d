// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/turnstile-k8s/turnstile/cmd/conformance/internal/check"
	"github.com/turnstile-k8s/turnstile/cmd/conformance/internal/profiles"
)

// specReport is what the summary reads of a spec in ginkgo's JSON report
// (github.com/onsi/ginkgo/v2/types.SpecReport).
type specReport struct {
	ContainerHierarchyTexts []string
	LeafNodeText            string
	LeafNodeType            string
	State                   string
	RunTime                 time.Duration
	NumAttempts             int
	Failure                 *struct {
		Message  string
		Location struct {
			FileName   string
			LineNumber int
		}
	}
}

type suiteReport struct {
	RunTime     time.Duration
	SpecReports []specReport
}

// outcome is one spec that ran.
type outcome struct {
	name, pass, reason string
	took               time.Duration
}

// summary is a run's result over its passes.
type summary struct {
	profile                 profiles.Profile
	took                    time.Duration
	passes                  []string
	passed, failed, skipped []outcome
	// lost are the specs another profile's last run passed that this run
	// did not, by profile.
	lost map[string][]string
	// unmatchedFocus are the alternatives of -focus no spec matched.
	unmatchedFocus []string
}

func (s summary) ran() int { return len(s.passed) + len(s.failed) }

// missing are the names that no spec of this run had.
func (s summary) missing(names []string) []string {
	selected := s.selected()
	var out []string
	for _, n := range names {
		if !selected[n] {
			out = append(out, n)
		}
	}
	return out
}

// selected is the set of specs the run selected: those that passed, failed
// or skipped themselves.
func (s summary) selected() map[string]bool {
	set := map[string]bool{}
	for _, name := range s.names() {
		set[name] = true
	}
	return set
}

// passedSet is the set of specs that passed.
func (s summary) passedSet() map[string]bool {
	set := map[string]bool{}
	for _, o := range s.passed {
		set[o.name] = true
	}
	return set
}

// readPassed reads the passed.txt a run wrote into dir.
func readPassed(dir string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "passed.txt"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, name := range strings.Split(string(data), "\n") {
		if name != "" {
			names = append(names, name)
		}
	}
	return names, nil
}

// summarize reads the passes' JSON reports in dir, writes summary.md and
// passed.txt there, and compares with the other profiles' passed.txt.
func summarize(dir string, p profiles.Profile, took time.Duration, focus string) (summary, error) {
	s := summary{profile: p, took: took, lost: map[string][]string{}}
	for _, ps := range []string{"parallel", "serial"} {
		path := filepath.Join(dir, "report-"+ps+".json")
		data, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return s, err
		}
		var suites []suiteReport
		if err := json.Unmarshal(data, &suites); err != nil {
			return s, fmt.Errorf("%s: %w", path, err)
		}
		s.passes = append(s.passes, ps)
		for _, suite := range suites {
			s.add(ps, suite)
		}
	}
	if len(s.passes) == 0 {
		return s, fmt.Errorf("no ginkgo report in %s", dir)
	}
	return s, s.finish(dir, focus)
}

// summarizeJUnit is summarize for a run whose only report is the e2e
// framework's junit_01.xml in dir, as hydrophone downloads it.
func summarizeJUnit(dir string, p profiles.Profile, took time.Duration, focus string) (summary, error) {
	s := summary{profile: p, took: took, lost: map[string][]string{}, passes: []string{"hydrophone"}}
	path := filepath.Join(dir, "junit_01.xml")
	data, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("hydrophone wrote no report: %w", err)
	}
	cases, err := check.JUnitCases(data)
	if err != nil {
		return s, err
	}
	for _, c := range cases {
		s.addCase("hydrophone", c)
	}
	return s, s.finish(dir, focus)
}

// finish sorts the outcomes, writes passed.txt and summary.md in dir, and
// compares with the other runs in dir's parent.
func (s *summary) finish(dir, focus string) error {
	for _, list := range [][]outcome{s.passed, s.failed, s.skipped} {
		slices.SortFunc(list, func(a, b outcome) int { return strings.Compare(a.name, b.name) })
	}
	var names []string
	for _, o := range s.passed {
		names = append(names, o.name)
	}
	if err := os.WriteFile(filepath.Join(dir, "passed.txt"), []byte(strings.Join(names, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	s.compare(filepath.Dir(dir), filepath.Base(dir))
	unmatched, err := unmatchedAlternatives(focus, s.names())
	if err != nil {
		return err
	}
	s.unmatchedFocus = unmatched
	return os.WriteFile(filepath.Join(dir, "summary.md"), []byte(s.text()), 0o644)
}

// addCase counts one case of junit_01.xml. Specs that the filters left out
// are skipped with ginkgo's bare message "skipped": they did not run; a
// spec that skipped itself says why ("skipped - REASON").
func (s *summary) addCase(ps string, c check.JUnitCase) {
	if !c.IsSpec() {
		if c.Failed() {
			s.failed = append(s.failed, outcome{name: c.Name, pass: ps, reason: firstLine(c.Message())})
		}
		return
	}
	o := outcome{name: c.Spec(), pass: ps, took: time.Duration(c.Time * float64(time.Second)), reason: firstLine(c.Message())}
	switch {
	case c.Failed():
		o.reason = c.Status + ": " + o.reason
		s.failed = append(s.failed, o)
	case c.Skipped != nil && c.Skipped.Message == "skipped":
	case c.Skipped != nil || c.Status == "skipped":
		o.reason = strings.TrimPrefix(o.reason, "skipped - ")
		s.skipped = append(s.skipped, o)
	default:
		s.passed = append(s.passed, o)
	}
}

// add counts the specs of one report. Specs that the label filter left
// out are in the report too, skipped without an attempt: they did not run.
func (s *summary) add(ps string, suite suiteReport) {
	for _, r := range suite.SpecReports {
		if r.LeafNodeType != "It" {
			if r.State != "passed" && r.Failure != nil {
				// A failed BeforeSuite or AfterSuite fails the run.
				s.failed = append(s.failed, outcome{name: r.LeafNodeType, pass: ps, reason: firstLine(r.Failure.Message)})
			}
			continue
		}
		o := outcome{name: strings.Join(append(slices.Clone(r.ContainerHierarchyTexts), r.LeafNodeText), " "), pass: ps, took: r.RunTime}
		if r.Failure != nil {
			o.reason = firstLine(r.Failure.Message)
		}
		switch {
		case r.State == "passed":
			s.passed = append(s.passed, o)
		case r.State == "skipped" && r.NumAttempts == 0:
		case r.State == "skipped":
			s.skipped = append(s.skipped, o)
		default: // failed, panicked, timedout, interrupted, aborted
			o.reason = r.State + ": " + o.reason
			s.failed = append(s.failed, o)
		}
	}
}

// compare finds the specs that another run in out (another profile's, or
// the other runner's on this one) passed and this run, self, did not; with
// FOCUS or SKIP, only those this run selected count.
func (s *summary) compare(out, self string) {
	ran, passed := s.selected(), s.passedSet()
	others, _ := filepath.Glob(filepath.Join(out, "*", "passed.txt"))
	for _, path := range others {
		other := filepath.Base(filepath.Dir(path))
		if other == self {
			continue
		}
		names, err := readPassed(filepath.Dir(path))
		if err != nil {
			continue
		}
		for _, name := range names {
			if ran[name] && !passed[name] {
				s.lost[other] = append(s.lost[other], name)
			}
		}
	}
}

// text is summary.md: the head, then every spec that passed.
func (s summary) text() string {
	var b strings.Builder
	b.WriteString(s.head())
	b.WriteString("\n## Passed\n")
	for _, o := range s.passed {
		fmt.Fprintf(&b, "- %s (%s)\n", o.name, o.took.Round(100*time.Millisecond))
	}
	return b.String()
}

// head is the counts, and the specs that failed, were lost or skipped.
func (s summary) head() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Conformance: profile %s\n\n%s.\n\n", s.profile.Name, s.profile.Description)
	fmt.Fprintf(&b, "**%d passed, %d failed, %d skipped** of %d [Conformance] specs run (%s pass), in %s.\n",
		len(s.passed), len(s.failed), len(s.skipped), s.ran()+len(s.skipped), strings.Join(s.passes, " and "), s.took.Round(time.Second))
	if len(s.failed) > 0 {
		b.WriteString("\n## Failed\n")
		for _, o := range s.failed {
			fmt.Fprintf(&b, "- %s (%s pass)\n  %s\n", o.name, o.pass, o.reason)
		}
	}
	var others []string
	for other := range s.lost {
		others = append(others, other)
	}
	sort.Strings(others)
	for _, other := range others {
		fmt.Fprintf(&b, "\n## Passed by %s's last run, not by this one\n", other)
		for _, name := range s.lost[other] {
			fmt.Fprintf(&b, "- %s\n", name)
		}
	}
	b.WriteString(focusReport(s.unmatchedFocus))
	if len(s.skipped) > 0 {
		b.WriteString("\n## Skipped by the spec itself\n")
		for _, o := range s.skipped {
			fmt.Fprintf(&b, "- %s\n  %s\n", o.name, o.reason)
		}
	}
	return b.String()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
