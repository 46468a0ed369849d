// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A cluster that cannot be read is an error that says what failed, and
// convert and verify print nothing on standard output: no partial YAML
// that could be applied as if it were whole.
func TestUnreadableClusterPrintsNothing(t *testing.T) {
	// A loopback address nothing listens on: a port just freed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://`+addr+`", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"report", "convert", "verify"} {
		var out, errOut bytes.Buffer
		cmd := newCommand(&out, &errOut)
		cmd.SetArgs([]string{"--kubeconfig", kubeconfig, "--request-timeout", "5s", sub})
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), "podsecuritypolicies") {
			t.Errorf("kubectl psp %s on an unreachable cluster: %v, want an error naming what it could not list", sub, err)
		}
		if out.Len() != 0 {
			t.Errorf("kubectl psp %s printed on an error:\n%s", sub, out.String())
		}
	}
}
