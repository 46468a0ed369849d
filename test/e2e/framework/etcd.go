// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"context"
	"path/filepath"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/turnstile-k8s/turnstile/internal/process"
)

// Etcd is an etcd process, built from go.mod's tool line, serving plain
// HTTP on loopback.
type Etcd struct {
	URL string
	*process.Process
}

// StartEtcd starts etcd with its data and log under dir and waits until it
// answers a read.
func StartEtcd(dir string) (*Etcd, error) {
	bin, err := Binary("etcd")
	if err != nil {
		return nil, err
	}
	clientPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	clientURL, peerURL := loopbackURL("http", clientPort), loopbackURL("http", peerPort)
	p, err := process.Start("etcd", filepath.Join(dir, "etcd.log"), []string{bin,
		"--name=e2e",
		"--data-dir=" + filepath.Join(dir, "etcd-data"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=e2e=" + peerURL,
		"--log-level=warn",
	})
	if err != nil {
		return nil, err
	}
	e := &Etcd{URL: clientURL, Process: p}
	if err := p.WaitUntil(context.Background(), 30*time.Second, e.ping); err != nil {
		_ = p.Stop(syscall.SIGTERM, 5*time.Second)
		return nil, err
	}
	return e, nil
}

// Client returns an etcd client, for tests that check what was stored.
func (e *Etcd) Client() (*clientv3.Client, error) {
	// A quiet logger: the client's retry warnings while etcd starts are noise.
	return clientv3.New(clientv3.Config{Endpoints: []string{e.URL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}

func (e *Etcd) ping(ctx context.Context) error {
	c, err := e.Client()
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Get(ctx, "health")
	return err
}

// Stop terminates etcd. etcd re-raises SIGTERM after its own clean-up, so
// dying of that signal is a clean stop.
func (e *Etcd) Stop() error {
	err := e.Process.Stop(syscall.SIGTERM, 30*time.Second)
	if process.EndedBy(err, syscall.SIGTERM) {
		return nil
	}
	return err
}
