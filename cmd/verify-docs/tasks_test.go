// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckTaskPage(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "test", "e2e"), 0o755); err != nil {
		t.Fatal(err)
	}
	test := "package e2e\n\nfunc TestQuickStart(t *testing.T) { runTaskPage(t, \"../../docs/tasks/quick-start.md\") }\n" +
		"func TestOther(t *testing.T) {}\n"
	if err := os.WriteFile(filepath.Join(root, "test", "e2e", "x_test.go"), []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	good := "# Quick start\n\n`TestQuickStart` runs this page.\n\n```sh\n# terminal 1\nmake run\n```\n\nWait for `--timeout=3m` as needed; Go 1.26 or later.\n"
	for _, tc := range []struct {
		name, page, doc string
		want            []string
	}{
		{name: "a page its test runs", page: "docs/tasks/quick-start.md", doc: good},
		{name: "a measured figure in prose", page: "docs/tasks/quick-start.md", doc: good + "It is ready in about 4 s, 1.003× upstream.\n",
			want: []string{`docs/tasks/quick-start.md:11: "4 s": a task page states no measured figure`, `docs/tasks/quick-start.md:11: "1.003×": a task page`}},
		{name: "a figure in a command is a command", page: "docs/tasks/quick-start.md", doc: good + "```sh\n# terminal 2\nsleep 4s\n```\n"},
		{name: "no test named", page: "docs/tasks/quick-start.md", doc: "# Quick start\n",
			want: []string{"docs/tasks/quick-start.md: names no test"}},
		{name: "a test that does not read the page", page: "docs/tasks/other.md", doc: "`TestOther` runs it.\n",
			want: []string{"docs/tasks/other.md: TestOther (test/e2e/x_test.go) does not read docs/tasks/other.md"}},
		{name: "a test that does not exist", page: "docs/tasks/quick-start.md", doc: "`TestGone` runs it.\n",
			want: []string{"docs/tasks/quick-start.md: TestGone, which it names as the test that runs it, is not in test/e2e"}},
		{name: "over two screens", page: "docs/tasks/quick-start.md", doc: good + strings.Repeat("more\n", maxTaskLines),
			want: []string{"docs/tasks/quick-start.md: 130 lines; a task page is at most 120"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkTaskPage(root, tc.page, tc.doc)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("problem %d: %s\nwant it to start with %s", i, got[i], w)
				}
			}
		})
	}
}
