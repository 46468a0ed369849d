// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Every page under docs/ is of one kind, and docs/README.md indexes the pages
// under a heading of each kind:
//   - tasks: a screen or two of commands that a named test runs (tasks.go);
//   - reference: what there is (controllers, flags, targets, versions),
//     kept apart from why and from results;
//   - explanation: why it is built as it is;
//   - evidence: measured figures, each with its commit and command.
//
// A measured figure's home is an evidence page: a page of another kind links
// to it. So is a suite's time (docs/testing.md; make test's own is the
// README's) and a conformance count. A component version's home is
// componentsPage. Pages outside docs/ (README.md, CONTRIBUTING.md, the
// READMEs of lines/, examples/ and test/e2e/) are held to reference's rules.
type kind string

const (
	tasks       kind = "Tasks"
	reference   kind = "Reference"
	explanation kind = "Explanation"
	evidence    kind = "Evidence"
)

// docsIndex is the index of the docs by kind.
const docsIndex = "docs/README.md"

// suiteTimeHome is where every make target's time is stated but make
// test's (makeTestTimeHome).
const suiteTimeHome = "docs/testing.md"

var (
	kindHeading = regexp.MustCompile(`^## (Tasks|Reference|Explanation|Evidence)\s*$`)
	indexLink   = regexp.MustCompile(`\]\(([^)#\s]+\.md)(#[^)]*)?\)`)
)

// pageKinds reads docsIndex: the kind of each page it links to under a
// kind's heading, and what is wrong with the index: a page of docs/ it does
// not list, or lists under two kinds, and a task page outside docs/tasks or
// a page of docs/tasks listed as another kind.
func pageKinds(root string, pages []string) (map[string]kind, []string, error) {
	data, err := os.ReadFile(filepath.Join(root, docsIndex))
	if err != nil {
		return nil, nil, err
	}
	kinds := map[string]kind{}
	var problems []string
	var current kind
	for i, line := range strings.Split(string(data), "\n") {
		if m := kindHeading.FindStringSubmatch(line); m != nil {
			current = kind(m[1])
			continue
		}
		if strings.HasPrefix(line, "## ") {
			current = ""
		}
		if current == "" {
			continue
		}
		for _, m := range indexLink.FindAllStringSubmatch(line, -1) {
			page := filepath.ToSlash(filepath.Join("docs", m[1]))
			if !strings.HasPrefix(page, "docs/") {
				continue // lines/README.md and the like: not a page of docs/
			}
			if k, ok := kinds[page]; ok {
				if k != current {
					problems = append(problems, fmt.Sprintf("%s:%d: %s is indexed as %s and as %s: a page is one kind", docsIndex, i+1, page, k, current))
				}
				continue
			}
			kinds[page] = current
		}
	}
	for _, page := range pages {
		if page == docsIndex || !strings.HasPrefix(page, "docs/") {
			continue
		}
		k, ok := kinds[page]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: not in %s: index it under the heading of its kind (Tasks, Reference, Explanation or Evidence)", page, docsIndex))
		case (k == tasks) != (filepath.Dir(page) == taskDir):
			problems = append(problems, fmt.Sprintf("%s: indexed as %s: task pages, and only they, live in %s", page, k, taskDir))
		}
	}
	return kinds, problems, nil
}

// kindOf is the kind whose rules page is held to.
func kindOf(page string, kinds map[string]kind) kind {
	if k, ok := kinds[page]; ok {
		return k
	}
	return reference
}

var (
	// makeTarget is a make command in prose; its target is the first group.
	makeTarget = regexp.MustCompile("\\bmake ([a-z][a-z0-9-]*)")
	// benchmarkFigure is a figure as a benchmark or a measurement reports
	// it: a time under a second, a ratio, or a figure with decimals. A
	// whole number of seconds or a whole percentage is a setting (a 10 s
	// cache, a planted 5%) as often as a result, and passes.
	benchmarkFigure = regexp.MustCompile(`\b(\d[\d,]*(\.\d+)? ?(ns|µs|ms|×)|\d[\d,]*\.\d+ ?(%|s|min|minutes|MiB|KiB|GiB|MB|KB|GB))(\W|$)`)
	// ratioFigure is a ratio written as a number: with three decimals or
	// more (the cost guard's 1.0139), or with any and "times". A dotted
	// version (v1.37.2, 3.7.0) or an address is none: the number may not
	// touch another dot or word.
	ratioFigure = regexp.MustCompile(`(?:^|[^\w.])(\d+\.\d+ times\b|\d+\.\d{3,})(?:\.(?:\s|$)|[^\w.]|$)`)
	// conformanceCount is a number of specs, as a run reports it.
	conformanceCount = regexp.MustCompile(`\b\d[\d,]* (conformance |parallel |serial )?specs?\b`)
)

// misplacedFigures reports a figure stated outside its home: a make
// target's time outside suiteTimeHome (make test's outside
// makeTestTimeHome), and on a page that is not evidence, a benchmark figure
// or a conformance count. Sentences run across the lines of a paragraph; a
// table's row is one paragraph.
func misplacedFigures(file, prose string, k kind) []string {
	var problems []string
	for _, s := range sentences(prose) {
		report := func(offset int, format string, args ...any) {
			problems = append(problems, fmt.Sprintf("%s:%d: ", file, s.line+strings.Count(s.text[:offset], "\n"))+fmt.Sprintf(format, args...))
		}
		if loc := makeTarget.FindStringSubmatchIndex(s.text); loc != nil {
			target, home := s.text[loc[2]:loc[3]], suiteTimeHome
			if target == "test" {
				home = makeTestTimeHome
			}
			if d := duration.FindStringIndex(s.text[loc[1]:]); d != nil && file != home {
				report(loc[1]+d[0], "%q after `make %s`: a suite's time is stated in %s only; link there", s.text[loc[1]+d[0]:loc[1]+d[1]], target, home)
				continue
			}
			if file == makeTestTimeHome && target == "test" {
				continue // the README states make test's figures
			}
		}
		if k == evidence {
			continue
		}
		for _, re := range []*regexp.Regexp{benchmarkFigure, ratioFigure} {
			for _, m := range re.FindAllStringSubmatchIndex(s.text, -1) {
				report(m[2], "%q: a measured figure's home is an evidence page (with its commit and command); this page is %s: link there", s.text[m[2]:m[3]], strings.ToLower(string(k)))
			}
		}
		for _, m := range conformanceCount.FindAllStringIndex(s.text, -1) {
			report(m[0], "%q: a conformance count's home is an evidence page; this page is %s: link there", s.text[m[0]:m[1]], strings.ToLower(string(k)))
		}
	}
	return problems
}

// sentence is one sentence of prose and the line it starts on.
type sentence struct {
	line int
	text string // newlines kept, so that a match's line can be counted
}

// sentences splits prose into paragraphs (lines up to a blank one; each
// table row, heading and list item starts one) and each paragraph into
// sentences.
func sentences(prose string) []sentence {
	var out []sentence
	lines := strings.Split(prose, "\n")
	for i := 0; i < len(lines); {
		if strings.TrimSpace(lines[i]) == "" {
			i++
			continue
		}
		start := i
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "" && !startsBlock(lines[i]) && !startsBlock(lines[i-1]); i++ {
		}
		paragraph := strings.Join(lines[start:i], "\n")
		from := 0
		for _, end := range sentenceEnd.FindAllStringIndex(paragraph, -1) {
			out = append(out, sentence{start + 1 + strings.Count(paragraph[:from], "\n"), paragraph[from:end[1]]})
			from = end[1]
		}
		if from < len(paragraph) {
			out = append(out, sentence{start + 1 + strings.Count(paragraph[:from], "\n"), paragraph[from:]})
		}
	}
	return out
}

// startsBlock reports a line that is a paragraph of its own or starts one:
// a table row, a heading, a list item.
func startsBlock(line string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, "|") || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "- ") ||
		len(t) > 2 && t[0] >= '0' && t[0] <= '9' && strings.HasPrefix(strings.TrimLeft(t, "0123456789"), ". ")
}
