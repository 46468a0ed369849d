// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Each node's kubelet puts its pods under a cgroup root of its own
// (cgroupRoot in its configuration), so that two kubelets on one host do
// not manage the same kubepods tree. The kubelet refuses a root that does
// not exist, so we create it, and remove it, with what is under it, once
// every process in it is gone.

const cgroupFS = "/sys/fs/cgroup"

// cgroupV2 reports whether the host runs the unified hierarchy only.
func cgroupV2() bool {
	_, err := os.Stat(filepath.Join(cgroupFS, "cgroup.controllers"))
	return err == nil
}

// cgroupHierarchies is the directory of every mounted hierarchy a cgroup
// root must exist in: the unified one, or each v1 controller's.
func cgroupHierarchies() ([]string, error) {
	if cgroupV2() {
		return []string{cgroupFS}, nil
	}
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && (f[2] == "cgroup" || f[2] == "cgroup2") && strings.HasPrefix(f[1], cgroupFS+"/") && !slices.Contains(dirs, f[1]) {
			dirs = append(dirs, f[1])
		}
	}
	if len(dirs) == 0 {
		return nil, errors.New("no cgroup hierarchy is mounted under " + cgroupFS)
	}
	return dirs, nil
}

// createCgroupRoot creates root (for example /turnstile-node1) in every
// hierarchy. In cgroup v1's cpuset hierarchy a new group has no CPUs or
// memory nodes until given its parent's.
func createCgroupRoot(root string) error {
	dirs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range dirs {
		dir := filepath.Join(h, root)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
			parent, err := os.ReadFile(filepath.Join(h, file))
			if err != nil || cgroupV2() {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, file), parent, 0o644); err != nil {
				return fmt.Errorf("initialising cgroup %s: %w", filepath.Join(dir, file), err)
			}
		}
	}
	return nil
}

// cgroupProcs is every process in root's tree, in any hierarchy.
func cgroupProcs(root string) []int {
	dirs, _ := cgroupHierarchies()
	seen := map[int]bool{}
	var pids []int
	for _, h := range dirs {
		_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(p)
			for _, field := range strings.Fields(string(data)) {
				var pid int
				if _, err := fmt.Sscan(field, &pid); err == nil && !seen[pid] {
					seen[pid] = true
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// removeCgroupRoot kills what is still in root's tree and removes its
// groups, deepest first.
func removeCgroupRoot(root string) error {
	for _, pid := range cgroupProcs(root) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	dirs, _ := cgroupHierarchies()
	var errs []error
	for _, h := range dirs {
		top := filepath.Join(h, root)
		var groups []string
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				groups = append(groups, p)
			}
			return nil
		})
		slices.Reverse(groups) // children after their parent in a walk
		for _, g := range groups {
			if err := removeCgroup(g); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeCgroup removes one empty group, waiting a little for killed
// processes to leave it.
func removeCgroup(dir string) error {
	var err error
	for range 50 {
		if err = syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			break
		}
		sleep()
	}
	return fmt.Errorf("removing cgroup %s: %w", dir, err)
}
