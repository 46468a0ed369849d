// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each kind of rot planted once, beside the same things done right: only
// the planted ones are reported, each naming the file, the line and what
// is missing.
func TestCheckFindsPlantedRot(t *testing.T) {
	root := t.TempDir()
	write := func(path, text string) {
		t.Helper()
		path = filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Makefile", "GO ?= go\nrun: build ## Run.\n\t$(GO) run .\nbuild test-e2e:\n\ttrue\nVAR := x\n")
	write("docs/guide.md", "# Guide\n\n## Step 1: run it (as root)\n\ntext\n\n## Step 1: run it (as root)\n\n## Pods again, 2026-11-02\n\n```sh\n# Run of March 2026\n```\n"+
		"Measured on v1.36.3, main is v1.37.2. A warm make test takes 900 s. Chain: 1,062 ns.\n")
	write("docs/README.md", "# Docs\n\n## Evidence\n\n[The guide](guide.md).\n")
	write("README.md", strings.Join([]string{
		"# Turnstile",
		"See [the guide](docs/guide.md), [its step](docs/guide.md#step-1-run-it-as-root),",
		"[the repeat](docs/guide.md#step-1-run-it-as-root-1) and [here](#turnstile) and [upstream](https://kubernetes.io/x#y).",
		"Planted: [gone](docs/gone.md) and [no step](docs/guide.md#step-2).",
		"`make run NODES=1`, `sudo make -C . LINE=1.36 test-e2e`, `make _output/bin/kubectl`, make sure.",
		"Planted: `make nosuch`.",
		"```sh",
		"_output/bin/local-up -dir /tmp/x \\",
		"    -nodes=1 -bogus",
		"kube-apiserver --validate-only -o json | jq .   # a comment -nocomment",
		"KUBECONFIG=x make test-e2e && make missing-target",
		"```",
		"`kubectl get pods -o wide --nosuch` is not ours. `kube-apiserver --secure-port=6443 --no-such-flag`.",
		"`kubectl run a --image=registry.k8s.io/e2e-test-images/agnhost:2.66.1`, `kubectl run b --image registry.k8s.io/e2e-test-images/agnhost:2.63.0`, `--image=nginx`.",
		"make test takes 15 minutes warm. The chain costs 1,062 ns.",
	}, "\n"))
	targets, err := makeTargets(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"run", "build", "test-e2e"} {
		if !targets[want] {
			t.Errorf("makeTargets lacks %q: %v", want, targets)
		}
	}
	if targets["VAR"] || targets["GO"] {
		t.Errorf("makeTargets took an assignment for a target: %v", targets)
	}
	flags := func(binary string) (map[string]bool, error) {
		return map[string]map[string]bool{
			"local-up":       {"dir": true, "nodes": true},
			"kube-apiserver": {"validate-only": true, "o": true, "secure-port": true},
		}[binary], nil
	}
	images := map[string]bool{"registry.k8s.io/e2e-test-images/agnhost:2.66.1": true}
	supported := lines{versions: map[string]bool{"v1.37.2": true, "v1.36.5": true}, nextMinor: 38}
	problems, n, err := check(root, rules{targets: targets, flags: flags, images: images, lines: supported})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`README.md:11: ` + "`make missing-target`" + `: the Makefile has no target "missing-target"`,
		`README.md:13: ` + "`kube-apiserver ... --no-such-flag`" + `: kube-apiserver does not accept -no-such-flag (its -h does not list it)`,
		`README.md:14: image registry.k8s.io/e2e-test-images/agnhost:2.63.0 is not one the local nodes have (build/oci: make node-images, make e2e-images), so its pull fails there`,
		`README.md:15: "1,062 ns": a measured figure's home is an evidence page (with its commit and command); this page is reference: link there`,
		`README.md:4: link "docs/gone.md": no such file`,
		`README.md:4: link "docs/guide.md#step-2": no heading in guide.md has the anchor #step-2`,
		`README.md:6: ` + "`make nosuch`" + `: the Makefile has no target "nosuch"`,
		`README.md:8: ` + "`local-up ... -bogus`" + `: local-up does not accept -bogus (its -h does not list it)`,
		`docs/guide.md: heading "Pods again, 2026-11-02" is titled by a date (say what holds now; git keeps when)`,
		`docs/guide.md:14: "900 s" after ` + "`make test`" + `: a suite's time is stated in README.md only; link there`,
		`docs/guide.md:14: 1,062ns is restated from README.md:15: state a figure on one page (with its commit and command) and link to it`,
		`docs/guide.md:14: v1.36.3 is no supported line's Kubernetes version (supported: v1.36.5, v1.37.2): name the line instead, or the version the line pins (make bump moves it in every doc)`,
	}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
	if n.files != 3 || n.links != 7 || n.makes != 5 || n.flags != 7 || n.images != 2 {
		t.Errorf("counts %+v, want 3 files, 7 relative links, 5 make targets, 7 flags, 2 images", n)
	}
}

func TestParseHelp(t *testing.T) {
	goFlag := "Usage of local-up:\n  -dir string\n    \tstate directory\n  -nodes int\n"
	pflag := "Flags:\n      --secure-port int   port\n  -o, --validate-output string   how\n  -v, --v Level   verbosity\n"
	for help, want := range map[string][]string{goFlag: {"dir", "nodes", "h"}, pflag: {"secure-port", "validate-output", "o", "v", "help"}} {
		got := parseHelp(help)
		for _, f := range want {
			if !got[f] {
				t.Errorf("parseHelp lacks %q: %v", f, got)
			}
		}
		if got["state"] || got["port"] {
			t.Errorf("parseHelp took a description for a flag: %v", got)
		}
	}
}
