// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/turnstile-k8s/turnstile/cmd/conformance/internal/profiles"
	"sigs.k8s.io/yaml"
)

func TestSnapshotAdmissionConfig(t *testing.T) {
	// all-compatible's own configuration: entries inline, in its directory
	// and in examples/admission.
	dir := t.TempDir()
	config, err := snapshotAdmissionConfig(filepath.Join("..", "..", "..", "..", profiles.AllCompatibleConfig), dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	original, err := os.ReadFile(filepath.Join("..", "..", "..", "..", profiles.AllCompatibleConfig))
	if err != nil {
		t.Fatal(err)
	}
	// Every entry is kept: inline configuration as it was, a path as the
	// name of a copy beside the new file, with the same content.
	want, have := pluginEntries(t, original), pluginEntries(t, got)
	if len(have) != len(want) {
		t.Fatalf("the copy has %d plugin entries, the original %d", len(have), len(want))
	}
	for i := range want {
		path, _ := want[i]["path"].(string)
		if path == "" {
			if !reflect.DeepEqual(have[i], want[i]) {
				t.Errorf("plugins[%d]: the copy has %v, the original %v", i, have[i], want[i])
			}
			continue
		}
		copied, _ := have[i]["path"].(string)
		if copied != filepath.Base(path) {
			t.Errorf("plugins[%d]: the copy's path is %q, want %q", i, copied, filepath.Base(path))
		}
		a, errA := os.ReadFile(filepath.Join("..", "..", "..", "..", filepath.Dir(profiles.AllCompatibleConfig), path))
		b, errB := os.ReadFile(filepath.Join(dir, copied))
		if errA != nil || errB != nil || string(a) != string(b) {
			t.Errorf("plugins[%d]: %s and its copy differ (%v, %v)", i, path, errA, errB)
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

// pluginEntries are an AdmissionConfiguration's plugins entries.
func pluginEntries(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var doc struct {
		Plugins []map[string]any `json:"plugins"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Plugins
}
