// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestAlternatives(t *testing.T) {
	for focus, want := range map[string][]string{
		"a":                        {"a"},
		"a|b|c":                    {"a", "b", "c"},
		`exec "cat /tmp/health"|b`: {`exec "cat /tmp/health"`, "b"},
		"(a|b) c|d":                {"(a|b) c", "d"},
		`a\|b|[|x]y|z`:             {`a\|b`, "[|x]y", "z"},
		"a||b":                     {"a", "", "b"},
	} {
		if got := alternatives(focus); !slices.Equal(got, want) {
			t.Errorf("alternatives(%q) = %q, want %q", focus, got, want)
		}
	}
}

// The user's report: twelve specs named, ten ran, and the run said
// nothing of the other two. Now each alternative that matched nothing is
// named; one with quotes, as upstream writes it, matches.
func TestUnmatchedAlternatives(t *testing.T) {
	names := []string{
		`[sig-node] Probing container should be restarted with a exec "cat /tmp/health" liveness probe [NodeConformance] [Conformance]`,
		`[sig-network] DNS should provide /etc/hosts entries for the cluster [Conformance]`,
	}
	focus := `Probing container should be restarted with a exec "cat /tmp/health" liveness probe|DNS should provide /etc/hosts|^\[sig-network\] DNS|DNS should resolve a typo'd name|^Kubernetes e2e suite \[sig-node\]|Pods should be renamed upstream`
	got, err := unmatchedAlternatives(focus, names)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"DNS should resolve a typo'd name", "Pods should be renamed upstream"}
	if !slices.Equal(got, want) {
		t.Errorf("unmatched = %q, want %q", got, want)
	}
	if report := focusReport(got); !strings.Contains(report, "FOCUS named 2 that matched no [Conformance] spec") || !strings.Contains(report, "- Pods should be renamed upstream") {
		t.Errorf("summary section:\n%s", report)
	}
	if _, err := unmatchedAlternatives("a|(b", nil); err == nil || !strings.Contains(err.Error(), `-focus alternative "(b"`) {
		t.Errorf("a broken alternative: %v", err)
	}
	if got, _ := unmatchedAlternatives("", names); got != nil {
		t.Errorf("no focus: %q", got)
	}
}

// make conformance FOCUS=... hands the runner the focus exactly as typed:
// double quotes, a `$`, a make reference, backquotes and a `|` survive
// both make and the shell.
func TestMakePassesFocusUntouched(t *testing.T) {
	focus := `Probing container should be restarted with a exec "cat /tmp/health" liveness probe|/etc/hosts$|$(HOME) ` + "`x`"
	skip := `it's [Serial]`
	out, err := exec.Command("make", "--no-print-directory", "-C", "../../../..",
		"--eval", `show-conformance-focus: ; @printf '%s\n%s\n' "$$CONFORMANCE_FOCUS" "$$CONFORMANCE_SKIP"`,
		"show-conformance-focus", "FOCUS="+focus, "SKIP="+skip).CombinedOutput()
	if err != nil {
		t.Fatalf("make: %v\n%s", err, out)
	}
	if got := string(out); got != focus+"\n"+skip+"\n" {
		t.Errorf("the recipe's environment has\n%s\nwant\n%s\n%s", got, focus, skip)
	}
}
