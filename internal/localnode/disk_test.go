// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"strings"
	"syscall"
	"testing"
)

func TestLowDisk(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name          string
		blocks, avail uint64 // in 4 KiB blocks
		want          string // "" for no complaint
	}{
		{"half free", 100 * gib / 4096, 50 * gib / 4096, ""},
		{"the threshold and the headroom: enough", 252 * gib / 4096, 6 * gib / 4096, ""},
		{"a large disk with a small share free", 252 * gib / 4096, 13 * gib / 4096, ""},
		{"a block short", 252 * gib / 4096, 6*gib/4096 - 1, "has 6.0 GiB free of 252 GiB"},
		{"under the kubelets' threshold", 100 * gib / 4096, gib / 4096, "has 1.0 GiB free of 100 GiB"},
		{"no size reported", 0, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			statfs = func(path string, st *syscall.Statfs_t) error {
				st.Blocks, st.Bavail, st.Bsize = tc.blocks, tc.avail, 4096
				return nil
			}
			t.Cleanup(func() { statfs = syscall.Statfs })
			got := LowDisk(t.TempDir()+"/state/not/made/yet", 4*gib)
			if tc.want == "" {
				if got != "" {
					t.Errorf("LowDisk = %q, want no complaint", got)
				}
				return
			}
			for _, w := range []string{tc.want, "DiskPressure below 2 GiB free", "needs 6 GiB"} {
				if !strings.Contains(got, w) {
					t.Errorf("LowDisk = %q, want it to say %q", got, w)
				}
			}
		})
	}
}
