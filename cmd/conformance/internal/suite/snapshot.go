// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/turnstile-k8s/turnstile/pkg/admission/configfile"
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
	resolved := configfile.Read(config, nil).EntrySources() // paths as the apiserver resolves them
	copied := map[string]string{}                           // copy's name: the file it came from
	for i, entry := range plugins {
		plugin, _ := entry.(map[string]any)
		if p, _ := plugin["path"].(string); p == "" {
			continue
		}
		name, _ := plugin["name"].(string)
		path := strings.TrimPrefix(resolved[name], "path ")
		base := filepath.Base(path)
		if from, ok := copied[base]; ok && from != path {
			return "", fmt.Errorf("%s: plugins[%d] (%v): %s and %s have the same name", config, i, name, from, path)
		}
		copied[base] = path
		content, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("%s: plugins[%d] (%v): %w", config, i, name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, base), content, 0o644); err != nil {
			return "", err
		}
		plugin["path"] = base
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return "", err
	}
	header := []byte(fmt.Sprintf("# A copy of %s for one run; each path entry names a copy beside it.\n", config))
	target := filepath.Join(dir, filepath.Base(config))
	return target, os.WriteFile(target, append(header, out...), 0o644)
}
