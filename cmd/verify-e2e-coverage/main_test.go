// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"github.com/turnstile-k8s/turnstile/pkg/admission"
	"github.com/turnstile-k8s/turnstile/pkg/admission/descriptor"
)

func registered(t *testing.T) []string {
	o := kubeoptions.NewAdmissionOptions()
	if err := admission.Apply(o.GenericAdmission); err != nil {
		t.Fatal(err)
	}
	return o.GenericAdmission.Plugins.Registered()
}

// writeSuite writes a README whose table has a row per name, each naming
// TestCovered, and a test file defining it.
func writeSuite(t *testing.T, names []string, extraRows string) string {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("# E2E\n\n" + heading + "\n\n| controller | what | tests |\n|---|---|---|\n")
	for _, n := range names {
		fmt.Fprintf(&b, "| %s | it works | `TestCovered/%s` |\n", n, n)
	}
	b.WriteString(extraRows + "\n## Other\n\n| NotAPlugin | x | `TestMissing` |\n")
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	src := "package e2e\n\nimport \"testing\"\n\nfunc TestCovered(t *testing.T) {}\n"
	if err := os.WriteFile(filepath.Join(dir, "covered_test.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCompleteTablePasses(t *testing.T) {
	if err := verify(writeSuite(t, registered(t), "")); err != nil {
		t.Fatal(err)
	}
}

func TestGapsAreReported(t *testing.T) {
	names := registered(t)
	dir := writeSuite(t, names[1:], "| Bogus | x | `TestCovered` |\n| "+names[0]+"X | x | `TestNowhere` |\n| Untested | x | none |")
	err := verify(dir)
	if err == nil {
		t.Fatal("no error for a table with gaps")
	}
	for _, want := range []string{
		names[0] + " is registered but has no row",
		"row Bogus names no registered plugin",
		"row " + names[0] + "X names TestNowhere, which is not a test function",
		"row Untested names no test",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "NotAPlugin") {
		t.Errorf("a row outside the section was read:\n%v", err)
	}
}

// A restored plugin whose row names no test LINE_E2E matches is reported:
// the older lines would not test it.
func TestLinesRunEveryRestoredPlugin(t *testing.T) {
	dir := t.TempDir()
	readme, makefile := filepath.Join(dir, "README.md"), filepath.Join(dir, "Makefile")
	table := heading + "\n\n| controller | what | tests |\n|---|---|---|\n| Known | x | `TestKnown/case` |\n| Sixth | x | `TestSixth`, `TestOther` |\n"
	if err := os.WriteFile(readme, []byte(table), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(makefile, []byte("LINE_E2E := ^Test(Version|Known)$$\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := verifyLines(readme, makefile, []descriptor.Plugin{{Name: "Known"}}); err != nil {
		t.Fatal(err)
	}
	err := verifyLines(readme, makefile, []descriptor.Plugin{{Name: "Known"}, {Name: "Sixth"}})
	if err == nil || !strings.Contains(err.Error(), "row Sixth names (TestSixth, TestOther)") || strings.Contains(err.Error(), "Known") {
		t.Errorf("verifyLines = %v, want the Sixth row alone reported", err)
	}
}
