// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package measure

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/google/pprof/profile"
)

// CPUProfile takes a CPU profile of the apiserver for d through its
// /debug/pprof endpoint (on by default: --profiling).
func (s *Server) CPUProfile(ctx context.Context, d time.Duration) (*profile.Profile, error) {
	data, err := s.Client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
		Param("seconds", strconv.Itoa(int(d.Seconds()))).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("/debug/pprof/profile: %w", err)
	}
	return profile.Parse(bytes.NewReader(data))
}

// ProfileInBackground starts a CPU profile of d and returns a function
// that waits for it.
func (s *Server) ProfileInBackground(ctx context.Context, d time.Duration) func() (*profile.Profile, error) {
	type taken struct {
		p   *profile.Profile
		err error
	}
	done := make(chan taken, 1)
	go func() {
		p, err := s.CPUProfile(ctx, d)
		done <- taken{p, err}
	}()
	return func() (*profile.Profile, error) {
		got := <-done
		return got.p, got.err
	}
}

// LiveHeap collects the apiserver's garbage (its heap profile is taken
// with gc=1) and returns that profile and the live heap the collection
// found, in MiB: go_gc_heap_live_bytes, the runtime's /gc/heap/live:bytes.
// That figure is exact. The profile's in-use total is not: it is a sample
// (one allocation in every 512 KiB), and it moved by several MiB between
// two servers holding the same objects; it is kept to say where the heap
// is, not how large.
func (s *Server) LiveHeap(ctx context.Context) (*profile.Profile, float64, error) {
	data, err := s.Client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("/debug/pprof/heap: %w", err)
	}
	p, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, 0, fmt.Errorf("/debug/pprof/heap: %w", err)
	}
	live := -1.0
	if err := Scrape(ctx, s.Client, func(name, _ string, value float64) {
		if name == MetricLiveHeap {
			live = value
		}
	}); err != nil {
		return nil, 0, err
	}
	if live < 0 {
		return nil, 0, fmt.Errorf("the apiserver's /metrics has no %s", MetricLiveHeap)
	}
	return p, live / (1 << 20), nil
}

// WriteProfile writes p for `go tool pprof`.
func WriteProfile(p *profile.Profile, path string) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := p.Write(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// pprof reads one of the apiserver's /debug/pprof profiles.
func (s *Server) Pprof(ctx context.Context, name string) (*profile.Profile, error) {
	data, err := s.Client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/" + name).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("/debug/pprof/%s: %w", name, err)
	}
	return profile.Parse(bytes.NewReader(data))
}
