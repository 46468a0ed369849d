// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package configfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzValidate feeds arbitrary configuration files to the check: it may
// refuse them, but only with an error that names the file, never a panic.
// `go test` runs it on the seed corpus (every case of TestValidate);
// `go test -fuzz FuzzValidate ./pkg/admission/configfile/` explores further.
func FuzzValidate(f *testing.F) {
	_, plugins := registry(f)
	// Every plugin's valid and invalid configuration lies next to the file,
	// so that a fuzzed path: can reach real plugin files.
	files := map[string]string{}
	for name, fixture := range fixtures {
		files[name+".yaml"] = fixture.valid
		files[name+"-invalid.yaml"] = fixture.invalid
	}
	dir := writeFiles(f, files)
	for _, c := range append(pluginCases(), fileCases...) {
		for name, content := range c.files {
			content = strings.ReplaceAll(content, "@DIR@", dir)
			content = strings.ReplaceAll(content, "plugin.yaml", "PodSecurity.yaml")
			if name == "admission.yaml" {
				f.Add([]byte(content))
			}
		}
	}
	file := filepath.Join(dir, "admission.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		err := Validate(file, plugins)
		if err != nil && !strings.HasPrefix(err.Error(), "admission-control-config-file "+file+": ") {
			t.Errorf("error does not name the file: %v", err)
		}
	})
}
