// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"strings"
	"syscall"
	"testing"
)

func TestCheckDiskSpace(t *testing.T) {
	for _, tc := range []struct {
		name          string
		blocks, avail uint64
		want          string // "" for no complaint
	}{
		{"half free", 1000, 500, ""},
		{"six percent free: enough", 1000, 60, ""},
		{"under six percent", 1000, 59, "5.9% free"},
		{"under the kubelet's threshold", 1000, 26, "2.6% free"},
		{"no size reported", 0, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			statfs = func(path string, st *syscall.Statfs_t) error {
				st.Blocks, st.Bavail, st.Bsize = tc.blocks, tc.avail, 4096
				return nil
			}
			t.Cleanup(func() { statfs = syscall.Statfs })
			got := checkDiskSpace(t.TempDir() + "/state/not/made/yet")
			if tc.want == "" {
				if got != "" {
					t.Errorf("checkDiskSpace = %q, want no complaint", got)
				}
				return
			}
			for _, w := range []string{tc.want, "DiskPressure", "below 5%"} {
				if !strings.Contains(got, w) {
					t.Errorf("checkDiskSpace = %q, want it to say %q", got, w)
				}
			}
		})
	}
}
