package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// snapshotAdmissionConfig copies a profile's AdmissionConfiguration and the
// per-plugin files its path entries name into dir, each entry pointing at
// its copy, and returns the copy's path. The apiserver reloads its
// admission configuration when the file changes, so a run that read the
// repository's files would take up an edit of the checkout mid-run (one
// did); from the copy, a run keeps the configuration it started with, and
// its report directory records it.
func snapshotAdmissionConfig(config, dir string) (string, error) {
	data, err := os.ReadFile(config)
	if err != nil {
		return "", err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("%s: %w", config, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	plugins, _ := doc["plugins"].([]any)
	copied := map[string]string{} // copy's name: the file it came from
	for i, entry := range plugins {
		plugin, _ := entry.(map[string]any)
		path, _ := plugin["path"].(string)
		if path == "" {
			continue
		}
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(config), path)
		}
		name := filepath.Base(path)
		if from, ok := copied[name]; ok && from != path {
			return "", fmt.Errorf("%s: plugins[%d] (%v): %s and %s have the same name", config, i, plugin["name"], from, path)
		}
		copied[name] = path
		content, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("%s: plugins[%d] (%v): %w", config, i, plugin["name"], err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			return "", err
		}
		plugin["path"] = name
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return "", err
	}
	header := []byte(fmt.Sprintf("# A copy of %s for one run; each path entry names a copy beside it.\n", config))
	target := filepath.Join(dir, filepath.Base(config))
	return target, os.WriteFile(target, bytes.Join([][]byte{header, out}, nil), 0o644)
}
