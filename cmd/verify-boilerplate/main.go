// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command verify-boilerplate fails when a source file lacks the project's
// license header: "Copyright YEAR The Turnstile Authors." and
// "SPDX-License-Identifier: Apache-2.0" as comments in its first lines (after
// a shebang, an example's "# Plugins:" line, or a generator's build
// constraints). Source files are the Go
// files (generated ones get it from hack/boilerplate.go.txt), the shell
// scripts, the Makefile, the protobuf definitions, and the YAML (and
// configuration files, .cfg) under examples/, hack/ and cmd/ that users
// copy or the programs read; test data and fuzz corpora are
// inputs, not source. The files are git's, tracked or new; upstream's
// cmd/verify-boilerplate is the model.
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

func main() {
	problems, err := missing(".")
	if err != nil {
		fmt.Fprintf(os.Stderr, "verify: %v\n", err)
		os.Exit(1)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "verify: these source files lack the license header (the first lines of hack/boilerplate.go.txt, as comments of the file's language; LICENSE has the terms):\n  %s\n", strings.Join(problems, "\n  "))
		os.Exit(1)
	}
}

// missing lists the source files of the git work tree at repo that lack the
// header.
func missing(repo string) ([]string, error) {
	out, err := exec.Command("git", "-C", repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %w", repo, err)
	}
	var problems []string
	for _, path := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if path == "" || !isSource(path) {
			continue
		}
		ok, err := hasHeader(filepath.Join(repo, path))
		if os.IsNotExist(err) {
			continue // deleted, not yet committed
		}
		if err != nil {
			return nil, err
		}
		if !ok {
			problems = append(problems, path)
		}
	}
	return problems, nil
}

// isSource says whether path (slash-separated, from the repository's root)
// must carry the header.
func isSource(path string) bool {
	base := filepath.Base(path)
	switch {
	case strings.HasPrefix(path, "test/fuzz/"), strings.Contains(path, "/testdata/"):
		return false
	case base == "Makefile", path == ".ci/run", path == "lines/supported", path == "lines/preview", path == "lines/modules":
		return true
	}
	switch filepath.Ext(path) {
	case ".go", ".sh", ".proto":
		return true
	case ".yaml", ".yml", ".cfg":
		return strings.HasPrefix(path, "examples/") || strings.HasPrefix(path, "hack/") || strings.HasPrefix(path, "cmd/")
	}
	return false
}

var (
	copyright = regexp.MustCompile(`^(//|#) Copyright \d{4} The Turnstile Authors\.$`)
	spdx      = regexp.MustCompile(`^(//|#) SPDX-License-Identifier: Apache-2\.0$`)
)

// headerLines is how far into a file the header may start: after a
// shebang, an example's "# Plugins:" line, or the build constraints that
// upstream's generators write first.
const headerLines = 4

// hasHeader reports whether the file at path carries the header: the
// copyright line, then the SPDX line, within its first lines.
func hasHeader(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for i := 0; i < headerLines && scanner.Scan(); i++ {
		if copyright.MatchString(scanner.Text()) {
			return scanner.Scan() && spdx.MatchString(scanner.Text()), nil
		}
	}
	return false, scanner.Err()
}
