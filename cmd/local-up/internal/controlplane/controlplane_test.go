// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package controlplane

import (
	"path/filepath"
	"strconv"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
)

// A second run in the same directory on another port gets kubeconfigs
// that name the new port, from the same PKI.
func TestKubeconfigsFollowThePort(t *testing.T) {
	dir := t.TempDir()
	for _, port := range []int{16443, 26443} {
		cfg, err := kubeadmConfig(Options{Dir: dir, Port: port, ControllerManagerPort: 10257, SchedulerPort: 10259}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := writePKIAndKubeconfigs(cfg, dir); err != nil {
			t.Fatalf("port %d: %v", port, err)
		}
		for _, file := range []string{kubeadmconstants.AdminKubeConfigFileName, kubeadmconstants.ControllerManagerKubeConfigFileName} {
			kc, err := clientcmd.LoadFromFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range kc.Clusters {
				if want := "https://127.0.0.1:" + strconv.Itoa(port); c.Server != want {
					t.Errorf("port %d: %s names %s, want %s", port, file, c.Server, want)
				}
			}
		}
	}
}
