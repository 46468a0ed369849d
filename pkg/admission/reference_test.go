// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package admission

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/turnstile-k8s/turnstile/pkg/admission/descriptor"
	"github.com/turnstile-k8s/turnstile/pkg/admission/restored"
)

// referencePage is the controllers table operators read; this test keeps it
// the registry's, on every line that runs the unit tests.
const referencePage = "../../docs/reference/admission-controllers.md"

// referenceRow is one row of the table.
type referenceRow struct {
	name, defaultState, lines, source string
	line                              int
}

// TestControllersReference checks the reference table against the registry
// of the line under test: the rows for this line name exactly the
// registered plugins, each default as the registry's, and "restored" exactly
// for the restored plugins.
func TestControllersReference(t *testing.T) {
	rows, err := readReference(referencePage)
	if err != nil {
		t.Fatal(err)
	}
	minor := minorOf(t, testedLine())
	g := applied(t).GenericAdmission
	registered := g.Plugins.Registered()
	var listed []string
	for _, r := range rows {
		on, err := onLine(r.lines, minor)
		if err != nil {
			t.Errorf("%s:%d: %s: %v", referencePage, r.line, r.name, err)
			continue
		}
		if !on {
			continue
		}
		listed = append(listed, r.name)
		if !slices.Contains(registered, r.name) {
			t.Errorf("%s:%d: %s is not registered on %s", referencePage, r.line, r.name, testedLine())
			continue
		}
		want := "on"
		if g.DefaultOffPlugins.Has(r.name) {
			want = "off"
		}
		if r.defaultState != want {
			t.Errorf("%s:%d: %s's default is %q, the registry's %q", referencePage, r.line, r.name, r.defaultState, want)
		}
		wantRestored := slices.ContainsFunc(restored.Plugins, func(p descriptor.Plugin) bool { return p.Name == r.name })
		if got := strings.HasPrefix(r.source, "[restored]("); got != wantRestored {
			t.Errorf("%s:%d: %s's source is %q; restored by Turnstile: %v", referencePage, r.line, r.name, r.source, wantRestored)
		}
	}
	for _, name := range registered {
		if !slices.Contains(listed, name) {
			t.Errorf("%s: %s is registered on %s but has no row for it", referencePage, name, testedLine())
		}
	}
	if !slices.IsSorted(names(rows)) {
		t.Errorf("%s: the rows are not in alphabetical order", referencePage)
	}
}

func names(rows []referenceRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.name)
	}
	return out
}

// readReference reads the table's rows: those after its header.
func readReference(path string) ([]referenceRow, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []referenceRow
	inTable := false
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "| controller |"):
			inTable = true
		case inTable && strings.HasPrefix(line, "|---"):
		case inTable && strings.HasPrefix(line, "| "):
			cells := strings.Split(strings.Trim(line, "| "), "|")
			if len(cells) != 5 {
				return nil, fmt.Errorf("%s:%d: want 5 cells (controller, type, default, lines, source), got %d", path, i+1, len(cells))
			}
			for j := range cells {
				cells[j] = strings.TrimSpace(cells[j])
			}
			rows = append(rows, referenceRow{name: cells[0], defaultState: cells[2], lines: cells[3], source: cells[4], line: i + 1})
		default:
			inTable = false
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no table with the header | controller | type | default | lines | source |", path)
	}
	return rows, nil
}

// onLine says whether a row's lines cell includes minor: empty for every
// line, "from 1.N" or "until 1.N".
func onLine(cell string, minor int) (bool, error) {
	if cell == "" {
		return true, nil
	}
	word, v, ok := strings.Cut(cell, " ")
	n, err := strconv.Atoi(strings.TrimPrefix(v, "1."))
	if !ok || err != nil || !strings.HasPrefix(v, "1.") {
		return false, fmt.Errorf("lines %q: want empty, \"from 1.N\" or \"until 1.N\"", cell)
	}
	switch word {
	case "from":
		return minor >= n, nil
	case "until":
		return minor <= n, nil
	}
	return false, fmt.Errorf("lines %q: want empty, \"from 1.N\" or \"until 1.N\"", cell)
}

// minorOf is N of "1.N".
func minorOf(t *testing.T, line string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimPrefix(line, "1."))
	if err != nil {
		t.Fatalf("line %q is not 1.N", line)
	}
	return n
}
