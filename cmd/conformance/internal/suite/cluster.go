// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/turnstile-k8s/turnstile/cmd/conformance/internal/profiles"
	"github.com/turnstile-k8s/turnstile/internal/ports"
)

// cluster is a running cmd/local-up.
type cluster struct {
	cmd             *exec.Cmd
	kubeconfig, log string
	done            chan struct{} // closed when local-up has exited
	err             error         // how it exited, set before done is closed
}

// startCluster starts local-up on free ports and waits for its ready
// message, with its output in dir/local-up.log. Its state is in -out's
// cluster/, the same for every profile (one runs at a time, and a socket's
// path under it must stay short).
func startCluster(ctx context.Context, o Options, p profiles.Profile, dir string) (*cluster, error) {
	state := filepath.Join(o.Out, "cluster")
	args := []string{"-dir", state, "-bin", o.Bin, "-nodes", strconv.Itoa(o.Nodes),
		"-images", o.Images, "-e2e-images", o.E2EImages, "-extra-images", o.ConformanceImage, "-containerd", o.Containerd}
	for _, flag := range []string{"-port", "-controller-manager-port", "-scheduler-port"} {
		port, err := ports.Free()
		if err != nil {
			return nil, err
		}
		args = append(args, flag, strconv.Itoa(port))
	}
	args = append(args, p.LocalUpArgs()...)
	logPath := filepath.Join(dir, "local-up.log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	c := &cluster{cmd: exec.Command(filepath.Join(o.Bin, "local-up"), args...), kubeconfig: filepath.Join(state, "admin.conf"), log: logPath, done: make(chan struct{})}
	fmt.Printf("conformance: starting the cluster: local-up %s\n", strings.Join(args, " "))
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.cmd.Stderr = c.cmd.Stdout
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	go func() {
		lines := bufio.NewScanner(out)
		signalled := false
		for lines.Scan() {
			fmt.Fprintln(log, lines.Text())
			if !signalled && strings.Contains(lines.Text(), "Ctrl-C stops it") {
				close(ready)
				signalled = true
			}
		}
		log.Close()
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	select {
	case <-ready:
		fmt.Printf("conformance: the cluster is ready (%s)\n", logPath)
		return c, nil
	case <-c.done:
		return nil, fmt.Errorf("local-up ended before the cluster was ready (%v):\n%s", c.err, tail(logPath, 30))
	case <-ctx.Done():
		_ = c.stop()
		return nil, errors.New("interrupted while the cluster started")
	case <-time.After(15 * time.Minute):
		_ = c.stop()
		return nil, fmt.Errorf("the cluster was not ready within 15 minutes:\n%s", tail(logPath, 30))
	}
}

// stop is Ctrl-C for local-up: it removes the nodes and stops the control
// plane, within three minutes.
func (c *cluster) stop() error {
	_ = c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.done:
		if c.err != nil {
			return fmt.Errorf("local-up: %w", c.err)
		}
		return nil
	case <-time.After(3 * time.Minute):
		_ = c.cmd.Process.Kill()
		return errors.New("local-up did not stop within 3 minutes; killed (make clean-local-style cleanup: local-up -clean -dir ...)")
	}
}

// cleanCluster removes what an earlier run's cluster left in state (its
// nodes too, when it was killed), with local-up's own -clean.
func cleanCluster(o Options, state string) error {
	if _, err := os.Stat(state); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	out, err := exec.Command(filepath.Join(o.Bin, "local-up"), "-dir", state, "-clean").CombinedOutput()
	if err != nil {
		return fmt.Errorf("removing the previous run's cluster in %s: %v\n%s", state, err, out)
	}
	return nil
}

// tail is the last n lines of a file, for an error message.
func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
