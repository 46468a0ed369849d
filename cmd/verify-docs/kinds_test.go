// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each kind of figure, planted once where it has no home, fails; the same
// text on its home page passes.
func TestMisplacedFigures(t *testing.T) {
	components := []pinned{
		{component: "etcd", version: "3.7.3"},
		{component: "CoreDNS", version: "1.14.6"},
		{component: "agnhost", version: "2.66.1"},
	}
	for _, tc := range []struct {
		name, file, prose string
		k                 kind
		want              string // "" for none
	}{
		// a suite's time
		{"make test's time outside the README", "docs/testing.md", "A warm make test takes 900 s on 2 cores.", evidence, `"900 s" after ` + "`make test`"},
		{"make test's time in the README", "README.md", "`make test` takes 900 s (15 minutes) warm.", reference, ""},
		{"a long suite's time outside its home", "docs/kubeadm.md", "`make test-upgrade` takes about 9 minutes once built.", reference, `"9 minutes" after ` + "`make test-upgrade`"},
		{"a long suite's time on its home", "docs/testing.md", "`make test-upgrade` takes about 9 minutes once built.", evidence, ""},
		{"make test's time before it", "docs/testing.md", "It adds 2 minutes to a warm `make test`.", evidence, ""},
		{"across a paragraph's lines", "docs/reliability.md", "Intro.\n\n`make test-ha` builds the nodes\nand takes about 4 minutes.", evidence, `docs/reliability.md:4: "4 minutes" after ` + "`make test-ha`"},
		{"not across a table's rows", "docs/reliability.md", "| `make test-ha` | faults |\n| 4 minutes | a row |", evidence, ""},
		// a benchmark figure
		{"a benchmark figure on a reference page", "docs/podsecuritypolicy.md", "A pod create takes 55 µs with the cache.", reference, `"55 µs": a measured figure's home is an evidence page`},
		{"a ratio on an explanation page", "docs/security.md", "It costs 1.014× upstream.", explanation, `"1.014×"`},
		{"a bare ratio on a reference page", "docs/admission-config.md", "A pod create allocates 1.0139 times upstream's bytes; 0.9967 of its objects.", reference, `"1.0139 times"`},
		{"a bare ratio at a sentence's end", "docs/admission-config.md", "Its ratio was 0.9967.", reference, `"0.9967"`},
		{"versions and addresses are no ratios", "docs/kubeadm.md", "Go 1.27.3, v1.37.2, 3.7.0-0, line 1.36, haproxy 2.6 at 10.0.0.11:6443; done 2 times.", reference, ""},
		{"a decimal percentage on a reference page", "docs/glossary.md", "PodSecurityPolicy is 0.45% of the CPU.", reference, `"0.45%"`},
		{"a benchmark figure on an evidence page", "docs/performance.md", "A pod create takes 55 µs with the cache.", evidence, ""},
		{"a setting", "docs/podsecuritypolicy.md", "A timer empties the cache every 10 s; a planted 5% must fail.", reference, ""},
		// a conformance count
		{"a conformance count on a reference page", "CONTRIBUTING.md", "The suite runs 462 specs on v1.37.2.", reference, `"462 specs": a conformance count's home is an evidence page`},
		{"a conformance count on an evidence page", "docs/conformance.md", "The suite ran 462 conformance specs.", evidence, ""},
		// a component version
		{"a pinned version restated", "docs/local-nodes.md", "The nodes run CoreDNS v1.14.6 and agnhost:2.66.1.", reference, `"CoreDNS v1.14.6": a component version's home is docs/reference/components.md`},
		{"a version no file pins", "docs/conformance.md", "The control plane ran etcd v3.7.0.", evidence, `"etcd v3.7.0": no file pins this version`},
		{"a pinned version on an evidence page", "docs/conformance.md", "The control plane ran etcd v3.7.3.", evidence, ""},
		{"another minor", "docs/local-nodes.md", "containerd 1.6 and etcd 3.5 lack it.", reference, ""},
		{"on the components page", componentsPage, "| etcd | 3.7.3 |", reference, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(append(misplacedFigures(tc.file, tc.prose, tc.k), restatedVersions(tc.file, tc.prose, tc.k, components)...), "\n")
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want one with %q", got, tc.want)
			}
		})
	}
}

// The index gives each page of docs/ one kind, and task pages live in
// docs/tasks.
func TestPageKinds(t *testing.T) {
	root := t.TempDir()
	index := strings.Join([]string{
		"# Docs",
		"## Tasks",
		"| [start](tasks/start.md) | [a task out of place](kubeadm.md) |",
		"## Reference",
		"[flags](flags.md), [start again](tasks/start.md), [lines](../lines/README.md)",
		"## Evidence",
		"[results](results.md#figures)",
		"## Elsewhere",
		"[not a kind](missing.md)",
	}, "\n")
	if err := os.MkdirAll(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, docsIndex), []byte(index), 0o644); err != nil {
		t.Fatal(err)
	}
	pages := []string{docsIndex, "docs/tasks/start.md", "docs/kubeadm.md", "docs/flags.md", "docs/results.md", "docs/unindexed.md", "README.md"}
	kinds, problems, err := pageKinds(root, pages)
	if err != nil {
		t.Fatal(err)
	}
	if kinds["docs/results.md"] != evidence || kinds["docs/flags.md"] != reference {
		t.Errorf("kinds: %v", kinds)
	}
	got := strings.Join(problems, "\n")
	for _, want := range []string{
		"docs/tasks/start.md is indexed as Tasks and as Reference",
		"docs/kubeadm.md: indexed as Tasks: task pages, and only they, live in docs/tasks",
		"docs/unindexed.md: not in docs/README.md",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if len(problems) != 3 {
		t.Errorf("%d problems, want 3:\n%s", len(problems), got)
	}
}

// A glossary term's first use on a page links to its entry; a later use, a
// use in code or a heading, and a common word's plain use need no link.
func TestUnlinkedTerms(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	glossary := "# Glossary\n\n### line\nA release.\n\n### the cost guard\nA test.\n\n### all-documented, same-plugins\nConfigurations.\n"
	if err := os.WriteFile(filepath.Join(root, glossaryPage), []byte(glossary), 0o644); err != nil {
		t.Fatal(err)
	}
	terms, err := glossaryTerms(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(terms) != 3 {
		t.Fatalf("terms %v: want the cost guard, all-documented, same-plugins (line is a common word)", terms)
	}
	for _, tc := range []struct {
		name, file, prose, want string
	}{
		{"linked first", "docs/a.md", "Run [the cost guard](glossary.md#the-cost-guard); the cost guard fails.", ""},
		{"unlinked first", "docs/a.md", "## The cost guard\nThe cost guard fails.\nSee [the cost guard](glossary.md#the-cost-guard).", `docs/a.md:2: "the cost guard" is first used without a link to its definition: [the cost guard](glossary.md#the-cost-guard)`},
		{"a plural, from the README", "README.md", "Both same-pluginses.", `README.md:1: "same-plugins" is first used without a link to its definition: [same-plugins](docs/glossary.md#all-documented-same-plugins)`},
		{"in code only", "docs/a.md", "Run `bench -same-plugins`, on the first line.", ""},
		{"a longer word", "docs/a.md", "Not all-documented-ish.", ""},
		{"the glossary itself", glossaryPage, "The cost guard.", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(unlinkedTerms(tc.file, tc.prose, terms), "\n")
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
