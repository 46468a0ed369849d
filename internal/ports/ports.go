// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package ports checks, before a component is started on a fixed port,
// that the port is free, and otherwise names the process holding it: on a
// machine that already runs Kubernetes, 2379, 6443, 10250, 10257 and 10259
// are often taken, and "address already in use" in a component's log is a
// poor way to learn it.
package ports

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Check returns nil when host:port can be listened on, and otherwise an
// error that says who holds it. what names the port's use, for example
// "kube-controller-manager's --secure-port".
func Check(host string, port int, what string) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err == nil {
		return l.Close()
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("port %d on %s (%s): %w", port, host, what, err)
	}
	holder := "a process this user cannot see (run as root to name it)"
	if pid, name, ok := Holder(port); ok {
		holder = fmt.Sprintf("%s (pid %d)", name, pid)
	}
	return fmt.Errorf("port %d on %s (%s) is already in use by %s", port, host, what, holder)
}

// Holder finds the process listening on TCP port, from /proc/net/tcp{,6}
// and the processes' file descriptors.
func Holder(port int) (pid int, name string, ok bool) {
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			// local_address is f[1] (hex address:hex port), st is f[3]
			// (0A is LISTEN), inode is f[9].
			if len(f) < 10 || f[3] != "0A" {
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil && int(p) == port {
				inodes["socket:["+f[9]+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return 0, "", false
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		id, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name()))
			if err == nil && inodes[target] {
				comm, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "comm"))
				return id, strings.TrimSpace(string(comm)), true
			}
		}
	}
	return 0, "", false
}

// Free returns a TCP port on 127.0.0.1 that nothing listens on now, for a
// component whose port is ours to choose. It is drawn below the kernel's
// ephemeral range (net.ipv4.ip_local_port_range): a port the kernel hands
// out for "127.0.0.1:0" is one it may hand any process's outgoing
// connection as its local port between our Close and the component's
// listen, which is how a test once found its controller-manager's port
// "already in use" by a connection of a test beside it. No port is
// returned twice by one process.
func Free() (int, error) {
	low, high := freeRange()
	mu.Lock()
	defer mu.Unlock()
	for range 200 {
		port := low + rand.IntN(high-low)
		if given[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = l.Close()
		given[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("no free TCP port on 127.0.0.1 in %d-%d after 200 tries", low, high-1)
}

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// freeRange is [low, high): the ports from 15000 up to the start of the
// ephemeral range, or, where that range starts too low to leave a
// thousand ports below it, from 1024.
func freeRange() (low, high int) {
	high = 32768 // Linux's default ephemeral start
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(data)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				high = n
			}
		}
	}
	low = 15000
	if high-low < 1000 {
		low = 1024
	}
	return low, high
}
