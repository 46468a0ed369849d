// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// evictionFreePercent is the share of its filesystem below which a node's
// kubelet reports DiskPressure (its evictionHard nodefs.available and
// imagefs.available): it then admits no new pod and evicts the ones it
// runs, and a test or a user waits minutes for pods that never start.
const evictionFreePercent = 5

// evictionHard is the nodes' kubelets' evictionHard (config.go, and the
// kubeadm nodes' KubeletConfiguration in kubeadm.go).
func evictionHard() map[string]string {
	free := fmt.Sprintf("%d%%", evictionFreePercent)
	return map[string]string{"memory.available": "100Mi", "nodefs.available": free, "imagefs.available": free}
}

// statfs is syscall.Statfs; a test replaces it.
var statfs = syscall.Statfs

// checkDiskSpace says what is wrong when the filesystem holding dir (or
// its nearest existing parent: the state may not exist yet) has less free
// space than the kubelets need, with one point to spare for the images the
// run imports and the data it writes; "" when it has enough.
func checkDiskSpace(dir string) string {
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
	free := float64(st.Bavail) / float64(st.Blocks) * 100
	if free >= evictionFreePercent+1 {
		return ""
	}
	gib := func(blocks uint64) float64 { return float64(blocks) * float64(st.Bsize) / (1 << 30) }
	return fmt.Sprintf("free space: the filesystem of %s has %.1f%% free (%.1f of %.1f GiB); the nodes' kubelets report DiskPressure below %d%% and then start no pod, so a run needs %d%%",
		dir, free, gib(st.Bavail), gib(st.Blocks), evictionFreePercent, evictionFreePercent+1)
}
