// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command verify-examples checks examples/admission the way an operator
// would: each example goes through `kube-apiserver --validate-only` (our
// built binary) in an AdmissionConfiguration entry of its own, with its
// plugin enabled, and must draw no finding about the admission
// configuration. Every plugin that reads a configuration
// (configfile.Configurable) must have an example, which names its plugins on
// its first line ("# Plugins: A, B"); a file that is neither an example nor
// an AdmissionConfiguration must be one an example refers to (a kubeconfig,
// say). `make verify` runs it.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/turnstile-k8s/turnstile/pkg/admission/configfile"
)

func main() {
	dir := flag.String("dir", "examples/admission", "the examples")
	bin := flag.String("bin", "_output/bin", "directory of the built kube-apiserver")
	flag.Parse()
	problems, checked, err := check(*dir, filepath.Join(*bin, "kube-apiserver"), configfile.Configurable())
	if err != nil {
		fmt.Fprintf(os.Stderr, "verify-examples: %v\n", err)
		os.Exit(1)
	}
	missing, err := unlisted(filepath.Dir(*dir), "README.md")
	if err != nil {
		fmt.Fprintf(os.Stderr, "verify-examples: %v\n", err)
		os.Exit(1)
	}
	problems = append(problems, missing...)
	for _, p := range problems {
		fmt.Fprintf(os.Stderr, "verify-examples: %s\n", p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	fmt.Printf("verify-examples: ok: %d examples, every one of %d configurable plugins, through kube-apiserver --validate-only\n", checked, len(configfile.Configurable()))
}

// example is one file of the examples directory, and what it configures.
type example struct {
	file    string
	plugins []string // an example's, from its "# Plugins:" line
	config  bool     // an AdmissionConfiguration
	enables []string // the plugins an AdmissionConfiguration names
}

// check returns what is wrong with the examples in dir, and how many it
// checked: kubeAPIServer validates them, each plugin of configurable must
// have one.
func check(dir, kubeAPIServer string, configurable []string) ([]string, int, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, 0, err
	}
	files, err := filepath.Glob(filepath.Join(abs, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, 0, fmt.Errorf("no examples in %s", dir)
	}
	var examples []example
	var others []string
	texts := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, 0, err
		}
		texts[f] = string(data)
		e, err := describe(f, data)
		if err != nil {
			return nil, 0, err
		}
		if e.plugins == nil && !e.config {
			others = append(others, f)
			continue
		}
		examples = append(examples, e)
	}
	var problems []string
	covered := map[string]bool{}
	for _, e := range examples {
		for _, p := range e.plugins {
			covered[p] = true
			if !slices.Contains(configurable, p) {
				problems = append(problems, fmt.Sprintf("%s: names %s, which reads no configuration (configurable: %s)", rel(dir, e.file), p, strings.Join(configurable, ", ")))
			}
		}
	}
	for _, p := range configurable {
		if !covered[p] {
			problems = append(problems, fmt.Sprintf("%s: no example configures %s (add one whose first line is \"# Plugins: %s\")", dir, p, p))
		}
	}
	for _, f := range others {
		referred := false
		for g, text := range texts {
			referred = referred || (g != f && strings.Contains(text, filepath.Base(f)))
		}
		if !referred {
			problems = append(problems, fmt.Sprintf("%s: neither an example (no \"# Plugins:\" first line) nor an AdmissionConfiguration, and no example refers to it", rel(dir, f)))
		}
	}
	scratch, err := os.MkdirTemp("", "verify-examples-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(scratch)
	for i, e := range examples {
		config, enable := e.file, e.enables
		if !e.config {
			config = filepath.Join(scratch, fmt.Sprintf("admission-%d.yaml", i))
			var entries strings.Builder
			for _, p := range e.plugins {
				fmt.Fprintf(&entries, "  - name: %s\n    path: %s\n", p, e.file)
			}
			if err := os.WriteFile(config, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"+entries.String()), 0o600); err != nil {
				return nil, 0, err
			}
			enable = e.plugins
		}
		findings, err := validate(kubeAPIServer, abs, config, enable)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", rel(dir, e.file), err)
		}
		for _, f := range findings {
			problems = append(problems, fmt.Sprintf("%s: kube-apiserver --validate-only refuses it: %s", rel(dir, e.file), f))
		}
	}
	return problems, len(examples), nil
}

// describe reads what an example configures: its "# Plugins:" first line,
// or, for an AdmissionConfiguration, the plugins its entries name.
func describe(file string, data []byte) (example, error) {
	e := example{file: file}
	first, _, _ := strings.Cut(string(data), "\n")
	if names, ok := strings.CutPrefix(first, "# Plugins:"); ok {
		for _, n := range strings.Split(names, ",") {
			if n = strings.TrimSpace(n); n != "" {
				e.plugins = append(e.plugins, n)
			}
		}
		if len(e.plugins) == 0 {
			return e, fmt.Errorf("%s: its \"# Plugins:\" line names no plugin", file)
		}
		return e, nil
	}
	var doc struct {
		Kind    string `json:"kind"`
		Plugins []struct {
			Name string `json:"name"`
		} `json:"plugins"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return e, fmt.Errorf("%s: %w", file, err)
	}
	if doc.Kind == "AdmissionConfiguration" {
		e.config = true
		for _, p := range doc.Plugins {
			e.enables = append(e.enables, p.Name)
		}
	}
	return e, nil
}

// finding is one problem kube-apiserver --validate-only -o json reports.
type finding struct {
	Source  string `json:"source"`
	Message string `json:"message"`
}

// validate runs kubeAPIServer --validate-only on config in dir (where an
// example's relative paths resolve) with plugins enabled, and returns the
// findings about the admission configuration. Findings about the flags this
// check does not give (certificates, service accounts) are not the
// examples'.
func validate(kubeAPIServer, dir, config string, plugins []string) ([]string, error) {
	if _, err := os.Stat(kubeAPIServer); err != nil {
		return nil, fmt.Errorf("%s is not built (make verify builds it): %w", kubeAPIServer, err)
	}
	kubeAPIServer, err := filepath.Abs(kubeAPIServer)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(kubeAPIServer, "--validate-only", "-o", "json", "--etcd-servers=http://127.0.0.1:1",
		"--admission-control-config-file="+config, "--enable-admission-plugins="+strings.Join(plugins, ","))
	cmd.Dir = dir
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, err
	}
	var findings []finding
	if err := json.Unmarshal(out, &findings); err != nil {
		return nil, fmt.Errorf("kube-apiserver --validate-only -o json printed no findings (%v): %s", err, out)
	}
	var mine []string
	for _, f := range findings {
		if f.Source == "admission-control-config-file" {
			mine = append(mine, f.Message)
		}
	}
	return mine, nil
}

func rel(dir, file string) string {
	return filepath.Join(dir, filepath.Base(file))
}

// unlisted names each file under root (the examples folder) that its index
// (examples/README.md, which says what each file configures and which page
// explains it) does not link to.
func unlisted(root, index string) ([]string, error) {
	text, err := os.ReadFile(filepath.Join(root, index))
	if err != nil {
		return nil, err
	}
	var problems []string
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == index {
			return err
		}
		if !strings.Contains(string(text), "("+filepath.ToSlash(rel)+")") {
			problems = append(problems, fmt.Sprintf("%s: %s does not list it (its plugin and the page that explains it)", filepath.Join(root, rel), filepath.Join(root, index)))
		}
		return nil
	})
	return problems, err
}
