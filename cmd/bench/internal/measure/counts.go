// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package measure

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// Counters are an apiserver's own cumulative Counters, read from its
// /metrics: what it has allocated and asked etcd for so far. Unlike time,
// they do not move with what else the machine is doing, so a ratio of
// them between two binaries under the same load says what one costs over
// the other with a precision that two shared cores cannot give a timed
// figure. Goroutines is a gauge, read as it is.
type Counters struct {
	AllocBytes   float64 // go_gc_heap_allocs_bytes_total
	AllocObjects float64 // go_gc_heap_allocs_objects_total
	EtcdRequests float64 // etcd_requests_total, every operation and type
	Goroutines   float64 // go_goroutines
}

// The Go runtime's Counters as client_golang names them for
// /gc/heap/allocs:bytes and /gc/heap/allocs:objects (the apiserver's
// registry exports every runtime metric), and the apiserver's count of the
// requests its storage sent etcd.
const (
	MetricAllocBytes   = "go_gc_heap_allocs_bytes_total"
	MetricAllocObjects = "go_gc_heap_allocs_objects_total"
	MetricEtcdRequests = "etcd_requests_total"
	MetricGoroutines   = "go_goroutines"
	// MetricLiveHeap is /gc/heap/live:bytes: what the last collection
	// found live.
	MetricLiveHeap = "go_gc_heap_live_bytes"
)

// ReadCounters scrapes the apiserver's /metrics once.
func ReadCounters(ctx context.Context, c kubernetes.Interface) (Counters, error) {
	var n Counters
	seen := map[string]bool{}
	err := Scrape(ctx, c, func(name, _ string, value float64) {
		seen[name] = true
		switch name {
		case MetricAllocBytes:
			n.AllocBytes = value
		case MetricAllocObjects:
			n.AllocObjects = value
		case MetricEtcdRequests:
			n.EtcdRequests += value
		case MetricGoroutines:
			n.Goroutines = value
		}
	})
	if err != nil {
		return Counters{}, err
	}
	for _, name := range []string{MetricAllocBytes, MetricAllocObjects, MetricEtcdRequests, MetricGoroutines} {
		if !seen[name] {
			return Counters{}, fmt.Errorf("the apiserver's /metrics has no %s", name)
		}
	}
	return n, nil
}

// PerRequest is what was counted between before and after, per request of
// the load; the goroutines are after's.
func PerRequest(before, after Counters, requests int) Counters {
	if requests <= 0 {
		return Counters{Goroutines: after.Goroutines}
	}
	r := float64(requests)
	return Counters{
		AllocBytes:   (after.AllocBytes - before.AllocBytes) / r,
		AllocObjects: (after.AllocObjects - before.AllocObjects) / r,
		EtcdRequests: (after.EtcdRequests - before.EtcdRequests) / r,
		Goroutines:   after.Goroutines,
	}
}

// scrape reads the apiserver's /metrics and calls each for every sample.
func Scrape(ctx context.Context, c kubernetes.Interface, each func(name, line string, value float64)) error {
	body, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("/metrics: %w", err)
	}
	return EachSample(body, each)
}

// EachSample calls each for every sample of a Prometheus text exposition:
// the metric's name, the whole line (for its labels) and the value.
func EachSample(body []byte, each func(name, line string, value float64)) error {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		if value, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			each(name, line, value)
		}
	}
	return sc.Err()
}
