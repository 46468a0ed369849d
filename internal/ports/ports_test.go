// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package ports

import (
	"net"
	"os"
	"strings"
	"testing"
)

func TestCheckNamesTheHolder(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	err = Check("127.0.0.1", port, "a test's port")
	if err == nil {
		t.Fatalf("port %d is held, and Check said it was free", port)
	}
	if !strings.Contains(err.Error(), "a test's port") || !strings.Contains(err.Error(), "is already in use by") {
		t.Errorf("error does not say what the port is for and that it is taken: %v", err)
	}
	pid, name, ok := Holder(port)
	if !ok || pid != os.Getpid() || name == "" {
		t.Errorf("Holder(%d) = %d, %q, %v; want this process (%d)", port, pid, name, ok, os.Getpid())
	}
	if !strings.Contains(err.Error(), name) {
		t.Errorf("error does not name the holder %q: %v", name, err)
	}
	l.Close()
	if err := Check("127.0.0.1", port, "a test's port"); err != nil {
		t.Errorf("after Close, Check(%d): %v", port, err)
	}
}

// Free's ports are outside the kernel's ephemeral range, where no outgoing
// connection takes them between the choice and the listen, and one process
// is never given the same port twice.
func TestFreeIsBelowTheEphemeralRangeAndUnique(t *testing.T) {
	low, high := freeRange()
	seen := map[int]bool{}
	for range 300 {
		port, err := Free()
		if err != nil {
			t.Fatal(err)
		}
		if port < low || port >= high {
			t.Errorf("Free() = %d, outside [%d, %d)", port, low, high)
		}
		if seen[port] {
			t.Errorf("Free() gave %d twice", port)
		}
		seen[port] = true
		if err := Check("127.0.0.1", port, "a test's port"); err != nil {
			t.Errorf("Free() gave %d, which is taken: %v", port, err)
		}
	}
}
