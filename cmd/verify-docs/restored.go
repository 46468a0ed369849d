// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"
	"sigs.k8s.io/yaml"

	"github.com/turnstile-k8s/turnstile/pkg/admission/descriptor"
)

// The files that name the restored plugins outside Go code, which cannot
// import restored.Plugins and so are checked against it: a plugin added
// there and not here fails make verify, naming the file and the plugin.
// (The Go lists derive from restored.Plugins or are checked by their
// package's tests; the e2e rows and the Makefile's LINE_E2E by
// cmd/verify-e2e-coverage.)
const (
	readmeFile          = "README.md"
	productFile         = "cmd/conformance/PRODUCT.yaml"
	benchConfig         = "cmd/bench/admission-config.yaml"
	allCompatibleConfig = "cmd/conformance/all-compatible/admission-config.yaml"
)

// restoredLists checks the files above in root against plugins: each
// names every restored plugin (the README's opening and PRODUCT.yaml's
// description list them; the AdmissionConfigurations of make bench's
// all-documented and of make conformance's all-compatible and impact
// profiles have an entry for each, or a comment saying why none), and the
// AdmissionConfigurations configure no plugin that is neither upstream's
// nor restored.
func restoredLists(root string, plugins []descriptor.Plugin) ([]string, error) {
	var problems []string
	for _, file := range []string{readmeFile, productFile, benchConfig, allCompatibleConfig} {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			return nil, err
		}
		for _, p := range plugins {
			if !strings.Contains(string(data), p.Name) {
				problems = append(problems, fmt.Sprintf("%s does not name the restored plugin %s (pkg/admission/restored lists it)", file, p.Name))
			}
		}
	}
	for _, file := range []string{benchConfig, allCompatibleConfig} {
		names, err := configuredPlugins(filepath.Join(root, file))
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			known := slices.Contains(kubeoptions.AllOrderedPlugins, name) || slices.ContainsFunc(plugins, func(p descriptor.Plugin) bool { return p.Name == name })
			if !known {
				problems = append(problems, fmt.Sprintf("%s configures %s, which is neither upstream's plugin nor one pkg/admission/restored lists", file, name))
			}
		}
	}
	return problems, nil
}

// configuredPlugins are the names of an AdmissionConfiguration's entries.
func configuredPlugins(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var config struct {
		Plugins []struct {
			Name string `json:"name"`
		} `json:"plugins"`
	}
	if err := yaml.Unmarshal(data, &config); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var names []string
	for _, p := range config.Plugins {
		names = append(names, p.Name)
	}
	return names, nil
}
