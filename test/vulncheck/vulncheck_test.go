// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package vulncheck

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// govulncheck is TURNSTILE_GOVULNCHECK (make vulncheck builds it), or the
// tool line's govulncheck built into dir.
func govulncheck(t *testing.T, dir string) string {
	t.Helper()
	if bin := os.Getenv("TURNSTILE_GOVULNCHECK"); bin != "" {
		return bin
	}
	bin := filepath.Join(dir, "govulncheck")
	if out, err := exec.Command("go", "build", "-o", bin, "golang.org/x/vuln/cmd/govulncheck").CombinedOutput(); err != nil {
		t.Fatalf("building govulncheck: %v\n%s", err, out)
	}
	return bin
}

// database is -db for the project's database, or TURNSTILE_VULNDB (make
// vulncheck VULNDB=...).
func database(t *testing.T) string {
	if db := os.Getenv("TURNSTILE_VULNDB"); db != "" {
		return db
	}
	dir, err := filepath.Abs("vulndb")
	if err != nil {
		t.Fatal(err)
	}
	return "file://" + dir
}

// TestPlantedVulnerability builds testdata/planted's two programs, both on
// golang.org/x/text v0.3.7, older than GO-2022-1059's fix (v0.3.8), and
// scans each binary as make vulncheck scans ours, through the gate: the one
// that calls the vulnerable function fails, naming the advisory, the module
// at the version found and the fixed version; the one that never reaches it
// passes, which shows the reachability analysis at work.
func TestPlantedVulnerability(t *testing.T) {
	tmp := t.TempDir()
	tool := govulncheck(t, tmp)
	gate := filepath.Join(tmp, "gate")
	if out, err := exec.Command("go", "build", "-o", gate, "./gate").CombinedOutput(); err != nil {
		t.Fatalf("building the gate: %v\n%s", err, out)
	}
	db := database(t)
	for _, tc := range []struct {
		program string
		found   bool
	}{{"reachable", true}, {"unreachable", false}} {
		t.Run(tc.program, func(t *testing.T) {
			bin := filepath.Join(tmp, tc.program)
			build := exec.Command("go", "build", "-o", bin, "./"+tc.program)
			build.Dir = filepath.Join("testdata", "planted")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("building %s: %v\n%s", tc.program, err, out)
			}
			out, err := exec.Command(gate, "-govulncheck", tool, "-db", db, bin).CombinedOutput()
			var exit *exec.ExitError
			switch {
			case tc.found && errors.As(err, &exit) && exit.ExitCode() == 1:
				want := "GO-2022-1059  golang.org/x/text@v0.3.7, fixed in v0.3.8: "
				if !strings.Contains(string(out), want) || !strings.Contains(string(out), "reached: golang.org/x/text/language.ParseAcceptLanguage") {
					t.Errorf("the gate's report lacks %q and the function reached:\n%s", want, out)
				}
			case tc.found:
				t.Errorf("the gate on a binary that calls language.ParseAcceptLanguage from x/text v0.3.7: %v, want exit status 1:\n%s", err, out)
			case err != nil || strings.Contains(string(out), "GO-2022-1059"):
				t.Errorf("the gate on a binary that never reaches GO-2022-1059's functions: %v, want a pass that does not name it:\n%s", err, out)
			}
		})
	}
}
