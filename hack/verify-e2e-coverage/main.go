// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command verify-e2e-coverage fails when an admission plugin our binary
// registers has no end-to-end test. test/e2e/README.md holds the coverage
// table: one row per registered plugin, naming the tests that prove it. The
// command checks that every registered name has a row, every row names a
// registered plugin, and every test a row names exists in test/e2e.
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"github.com/turnstile-k8s/turnstile/pkg/admission"
)

// heading starts the coverage table's section in the README.
const heading = "## Admission controllers"

var (
	testRef  = regexp.MustCompile("`(Test[A-Za-z0-9_]+)(/[^`]*)?`")
	testFunc = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(t \*testing\.T\)`)
)

func main() {
	if err := verify("test/e2e"); err != nil {
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
