// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDirect(t *testing.T) {
	kept := []string{"PATH=/bin", "HOME=/root", "_x1=y"}
	dropped := append(slices.Clone(kept), "data-1=value-1")
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"the envFrom specs' command", []string{"-c", "env"}, dropped, []string{"env"}},
		{"a command with plain arguments", []string{"-c", "cat /etc/hosts"}, dropped, []string{"cat", "/etc/hosts"}},
		{"$0 and arguments after the script", []string{"-c", "env", "sh", "a"}, dropped, []string{"env"}},
		{"a name ash drops starting with a digit", []string{"-c", "env"}, append(slices.Clone(kept), "1-data-1=x"), []string{"env"}},
		{"nothing ash would drop", []string{"-c", "env"}, kept, nil},
		{"a pipe", []string{"-c", "env | sort"}, dropped, nil},
		{"a redirection", []string{"-c", "echo test > /file"}, dropped, nil},
		{"a redirection without spaces", []string{"-c", "env>/file"}, dropped, nil},
		{"a list", []string{"-c", "env; sleep 1"}, dropped, nil},
		{"an expansion", []string{"-c", "echo $HOME"}, dropped, nil},
		{"a quoted word", []string{"-c", "cat 'a b'"}, dropped, nil},
		{"a builtin", []string{"-c", "exit 3"}, dropped, nil},
		{"an assignment", []string{"-c", "A=b env"}, dropped, nil},
		{"an empty script", []string{"-c", ""}, dropped, nil},
		{"a script file", []string{"/script.sh"}, dropped, nil},
		{"interactive", nil, dropped, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := direct(tc.args, tc.env); !slices.Equal(got, tc.want) {
				t.Errorf("direct(%q) = %q, want %q", tc.args, got, tc.want)
			}
		})
	}
}

// TestShell runs the built command as the image runs /bin/sh, with the
// busybox that make node-images fetched, or else the host's.
func TestShell(t *testing.T) {
	candidates, _ := filepath.Glob(filepath.Join("..", "..", "_output", "images", "node", "busybox-*.tar.busybox"))
	candidates = append(candidates, busybox)
	bb := ""
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			bb, _ = filepath.Abs(c)
			break
		}
	}
	if bb == "" {
		t.Skipf("no busybox in %q (make node-images fetches one)", candidates)
	}
	dir := t.TempDir()
	sh := filepath.Join(dir, "sh")
	if out, err := exec.Command("go", "build", "-ldflags", "-X main.busybox="+bb, "-o", sh, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	run := func(env []string, script string) string {
		cmd := exec.Command(sh, "-c", script)
		cmd.Env = env
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	env := []string{"PATH=/usr/bin:/bin", "data-1=value-1", "#@!data-1=value-2", "KEPT=yes"}
	got := run(env, "env")
	for _, want := range []string{"data-1=value-1\n", "#@!data-1=value-2\n", "KEPT=yes\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("sh -c env: no %q in\n%s", want, got)
		}
	}
	// Anything else is ash: its variables, its error texts.
	if got := run(env, "echo $KEPT"); got != "yes\n" {
		t.Errorf("sh -c 'echo $KEPT' = %q", got)
	}
	if got := run(env, "echo test > "+dir); !strings.Contains(got, "sh: can't create "+dir+": Is a directory") {
		t.Errorf("a redirection into a directory: %q, want ash's error", got)
	}
	if got := run(env, "no-such-command"); !strings.Contains(got, "sh: no-such-command: not found") {
		t.Errorf("a missing command: %q, want ash's error", got)
	}
}
