// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	elf := testBinary(t)
	pe := make([]byte, 0x100)
	copy(pe, "MZ")
	pe[0x3c] = 0x80
	copy(pe[0x80:], "PE\x00\x00")
	mzText := append([]byte("MZ is how this note starts"), bytes.Repeat([]byte(" text"), 20)...)

	for _, tc := range []struct {
		name       string
		content    []byte
		executable bool
		want       string // "" when the file is fine
	}{
		{"Go source", []byte("package main\n"), false, ""},
		{"shell script with the executable bit", []byte("#!/usr/bin/env bash\necho hi\n"), true, ""},
		{"ELF executable (a go test binary)", elf, true, "ELF executable"},
		{"ELF without the executable bit", elf[:4096], false, "ELF executable"},
		{"PE executable", pe, false, "PE executable"},
		{"text that starts with MZ", mzText, false, ""},
		{"Mach-O 64-bit", []byte{0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1}, false, "Mach-O executable"},
		{"WebAssembly", []byte("\x00asm\x01\x00\x00\x00"), false, "WebAssembly executable"},
		{"binary data with the executable bit", []byte("data\x00\x01\x02"), true, "binary file with the executable bit"},
		{"binary data without it (a fixture)", []byte("data\x00\x01\x02"), false, ""},
		{"exactly 2 MiB of text", bytes.Repeat([]byte("a"), maxSize), false, ""},
		{"more than 2 MiB of text", bytes.Repeat([]byte("a"), maxSize+1), false, "more than the 2097152 a tracked file may have"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(path, tc.content, 0o644); err != nil {
				t.Fatal(err)
			}
			got := check(path, tc.executable)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("check = %q, want %q", got, tc.want)
			}
		})
	}
	if got := check(filepath.Join(t.TempDir(), "deleted"), false); got != "" {
		t.Errorf("a tracked file deleted from the work tree: %q", got)
	}
}

// In a repository: a committed binary is found by its path, whatever its
// name, and so is one that is only staged; sources and scripts pass.
func TestTrackedProblems(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	elf := testBinary(t)
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.test", "-c", "commit.gpgsign=false"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name string, data []byte, mode os.FileMode) {
		t.Helper()
		path := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, mode); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q")
	write("main.go", []byte("package main\n"), 0o644)
	write("hack/run.sh", []byte("#!/bin/sh\necho ok\n"), 0o755)
	git("add", ".")
	git("commit", "-q", "-m", "sources")
	if problems, err := trackedProblems(repo); err != nil || len(problems) != 0 {
		t.Fatalf("sources only: %v, %v", problems, err)
	}
	write("pkg/foo/foo.test", elf, 0o755)
	write("docs/notes.txt", elf[:1000], 0o644)
	git("add", ".")
	problems, err := trackedProblems(repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 2 || !strings.HasPrefix(problems[0], "docs/notes.txt: ELF executable") || !strings.HasPrefix(problems[1], "pkg/foo/foo.test: ELF executable") {
		t.Errorf("problems %q, want the two ELF files by path", problems)
	}
	if _, err := trackedProblems(t.TempDir()); err == nil {
		t.Error("a directory that is not a repository passed")
	}
}

// testBinary is this test's own executable: a real ELF file.
func testBinary(t *testing.T) []byte {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	elf, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	return elf
}
