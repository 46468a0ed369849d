// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// EvictionFree is the free space, on the filesystem that holds the nodes'
// state, below which their kubelets report DiskPressure (evictionHard's
// nodefs.available and imagefs.available): a kubelet then admits no new
// pod and evicts the ones it runs, and a test or a user waits minutes for
// pods that never start. It is an amount, not the kubelet's default share
// of the filesystem: the nodes share the host's filesystem, and a share
// grows with the disk, so that 5% of a 252 GiB disk held back 12.6 GiB
// that no run comes near needing, and refused a run with 13.7 GiB free.
const EvictionFree = 2 << 30

// runHeadroom is about what a run of local nodes writes to that
// filesystem: the images each node imports, containers, etcd, logs.
const runHeadroom = 4 << 30

// evictionHard is the nodes' kubelets' evictionHard (config.go, and the
// kubeadm nodes' KubeletConfiguration in kubeadm.go).
func evictionHard() map[string]string {
	free := fmt.Sprintf("%dGi", EvictionFree>>30)
	return map[string]string{"memory.available": "100Mi", "nodefs.available": free, "imagefs.available": free}
}

// statfs is syscall.Statfs; a test replaces it.
var statfs = syscall.Statfs

// LowDisk says what is wrong when the filesystem holding dir (or its
// nearest existing parent: the state may not exist yet) has less free
// than EvictionFree plus the headroom a run writes; "" when it has enough,
// or when the filesystem's size cannot be read.
func LowDisk(dir string, headroom uint64) string {
	for dir != "/" {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		dir = filepath.Dir(dir)
	}
	var st syscall.Statfs_t
	if err := statfs(dir, &st); err != nil || st.Blocks == 0 {
		return ""
	}
	free, total := st.Bavail*uint64(st.Bsize), st.Blocks*uint64(st.Bsize)
	if free >= EvictionFree+headroom {
		return ""
	}
	gib := func(b uint64) float64 { return float64(b) / (1 << 30) }
	return fmt.Sprintf("free space: the filesystem of %s has %.1f GiB free of %.0f GiB; the nodes' kubelets report DiskPressure below %.0f GiB free and then start no pod, and a run writes up to %.0f GiB, so it needs %.0f GiB",
		dir, gib(free), gib(total), gib(EvictionFree), gib(headroom), gib(EvictionFree+headroom))
}
