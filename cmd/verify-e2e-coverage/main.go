// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command verify-e2e-coverage fails when an admission plugin our binary
// registers has no end-to-end test. test/e2e/README.md holds the coverage
// table: one row per registered plugin, naming the tests that prove it. The
// command checks that every registered name has a row, every row names a
// registered plugin, and every test a row names exists in test/e2e; and
// that the older lines' tier runs an e2e test of every restored plugin: the
// Makefile's LINE_E2E matches one of the tests its row names.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"github.com/turnstile-k8s/turnstile/pkg/admission"
	"github.com/turnstile-k8s/turnstile/pkg/admission/descriptor"
	"github.com/turnstile-k8s/turnstile/pkg/admission/restored"
)

// heading starts the coverage table's section in the README.
const heading = "## Admission controllers"

var (
	testRef  = regexp.MustCompile("`(Test[A-Za-z0-9_]+)(/[^`]*)?`")
	testFunc = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(t \*testing\.T\)`)
)

func main() {
	err := verify("test/e2e")
	if err == nil {
		err = verifyLines("test/e2e/README.md", "Makefile", restored.Plugins)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "verify: %v\n", err)
		os.Exit(1)
	}
}

func verify(dir string) error {
	o := kubeoptions.NewAdmissionOptions()
	if err := admission.Apply(o.GenericAdmission); err != nil {
		return err
	}
	registered := o.GenericAdmission.Plugins.Registered()

	readme := filepath.Join(dir, "README.md")
	rows, err := coverageRows(readme)
	if err != nil {
		return err
	}
	tests, err := testFuncs(dir)
	if err != nil {
		return err
	}

	var problems []string
	for _, name := range registered {
		if _, ok := rows[name]; !ok {
			problems = append(problems, fmt.Sprintf("%s is registered but has no row", name))
		}
	}
	for name, refs := range rows {
		if !slices.Contains(registered, name) {
			problems = append(problems, fmt.Sprintf("row %s names no registered plugin", name))
		}
		if len(refs) == 0 {
			problems = append(problems, fmt.Sprintf("row %s names no test", name))
		}
		for _, ref := range refs {
			if !tests[ref] {
				problems = append(problems, fmt.Sprintf("row %s names %s, which is not a test function in %s", name, ref, dir))
			}
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return fmt.Errorf("%s, section %q, does not cover the registry:\n  %s", readme, heading, strings.Join(problems, "\n  "))
	}
	return nil
}

// lineE2E is the Makefile variable whose regular expression selects the
// e2e tests an older line runs against its own binaries.
const lineE2E = "LINE_E2E := "

// verifyLines checks that the Makefile's LINE_E2E matches at least one of
// the tests readme's row names for each restored plugin, so that every
// older line tests each of them end to end.
func verifyLines(readme, makefile string, plugins []descriptor.Plugin) error {
	rows, err := coverageRows(readme)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(makefile)
	if err != nil {
		return err
	}
	var expr string
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, lineE2E); ok {
			expr = strings.ReplaceAll(v, "$$", "$")
		}
	}
	if expr == "" {
		return fmt.Errorf("%s has no %q line", makefile, lineE2E)
	}
	runs, err := regexp.Compile(expr)
	if err != nil {
		return fmt.Errorf("%s: LINE_E2E: %w", makefile, err)
	}
	var problems []string
	for _, p := range plugins {
		if !slices.ContainsFunc(rows[p.Name], runs.MatchString) {
			problems = append(problems, fmt.Sprintf("%s's LINE_E2E runs none of the tests %s's row %s names (%s): the older lines would not test the restored plugin", makefile, readme, p.Name, strings.Join(rows[p.Name], ", ")))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// coverageRows maps each row's plugin name to the top-level tests it names.
func coverageRows(readme string) (map[string][]string, error) {
	f, err := os.Open(readme)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows := map[string][]string{}
	in := false
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == heading
		case in && strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| controller ") && !strings.HasPrefix(line, "|---"):
			cells := strings.Split(line, "|")
			name := strings.Trim(strings.TrimSpace(cells[1]), "`")
			if _, dup := rows[name]; dup {
				return nil, fmt.Errorf("%s: %s has two rows", readme, name)
			}
			rows[name] = nil
			for _, m := range testRef.FindAllStringSubmatch(cells[len(cells)-2], -1) {
				rows[name] = append(rows[name], m[1])
			}
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s has no section %q with a coverage table", readme, heading)
	}
	return rows, nil
}

// testFuncs is the set of top-level test functions in dir.
func testFuncs(dir string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	tests := map[string]bool{}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(src), -1) {
			tests[m[1]] = true
		}
	}
	return tests, nil
}
