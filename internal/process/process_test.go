// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package process

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func start(t *testing.T, script string) *Process {
	t.Helper()
	p, err := Start("sh", filepath.Join(t.TempDir(), "sh.log"), []string{"sh", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(syscall.SIGKILL, time.Second) })
	return p
}

func TestWaitUntil(t *testing.T) {
	never := func(context.Context) error { return errors.New("not yet") }
	tests := []struct {
		name, script string
		ready        func(context.Context) error
		timeout      time.Duration
		wantErr      string
	}{
		{name: "ready", script: "sleep 30", ready: func(context.Context) error { return nil }, timeout: time.Second},
		{name: "exits first, with its log", script: "echo boom; exit 3", ready: never, timeout: 10 * time.Second,
			wantErr: "sh exited before it was ready (exit status 3):\n--- last lines of"},
		{name: "times out", script: "sleep 30", ready: never, timeout: 300 * time.Millisecond, wantErr: "sh not ready after 300ms: not yet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, tt.script)
			err := p.WaitUntil(context.Background(), tt.timeout, tt.ready)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("WaitUntil: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("WaitUntil = %v, want %q", err, tt.wantErr)
			}
			if tt.name == "exits first, with its log" && !strings.Contains(err.Error(), "boom") {
				t.Errorf("error lacks the log's last lines: %v", err)
			}
		})
	}
}

func TestStop(t *testing.T) {
	tests := []struct {
		name, script string
		grace        time.Duration
		check        func(error) bool
	}{
		{name: "handles the signal and exits 0", script: "trap 'exit 0' TERM; while :; do sleep 0.05; done", grace: 10 * time.Second,
			check: func(err error) bool { return err == nil }},
		{name: "dies of the signal", script: "exec sleep 30", grace: 10 * time.Second,
			check: func(err error) bool { return EndedBy(err, syscall.SIGTERM) && !EndedBy(err, syscall.SIGINT) }},
		{name: "ignores it and is killed", script: "trap '' TERM; while :; do sleep 0.05; done", grace: 200 * time.Millisecond,
			check: func(err error) bool { return err != nil && strings.Contains(err.Error(), "was killed") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, tt.script)
			time.Sleep(100 * time.Millisecond) // let the shell set its trap
			if err := p.Stop(syscall.SIGTERM, tt.grace); !tt.check(err) {
				t.Errorf("Stop = %v", err)
			}
			select {
			case <-p.Done():
			default:
				t.Errorf("Done not closed after Stop")
			}
		})
	}
	if EndedBy(errors.New("exit status 1"), syscall.SIGTERM) {
		t.Errorf("EndedBy accepted an error that is not an exit")
	}
}
