// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// An apiserver on --embedded-etcd-data-dir keeps what it stored across a
// stop by SIGTERM and one by SIGINT.
func TestEmbeddedEtcdKeepsDataAcrossRestarts(t *testing.T) {
	t.Parallel() // long and independent of the others: see "Running in parallel" in README.md
	dir := t.TempDir()
	config := framework.APIServerConfig{
		Dir:  filepath.Join(dir, "embedded"),
		PKI:  pki,
		Args: []string{"--embedded-etcd-data-dir=" + filepath.Join(dir, "etcd")},
	}
	ctx := context.Background()

	var uid string
	for i, sig := range []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGTERM} {
		began := time.Now()
		s, err := framework.StartAPIServer(config)
		if err != nil {
			t.Fatalf("start %d: %v", i+1, err)
		}
		t.Logf("start %d: ready in %s", i+1, time.Since(began).Round(10*time.Millisecond))
		c, err := s.Client("e2e-admin", "system:masters")
		if err != nil {
			t.Fatal(err)
		}
		cm, err := c.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
		switch {
		case i == 0 && err == nil:
			t.Errorf("a fresh data dir already has configmap kept")
		case i == 0:
			cm, err = c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "kept"},
				Data:       map[string]string{"written": "before the first stop"},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating configmap: %v", err)
			}
			uid = string(cm.UID)
		case err != nil:
			t.Errorf("after restart %d: %v", i, err)
		case string(cm.UID) != uid || cm.Data["written"] != "before the first stop":
			t.Errorf("after restart %d: configmap is %+v, want uid %s and the data written", i, cm, uid)
		}
		if err := s.Stop(sig); err != nil {
			t.Fatalf("stop %d by %v: %v\n%s", i+1, sig, err, s.Tail(30))
		}
	}
}

func TestEmbeddedEtcdFlagsAreChecked(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "etcd")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{
			args: []string{"--embedded-etcd-data-dir=" + dataDir, "--etcd-servers=http://127.0.0.1:2379"},
			want: "--embedded-etcd-data-dir cannot be combined with --etcd-servers=[http://127.0.0.1:2379]",
		},
		{
			args: []string{"--embedded-etcd-data-dir=" + dataDir, "--embedded-etcd-client-url=http://10.0.0.1:2379"},
			want: `--embedded-etcd-client-url: "http://10.0.0.1:2379": the host must be a loopback address`,
		},
		{
			args: []string{"--embedded-etcd-data-dir=" + dataDir, "--embedded-etcd-client-url=https://127.0.0.1:2379"},
			want: "the scheme must be http",
		},
		{
			args: []string{"--embedded-etcd-client-url=http://127.0.0.1:2379"},
			want: "--embedded-etcd-client-url needs --embedded-etcd-data-dir",
		},
	} {
		expectRefusal(t, tc.args, tc.want)
		if _, err := os.Stat(dataDir); err == nil {
			t.Errorf("kube-apiserver %v created %s although it refused to start", tc.args, dataDir)
		}
	}
}
