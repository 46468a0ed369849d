// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package process

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Matching lists the processes other than this one whose command line,
// its arguments joined by spaces, contains any of marks: how a run finds
// what it started, or what a killed run left, by the paths in their flags.
func Matching(marks ...string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.ReplaceAll(string(cmdline), "\x00", " ")
		for _, m := range marks {
			if strings.Contains(args, m) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
