// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package framework starts the real binaries that e2e tests drive: etcd and
// kube-apiserver as processes on free loopback ports, with a generated PKI,
// and gives clients for any user. One server is shared by many tests; tests
// that need other flags start their own against the same etcd.
package framework

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/turnstile-k8s/turnstile/internal/ports"
)

// Binary returns the path of a built binary: from TURNSTILE_BIN_DIR, which
// `make test-e2e` sets after building, or else the repository's _output/bin.
func Binary(name string) (string, error) {
	dir := os.Getenv("TURNSTILE_BIN_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "_output", "bin")
	}
	path, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("binary %s not built (run `make build tools` or `make test-e2e`): %w", name, err)
	}
	return path, nil
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) { return ports.Free() }

func loopbackURL(scheme string, port int) string {
	return scheme + "://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
