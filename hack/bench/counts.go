// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
)

// counters are an apiserver's own cumulative counters, read from its
// /metrics: what it has allocated and asked etcd for so far. Unlike time,
// they do not move with what else the machine is doing, so a ratio of
// them between two binaries under the same load says what one costs over
// the other with a precision that two shared cores cannot give a timed
// figure. Goroutines is a gauge, read as it is.
type counters struct {
	AllocBytes   float64 // go_gc_heap_allocs_bytes_total
	AllocObjects float64 // go_gc_heap_allocs_objects_total
	EtcdRequests float64 // etcd_requests_total, every operation and type
	Goroutines   float64 // go_goroutines
}

// The Go runtime's counters as client_golang names them for
// /gc/heap/allocs:bytes and /gc/heap/allocs:objects (the apiserver's
// registry exports every runtime metric), and the apiserver's count of the
// requests its storage sent etcd.
const (
	metricAllocBytes   = "go_gc_heap_allocs_bytes_total"
	metricAllocObjects = "go_gc_heap_allocs_objects_total"
	metricEtcdRequests = "etcd_requests_total"
	metricGoroutines   = "go_goroutines"
	// metricLiveHeap is /gc/heap/live:bytes: what the last collection
	// found live.
	metricLiveHeap = "go_gc_heap_live_bytes"
)

// readCounters scrapes the apiserver's /metrics once.
func readCounters(ctx context.Context, c kubernetes.Interface) (counters, error) {
	var n counters
	seen := map[string]bool{}
	err := scrape(ctx, c, func(name, _ string, value float64) {
		seen[name] = true
		switch name {
		case metricAllocBytes:
			n.AllocBytes = value
		case metricAllocObjects:
			n.AllocObjects = value
		case metricEtcdRequests:
			n.EtcdRequests += value
		case metricGoroutines:
			n.Goroutines = value
		}
	})
	if err != nil {
		return counters{}, err
	}
	for _, name := range []string{metricAllocBytes, metricAllocObjects, metricEtcdRequests, metricGoroutines} {
		if !seen[name] {
			return counters{}, fmt.Errorf("the apiserver's /metrics has no %s", name)
		}
	}
	return n, nil
}

// perRequest is what was counted between before and after, per request of
// the load; the goroutines are after's.
func perRequest(before, after counters, requests int) counters {
	if requests <= 0 {
		return counters{Goroutines: after.Goroutines}
	}
	r := float64(requests)
	return counters{
		AllocBytes:   (after.AllocBytes - before.AllocBytes) / r,
		AllocObjects: (after.AllocObjects - before.AllocObjects) / r,
		EtcdRequests: (after.EtcdRequests - before.EtcdRequests) / r,
		Goroutines:   after.Goroutines,
	}
}

// scrape reads the apiserver's /metrics and calls each for every sample.
func scrape(ctx context.Context, c kubernetes.Interface, each func(name, line string, value float64)) error {
	body, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("/metrics: %w", err)
	}
	return eachSample(body, each)
}
