// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command busybox-sh is /bin/sh in the busybox image the nodes run: it runs
// busybox's ash, except in one case where ash would lose part of the
// environment.
//
// A container's environment may hold variables whose names are not shell
// identifiers: envFrom copies every key of a ConfigMap or Secret, "data-1"
// and "#@!data-1" included. Ash, as Debian builds busybox 1.37, leaves such
// variables out of what its commands inherit, and upstream's e2e specs read
// them back with `sh -c env` (they pass on upstream's busybox image). So when
// the environment holds such a name and the script is one simple command of
// plain words, this runs the command directly, as the shell would but with
// the whole environment; anything else, and any command it cannot find, is
// ash's, so that ash's behaviour and error texts are what the specs see (for
// example `/bin/sh: can't create /file: Read-only file system`).
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
)

// busybox is where the image has busybox; sh runs its ash. A variable so
// that the test can point it at a busybox outside an image.
var busybox = "/bin/busybox"

var (
	// identifier is a name a POSIX shell keeps in its environment.
	identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// plainWord has no character that a shell would expand, quote,
	// redirect or split on.
	plainWord = regexp.MustCompile(`^[A-Za-z0-9_./,:+@%-]+$`)
)

// builtins are ash's builtins and keywords: a command named so is the
// shell's own even when the PATH has a program of that name.
var builtins = map[string]bool{
	".": true, ":": true, "[": true, "[[": true, "alias": true, "bg": true, "break": true, "case": true,
	"cd": true, "chdir": true, "command": true, "continue": true, "do": true, "done": true, "echo": true,
	"elif": true, "else": true, "esac": true, "eval": true, "exec": true, "exit": true, "export": true,
	"false": true, "fg": true, "fi": true, "for": true, "function": true, "getopts": true, "hash": true,
	"help": true, "history": true, "if": true, "in": true, "jobs": true, "kill": true, "let": true,
	"local": true, "printf": true, "pwd": true, "read": true, "readonly": true, "return": true, "set": true,
	"shift": true, "source": true, "test": true, "then": true, "times": true, "trap": true, "true": true,
	"type": true, "ulimit": true, "umask": true, "unalias": true, "unset": true, "until": true, "wait": true,
	"while": true,
}

func main() {
	if argv := direct(os.Args[1:], os.Environ()); argv != nil {
		if path, err := exec.LookPath(argv[0]); err == nil {
			// Only returns on failure, and then ash runs the script.
			_ = syscall.Exec(path, argv, os.Environ())
		}
	}
	// Busybox picks the applet by argv[0]'s base name: keep "/bin/sh" (ash
	// prefixes its messages with it) or a login shell's "-sh".
	arg0 := os.Args[0]
	if filepath.Base(strings.TrimPrefix(arg0, "-")) != "sh" {
		arg0 = "sh"
	}
	err := syscall.Exec(busybox, append([]string{arg0}, os.Args[1:]...), os.Environ())
	fmt.Fprintf(os.Stderr, "sh: running %s: %v\n", busybox, err)
	os.Exit(127)
}

// direct is the command to run without ash for `sh -c SCRIPT [ARG0 ARGS...]`
// in env, or nil when ash should run it.
func direct(args, env []string) []string {
	if len(args) < 2 || args[0] != "-c" || !dropsVariables(env) {
		return nil
	}
	words := strings.Fields(args[1])
	if len(words) == 0 || builtins[words[0]] || strings.Contains(words[0], "=") {
		return nil
	}
	for _, w := range words {
		if !plainWord.MatchString(w) {
			return nil
		}
	}
	return words
}

// dropsVariables says whether env has a variable that ash would drop.
func dropsVariables(env []string) bool {
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !identifier.MatchString(name) {
			return true
		}
	}
	return false
}
