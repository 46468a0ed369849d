// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command verify-tracked-files fails when git tracks build output: an
// executable binary (ELF, Mach-O, PE or WebAssembly, or any file with the
// executable bit that holds NUL bytes) or a file larger than 2 MiB. A clone
// carries every such file forever, and binaries belong in releases
// (`make release`), not in history.
package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// maxSize is the largest file git may track. The largest source file, the
// generated OpenAPI definitions, is under 1 MiB.
const maxSize = 2 << 20

func main() {
	problems, err := trackedProblems(".")
	if err != nil {
		fmt.Fprintf(os.Stderr, "verify: %v\n", err)
		os.Exit(1)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "verify: git tracks build output; remove it with `git rm --cached` and let .gitignore keep it out:\n  %s\n", strings.Join(problems, "\n  "))
		os.Exit(1)
	}
}

// trackedProblems checks every file git tracks in the work tree at repo.
func trackedProblems(repo string) ([]string, error) {
	out, err := exec.Command("git", "-C", repo, "ls-files", "-z", "--cached", "--stage").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %w", repo, err)
	}
	var problems []string
	for _, entry := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		// "<mode> <object> <stage>\t<path>"
		meta, path, ok := strings.Cut(entry, "\t")
		if !ok {
			continue
		}
		if problem := check(filepath.Join(repo, path), strings.HasPrefix(meta, "100755")); problem != "" {
			problems = append(problems, strings.TrimPrefix(problem, repo+string(filepath.Separator)))
		}
	}
	return problems, nil
}

// check says what is wrong with the tracked file at path, or "" when
// nothing is. executable is git's mode for it. A tracked file that is gone
// from the work tree (deleted, not yet committed) is not checked.
func check(path string, executable bool) string {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return ""
		}
		return fmt.Sprintf("%s: %v", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("%s: %v", path, err)
	}
	if !info.Mode().IsRegular() {
		return ""
	}
	head := make([]byte, 8192)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return fmt.Sprintf("%s: %v", path, err)
	}
	head = head[:n]
	if kind := executableFormat(head); kind != "" {
		return fmt.Sprintf("%s: %s executable (%d bytes)", path, kind, info.Size())
	}
	if executable && bytes.IndexByte(head, 0) >= 0 {
		return fmt.Sprintf("%s: binary file with the executable bit (%d bytes)", path, info.Size())
	}
	if info.Size() > maxSize {
		return fmt.Sprintf("%s: %d bytes, more than the %d a tracked file may have", path, info.Size(), maxSize)
	}
	return ""
}

// executableFormat names the executable format that head starts with, or
// returns "".
func executableFormat(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return "ELF"
	case bytes.HasPrefix(head, []byte("\x00asm")):
		return "WebAssembly"
	case len(head) >= 4 && isMachO(binary.BigEndian.Uint32(head)):
		return "Mach-O"
	case len(head) >= 0x40 && bytes.HasPrefix(head, []byte("MZ")):
		// A PE file: "MZ", and at e_lfanew the "PE\0\0" signature.
		off := binary.LittleEndian.Uint32(head[0x3c:])
		if int(off)+4 <= len(head) && bytes.Equal(head[off:off+4], []byte("PE\x00\x00")) {
			return "PE"
		}
	}
	return ""
}

func isMachO(magic uint32) bool {
	switch magic {
	case 0xfeedface, 0xfeedfacf, 0xcefaedfe, 0xcffaedfe, 0xcafebabe:
		return true
	}
	return false
}
