// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package process supervises the binaries that local-up, the e2e tests and
// the benchmark start: output appended to a log file, readiness polling that
// notices an early exit, and a stop that signals, waits, then kills.
package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is a started binary.
type Process struct {
	Name, Log string
	Started   time.Time
	cmd       *exec.Cmd
	done      chan struct{}
	err       error // set before done is closed
}

// Start runs command, appending its stdout and stderr to logFile. The
// process gets its own process group, so a terminal's Ctrl-C reaches only
// the supervisor, which stops its children in order; and the kernel sends
// it SIGTERM if the supervisor dies first.
func Start(name, logFile string, command []string) (*Process, error) {
	return startWith(name, logFile, command, syscall.SIGTERM)
}

// StartDisposable is Start for a process whose state is thrown away with
// it, as in a test's cluster: if the supervisor dies, the kernel kills it
// outright. A graceful stop can wait on peers that are dying too (an
// apiserver draining towards an etcd that is gone), and nothing of it is
// worth that wait.
func StartDisposable(name, logFile string, command []string) (*Process, error) {
	return startWith(name, logFile, command, syscall.SIGKILL)
}

func startWith(name, logFile string, command []string, deathSignal syscall.Signal) (*Process, error) {
	out, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathSignal}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, Log: logFile, Started: time.Now(), cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	return p, nil
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process exited, nil for status 0. Valid once Done is closed.
func (p *Process) Err() error { return p.err }

// Pid is the process ID, for reading its /proc figures.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// WaitUntil polls ready, giving each attempt two seconds, until it returns
// nil, the process exits, ctx ends, or timeout passes.
func (p *Process) WaitUntil(ctx context.Context, timeout time.Duration, ready func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	for {
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := ready(attempt)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready (%v):\n%s", p.Name, p.err, p.Tail(40))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s: %v\n%s", p.Name, timeout, err, p.Tail(40))
		}
	}
}

// Stop sends sig and waits for the exit, killing the process if it takes
// longer than grace. It returns how the process exited, nil for status 0.
func (p *Process) Stop(sig os.Signal, grace time.Duration) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not exit within %s of %v and was killed", p.Name, grace, sig)
	}
}

// EndedBy reports whether err says the process died of sig. etcd re-raises
// SIGTERM after its clean-up and kube-controller-manager does not handle
// it, so for them that is a clean stop.
func EndedBy(err error, sig syscall.Signal) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	status, ok := exit.Sys().(syscall.WaitStatus)
	return ok && status.Signaled() && status.Signal() == sig
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string {
	data, err := os.ReadFile(p.Log)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "--- last lines of " + p.Log + " ---\n" + string(bytes.Join(lines, []byte("\n")))
}
