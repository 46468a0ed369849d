// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/turnstile-k8s/turnstile/pkg/admission/descriptor"
)

// A plugin added to the list and to none of the files is named once for
// each file, and a configuration entry for no known plugin is named too.
func TestRestoredLists(t *testing.T) {
	root := t.TempDir()
	config := "plugins:\n  - name: EventRateLimit\n  - name: Known\n"
	for file, text := range map[string]string{
		readmeFile:          "restores Known.\n",
		productFile:         "description: Known\n",
		benchConfig:         config,
		allCompatibleConfig: config + "  - name: Typo\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, file)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, file), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plugins := []descriptor.Plugin{{Name: "Known"}, {Name: "Sixth"}}
	got, err := restoredLists(root, plugins)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md does not name the restored plugin Sixth (pkg/admission/restored lists it)",
		"cmd/bench/admission-config.yaml does not name the restored plugin Sixth (pkg/admission/restored lists it)",
		"cmd/conformance/PRODUCT.yaml does not name the restored plugin Sixth (pkg/admission/restored lists it)",
		"cmd/conformance/all-compatible/admission-config.yaml configures Typo, which is neither upstream's plugin nor one pkg/admission/restored lists",
		"cmd/conformance/all-compatible/admission-config.yaml does not name the restored plugin Sixth (pkg/admission/restored lists it)",
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("restoredLists:\n got %q\nwant %q", got, want)
	}
}
