package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSnapshotAdmissionConfig(t *testing.T) {
	// all-compatible's own configuration: entries inline, in its directory
	// and in examples/admission.
	dir := t.TempDir()
	config, err := snapshotAdmissionConfig(filepath.Join("..", "..", allCompatibleConfig), dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: EventRateLimit", "qps: 500", "path: exec.yaml", "path: persistentvolumelabel.yaml", "path: securitycontextdeny.yaml"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("the copy lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(string(got), "path: ../") {
		t.Errorf("the copy still points into the repository:\n%s", got)
	}
	for _, name := range []string{"exec.yaml", "persistentvolumelabel.yaml", "securitycontextdeny.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}

	// An edit of the original after the copy does not reach the copy.
	src := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(src, "admission.yaml"), "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: A\n  path: a.yaml\n")
	write(filepath.Join(src, "a.yaml"), "before\n")
	copyDir := t.TempDir()
	if _, err := snapshotAdmissionConfig(filepath.Join(src, "admission.yaml"), copyDir); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(src, "a.yaml"), "after\n")
	if got, _ := os.ReadFile(filepath.Join(copyDir, "a.yaml")); string(got) != "before\n" {
		t.Errorf("the copy of a.yaml is %q, want %q", got, "before\n")
	}

	// Two entries whose files share a name cannot share the directory.
	if err := os.Mkdir(filepath.Join(src, "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(src, "b", "a.yaml"), "other\n")
	write(filepath.Join(src, "clash.yaml"), "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: A\n  path: a.yaml\n- name: B\n  path: b/a.yaml\n")
	_, err = snapshotAdmissionConfig(filepath.Join(src, "clash.yaml"), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "plugins[1] (B)") || !strings.Contains(err.Error(), "the same name") {
		t.Errorf("got %v, want an error naming plugins[1] (B) and the clash", err)
	}

	// A missing file is named with its entry.
	write(filepath.Join(src, "missing.yaml"), "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: C\n  path: none.yaml\n")
	_, err = snapshotAdmissionConfig(filepath.Join(src, "missing.yaml"), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "plugins[0] (C)") {
		t.Errorf("got %v, want an error naming plugins[0] (C)", err)
	}
}
