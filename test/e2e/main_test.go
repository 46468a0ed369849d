// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package e2e drives the built binaries as a user would: real etcd, real
// kube-apiserver processes, client-go and kubectl.
package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// The etcd, PKI and kube-apiserver that every test shares unless it needs
// flags of its own.
var (
	root   string
	pki    *framework.PKI
	etcd   *framework.Etcd
	server *framework.APIServer
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	var err error
	if root, err = os.MkdirTemp("", "turnstile-e2e-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if code == 0 {
			os.RemoveAll(root)
		} else {
			fmt.Fprintf(os.Stderr, "e2e: logs and data kept in %s\n", root)
		}
	}()
	if pki, err = framework.NewPKI(filepath.Join(root, "pki")); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: PKI:", err)
		return 1
	}
	if etcd, err = framework.StartEtcd(root); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: etcd:", err)
		return 1
	}
	defer func() {
		if err := etcd.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: stopping etcd:", err)
			code = 1
		}
	}()
	server, err = framework.StartAPIServer(framework.APIServerConfig{Dir: filepath.Join(root, "shared"), Etcd: etcd, PKI: pki})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: kube-apiserver:", err)
		return 1
	}
	code = m.Run()
	if err := server.Stop(syscall.SIGTERM); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: kube-apiserver did not stop cleanly: %v\n%s\n", err, server.Tail(30))
		code = 1
	}
	return code
}

// adminClient is the shared server's client for a system:masters user.
func adminClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	c, err := server.Client("e2e-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startServer starts our kube-apiserver with args, on the etcd prefix
// named after it unless args say otherwise, and stops it when the test ends.
func startServer(t *testing.T, name string, args ...string) (*framework.APIServer, kubernetes.Interface) {
	t.Helper()
	s, err := framework.StartAPIServer(framework.APIServerConfig{Dir: filepath.Join(root, name), Etcd: etcd, PKI: pki, Args: args})
	if err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := s.Stop(syscall.SIGTERM); err != nil {
			t.Errorf("%s did not stop cleanly: %v", name, err)
		}
	})
	c, err := s.Client("e2e-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}
