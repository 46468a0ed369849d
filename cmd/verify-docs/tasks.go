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

// Task pages (docs/tasks/) are a screen or two of commands that a named test
// runs. They hold no measured figure: a figure's home is the page that
// measured it, with its commit and command, which a task page links to.

// taskDir holds the task pages.
const taskDir = "docs/tasks"

// maxTaskLines is about two screens.
const maxTaskLines = 120

var (
	namedTest = regexp.MustCompile("`(Test[A-Za-z0-9_]+)`")
	// measured is a figure with a unit of time, size or ratio, as a
	// result states it ("13.1 µs", "4 s", "1.003×", "7%").
	measured = regexp.MustCompile(`\b\d[\d,]*(\.\d+)? ?(×|%|ns|µs|ms|s|seconds?|min|minutes?|MiB|KiB|GiB|MB|KB|GB)(\W|$)`)
)

// checkTaskPage reports what keeps a task page from being one: over two
// screens, a measured figure in its prose, or no test that runs it (one
// named on the page, that exists in test/e2e and reads the page).
func checkTaskPage(root, rel, doc string) []string {
	var problems []string
	if n := strings.Count(doc, "\n"); n > maxTaskLines {
		problems = append(problems, fmt.Sprintf("%s: %d lines; a task page is at most %d (two screens): move reference, explanation and results to pages of their kind", rel, n, maxTaskLines))
	}
	for i, line := range strings.Split(splitFencesOnly(doc), "\n") {
		for _, m := range measured.FindAllStringSubmatch(line, -1) {
			f := strings.TrimSpace(strings.TrimSuffix(m[0], m[3]))
			problems = append(problems, fmt.Sprintf("%s:%d: %q: a task page states no measured figure; link to the evidence page that has it", rel, i+1, f))
		}
	}
	m := namedTest.FindStringSubmatch(doc)
	if m == nil {
		return append(problems, fmt.Sprintf("%s: names no test that runs its commands (`TestX`, in test/e2e)", rel))
	}
	if p := testReads(root, m[1], rel); p != "" {
		problems = append(problems, fmt.Sprintf("%s: %s", rel, p))
	}
	return problems
}

// testReads says why test, in test/e2e, is not one that runs page; "" if
// it is: its function exists and its file names the page.
func testReads(root, test, page string) string {
	files, err := filepath.Glob(filepath.Join(root, "test", "e2e", "*_test.go"))
	if err != nil {
		return err.Error()
	}
	decl := "func " + test + "(t *testing.T)"
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err.Error()
		}
		if strings.Contains(string(data), decl) {
			if !strings.Contains(string(data), page) {
				return fmt.Sprintf("%s (test/e2e/%s) does not read %s", test, filepath.Base(f), page)
			}
			return ""
		}
	}
	return fmt.Sprintf("%s, which it names as the test that runs it, is not in test/e2e", test)
}
