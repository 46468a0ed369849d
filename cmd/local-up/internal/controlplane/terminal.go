// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package controlplane

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// takeTerminal makes local-up the terminal's foreground process group,
// when it runs in the foreground of one, and returns what gives the
// terminal back to the group it took it from.
//
// Ctrl-C signals the terminal's whole foreground group: under `make run`
// that is make as well as local-up, and make, once its child has stopped
// cleanly, kills itself with the same signal, so the run ends with status
// 130 however cleanly local-up stopped. As the only foreground group,
// local-up alone gets Ctrl-C, stops everything and exits 0, and make exits
// with it. Ctrl-Z is ignored: a stopped local-up under a make its shell
// still waits for would leave the terminal to nobody.
func takeTerminal() (restore func()) {
	fd := int(os.Stdin.Fd())
	foreground, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || foreground != syscall.Getpgrp() {
		return func() {} // no terminal, or run in the background
	}
	if err := syscall.Setpgid(0, 0); err != nil {
		return func() {}
	}
	// A process of a background group that sets the foreground group gets
	// SIGTTOU, which would stop it.
	signal.Ignore(syscall.SIGTTOU, syscall.SIGTSTP)
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, syscall.Getpid()); err != nil {
		// Back into make's group, which the terminal still signals.
		_ = syscall.Setpgid(0, foreground)
		return func() {}
	}
	return func() { _ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, foreground) }
}
