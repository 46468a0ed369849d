// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeAPIServer stands in for kube-apiserver --validate-only -o json: it
// refuses a configuration whose entries' files hold "mdoe" (a typo), and
// always reports a flag problem, which is not the examples'.
const fakeAPIServer = `#!/bin/sh
for a in "$@"; do case $a in --admission-control-config-file=*) config=${a#*=} ;; esac; done
refused=
for f in $(sed -n 's/^ *path: //p' "$config") "$config"; do grep -q mdoe "$f" && refused=$f; done
if [ -n "$refused" ]; then
  echo '[{"source":"admission-control-config-file","message":"unknown field \"mdoe\" in '"$refused"'"},{"source":"flags","message":"service-account-issuer is a required flag"}]'
  exit 1
fi
echo '[{"source":"flags","message":"service-account-issuer is a required flag"}]'
exit 1
`

func TestCheckFindsPlantedProblems(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(t.TempDir(), "kube-apiserver")
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(bin, fakeAPIServer)
	write(filepath.Join(dir, "a.yaml"), "# Plugins: A\nkind: Configuration\n")
	write(filepath.Join(dir, "bc.yaml"), "# Plugins: B, C\nkind: Configuration\nkubeconfig: bc-kubeconfig.yaml\n")
	write(filepath.Join(dir, "bc-kubeconfig.yaml"), "kind: Config\n")
	write(filepath.Join(dir, "admission-config.yaml"), "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n  - name: A\n    path: a.yaml\n")

	problems, n, err := check(dir, bin, []string{"A", "B", "C"})
	if err != nil || len(problems) != 0 || n != 3 {
		t.Fatalf("clean examples: %d checked, problems %v, error %v; want 3, none", n, problems, err)
	}

	// Planted: a typo the binary refuses, a plugin without an example, a
	// file nothing refers to, a plugin that takes no configuration.
	write(filepath.Join(dir, "bc.yaml"), "# Plugins: B, C\nkind: Configuration\nmdoe: x\nkubeconfig: bc-kubeconfig.yaml\n")
	write(filepath.Join(dir, "stray.yaml"), "kind: Something\n")
	write(filepath.Join(dir, "e.yaml"), "# Plugins: E\nkind: Configuration\n")
	problems, _, err = check(dir, bin, []string{"A", "B", "C", "D"})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(problems, "\n")
	for _, want := range []string{
		dir + ": no example configures D",
		dir + "/e.yaml: names E, which reads no configuration",
		dir + "/stray.yaml: neither an example",
		dir + `/bc.yaml: kube-apiserver --validate-only refuses it: unknown field "mdoe"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "service-account-issuer") {
		t.Errorf("a flag problem was taken for the examples':\n%s", got)
	}
	if len(problems) != 4 {
		t.Errorf("%d problems, want 4:\n%s", len(problems), got)
	}
}

func TestCheckNeedsTheBinary(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("# Plugins: A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := check(dir, filepath.Join(dir, "no-such-kube-apiserver"), []string{"A"})
	if err == nil || !strings.Contains(err.Error(), "is not built (make verify builds it)") {
		t.Errorf("error %v, want one saying the binary is not built", err)
	}
}

// A file the index does not link to is named; one it links to, in any
// folder, is not.
func TestUnlisted(t *testing.T) {
	root := t.TempDir()
	for path, text := range map[string]string{
		"README.md":              "| [admission/a.yaml](admission/a.yaml) | A |\n| [other/b.yaml](other/b.yaml) | B |\n",
		"admission/a.yaml":       "# Plugins: A\n",
		"admission/planted.yaml": "# Plugins: C\n",
		"other/b.yaml":           "kind: B\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, path), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := unlisted(root, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.Contains(got[0], "planted.yaml") {
		t.Errorf("unlisted = %q, want only planted.yaml", got)
	}
	if got, err := unlisted("../../examples", "README.md"); err != nil || len(got) > 0 {
		t.Errorf("examples/README.md: %q, %v", got, err)
	}
}
