// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package images

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// RunAirGap refuses what would make a bundle a node cannot run, before
// building anything: a platform it does not build, no version, and a
// binary of another architecture or a dynamic one.
func TestRunAirGapRefusals(t *testing.T) {
	self, err := os.Executable() // the test binary: static (CGO_ENABLED=0), this machine's
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, b := range []string{"kube-controller-manager", "kube-scheduler", "kube-proxy", "etcd", "coredns", "pause"} {
		data, err := os.ReadFile(self)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, b), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	for _, tc := range []struct{ platform, version, want string }{
		{"darwin/arm64", "v1.37.2", `-platform "darwin/arm64": want linux/ARCH`},
		{"linux/s390x", "v1.37.2", "built for linux/amd64 and linux/arm64"},
		{"linux/" + runtime.GOARCH, "", "-airgap needs -kubernetes-version"},
		{"linux/" + other, "v1.37.2", filepath.Join(bin, "kube-controller-manager") + " is a binary for"},
	} {
		err := RunAirGap(io.Discard, t.TempDir(), bin, tc.platform, "turnstile-k8s", tc.version)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %q: %v; want %q", tc.platform, tc.version, err, tc.want)
		}
	}
	if err := platformBinary("/bin/sh", elfMachines[runtime.GOARCH]); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Errorf("a dynamic binary: %v", err)
	}
}
