// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/turnstile-k8s/turnstile/internal/process"
)

// removeRun removes everything run r added, in an order where each step
// finds nothing in use: the processes (the nodes' daemons, containerd's
// shims, the containers), the mounts, the network namespaces, the cgroups,
// the bridge (and with it the host's routes), the guard, the state.
func removeRun(r record) error {
	var errs []error
	killOwned(r)
	for _, root := range r.Roots {
		for _, pid := range cgroupProcs(root) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if err := unmountUnder(r.Mounts); err != nil {
		errs = append(errs, err)
	}
	// The veths go before the namespaces, by name: `ip netns del` only
	// removes the name, and the kernel destroys the namespace, and with it
	// the veth's host end, later, once nothing holds it, which the host
	// could show after the run had ended. Deleting a veth deletes both ends
	// before the command returns.
	for _, veth := range nodeVeths(r.Bridge) {
		// One the kernel was destroying already is gone by the time it is
		// named, and that is no failure.
		if err := run("ip", "link", "del", veth); err != nil && linkExists(veth) {
			errs = append(errs, err)
		}
	}
	for _, ns := range r.Nodes {
		if _, err := os.Stat(filepath.Join(netnsDir, ns)); err == nil {
			if err := run("ip", "netns", "del", ns); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, root := range r.Roots {
		if err := removeCgroupRoot(root); err != nil {
			errs = append(errs, err)
		}
	}
	if linkExists(r.Bridge) {
		if err := run("ip", "link", "del", r.Bridge); err != nil {
			errs = append(errs, err)
		}
	}
	if hostTableExists(r.Table) {
		if err := run("nft", "delete", "table", "inet", r.Table); err != nil {
			errs = append(errs, err)
		}
	}
	for _, dir := range r.Created {
		if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
			continue // gone already, or holding what is not this run's
		}
		// /run/netns is a mount point of its own once `ip netns add` has
		// made it (not an error for the others).
		_ = syscall.Unmount(dir, syscall.MNT_DETACH)
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing the directory %s this run made: %w", dir, err))
		}
	}
	runDir := filepath.Join(runRoot, strconv.Itoa(r.ID))
	if err := os.RemoveAll(runDir); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		if err := os.Remove(runDir + ".json"); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing the local nodes of run %d: %w", r.ID, errors.Join(errs...))
	}
	return nil
}

// owned is every process whose command line names one of run r's
// directories or sockets: the nodes' containerd, kubelet and kube-proxy,
// and the shims containerd started (they outlive it by design).
func owned(r record) []int {
	return process.Matching(append(slices.Clone(r.Sockets), r.Mounts...)...)
}

// killOwned kills run r's processes and waits, up to ten seconds, for them
// to be gone.
func killOwned(r record) {
	pids := owned(r)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for processAlive(pid) && !zombie(pid) && time.Now().Before(deadline) {
			sleep()
		}
	}
}

func zombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return strings.HasPrefix(rest, "Z")
}

// mountsUnder is every mount point under one of dirs, deepest first.
func mountsUnder(dirs []string) []string {
	data, _ := os.ReadFile("/proc/self/mountinfo")
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		point := unescapeMount(f[4])
		for _, d := range dirs {
			if point == d || strings.HasPrefix(point, d+"/") {
				points = append(points, point)
				break
			}
		}
	}
	slices.SortFunc(points, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return slices.Compact(points)
}

// unmountUnder detaches every mount under dirs: what the kubelet mounted
// for volumes and its own root, containerd's root filesystems and the
// pods' network namespaces. A bind mount can be stacked; each is removed.
func unmountUnder(dirs []string) error {
	for range 10 {
		points := mountsUnder(dirs)
		if len(points) == 0 {
			return nil
		}
		for _, p := range points {
			_ = syscall.Unmount(p, syscall.MNT_DETACH)
		}
	}
	if left := mountsUnder(dirs); len(left) > 0 {
		return fmt.Errorf("still mounted: %s", strings.Join(left, ", "))
	}
	return nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Leftovers lists what of the run with this ID is still on the host, by
// looking for it the way an operator would: processes naming its paths,
// mounts, network namespaces, the bridge and routes through it, the nft
// table, cgroups. Empty means the host is as the run found it.
func Leftovers(id int, dir string) []string {
	c := &Cluster{id: id}
	var left []string
	r := record{ID: id, Bridge: c.bridge(), Table: c.table(), Mounts: []string{c.runDir(), filepath.Join(dir, "nodes")}, Sockets: []string{c.runDir()}}
	for _, pid := range owned(r) {
		if !zombie(pid) {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			left = append(left, fmt.Sprintf("process %d: %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		}
	}
	for _, m := range mountsUnder(r.Mounts) {
		left = append(left, "mount "+m)
	}
	prefix := fmt.Sprintf("%s%d-", netnsPrefix, id)
	entries, _ := os.ReadDir(netnsDir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			left = append(left, "network namespace "+e.Name())
		}
	}
	if linkExists(r.Bridge) {
		left = append(left, "bridge "+r.Bridge)
	}
	for _, veth := range nodeVeths(r.Bridge) {
		left = append(left, "veth "+veth)
	}
	if hostTableExists(r.Table) {
		left = append(left, "nft table inet "+r.Table)
	}
	if out, err := runOutput("ip", "-4", "route", "show", "table", "all"); err == nil {
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "dev "+r.Bridge+" ") || strings.HasSuffix(line, "dev "+r.Bridge) {
				left = append(left, "route "+line)
			}
		}
	}
	dirs, _ := cgroupHierarchies()
	for _, h := range dirs {
		groups, _ := filepath.Glob(filepath.Join(h, prefix+"*"))
		for _, g := range groups {
			left = append(left, "cgroup "+g)
		}
	}
	if _, err := os.Stat(c.runDir()); err == nil {
		left = append(left, "directory "+c.runDir())
	}
	return left
}

// MountsUnder lists the mounts under dir, for a caller about to remove it.
func MountsUnder(dir string) []string { return mountsUnder([]string{dir}) }
