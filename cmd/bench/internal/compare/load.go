// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package compare

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/measure"
	"github.com/turnstile-k8s/turnstile/test/fixtures"
)

// scenario is one kind of load. Each client calls step with its own
// sequence number until the run ends; step makes one or more requests and
// returns how many it made and their latencies.
type scenario struct {
	name string
	step func(ctx context.Context, c kubernetes.Interface, ns string, client, seq int, lat *[]time.Duration) error
}

var scenarios = []scenario{
	{name: "configmaps", step: configMapStep},
	{name: "pods", step: podStep},
	{name: "events", step: eventStep},
}

// timed runs one request and records its latency.
func timed(lat *[]time.Duration, request func() error) error {
	began := time.Now()
	err := request()
	*lat = append(*lat, time.Since(began))
	return err
}

// configMapStep creates a ConfigMap, gets it, updates it, and lists a page
// of the namespace: one of each verb.
func configMapStep(ctx context.Context, c kubernetes.Interface, ns string, client, seq int, lat *[]time.Duration) error {
	cms := c.CoreV1().ConfigMaps(ns)
	name := fmt.Sprintf("cm-%d-%d", client, seq)
	var cm *corev1.ConfigMap
	if err := timed(lat, func() (err error) {
		cm, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := timed(lat, func() (err error) { cm, err = cms.Get(ctx, name, metav1.GetOptions{}); return err }); err != nil {
		return err
	}
	cm.Data["k"] = "updated"
	if err := timed(lat, func() error { _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); return err }); err != nil {
		return err
	}
	return timed(lat, func() error { _, err := cms.List(ctx, metav1.ListOptions{Limit: 50}); return err })
}

func podStep(ctx context.Context, c kubernetes.Interface, ns string, client, seq int, lat *[]time.Duration) error {
	return timed(lat, func() error {
		_, err := c.CoreV1().Pods(ns).Create(ctx, fixtures.Pod(fmt.Sprintf("pod-%d-%d", client, seq), ""), metav1.CreateOptions{})
		return err
	})
}

func eventStep(ctx context.Context, c kubernetes.Interface, ns string, client, seq int, lat *[]time.Duration) error {
	now := metav1.Now()
	return timed(lat, func() error {
		_, err := c.CoreV1().Events(ns).Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("ev-%d-%d", client, seq)},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "bench", APIVersion: "v1"},
			Reason:         "Bench", Message: "load", Type: corev1.EventTypeNormal,
			Source: corev1.EventSource{Component: "bench"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
		}, metav1.CreateOptions{})
		return err
	})
}

// figure is what one run measured.
type figure struct {
	// Steps is how many steps of the scenario the run took.
	Steps      int64   `json:"steps"`
	Requests   int     `json:"requests"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"firstError,omitempty"`
	Throughput float64 `json:"throughput"`
	P50        float64 `json:"p50Ms"`
	P90        float64 `json:"p90Ms"`
	P99        float64 `json:"p99Ms"`
	CPUPer1k   float64 `json:"cpuSecondsPer1kRequests"`
	PeakRSSMiB float64 `json:"peakRssMiB"`
	// PerRequest is what the apiserver's own counters grew by during the
	// run, per request of the load, and its goroutines after it.
	PerRequest measure.Counters `json:"perRequest"`
	// LiveHeapMiB is the heap in use after the run, after a garbage
	// collection.
	LiveHeapMiB float64 `json:"liveHeapMiB"`
}

// load runs scenario s against the server with concurrency clients, in a
// namespace of its own, and measures the apiserver process. The run ends
// after steps steps of the scenario (its clients take them in turn), or
// with none given, after d; a run of steps ends at 4×d at the latest.
// The pairs run a number of steps, so that both sides do the same work
// and hold the same objects after it: their counters and live heaps
// compare one to one.
func load(ctx context.Context, s *measure.Server, sc scenario, concurrency int, d time.Duration, steps int64, name string) (figure, error) {
	ns := "bench-" + sc.name + "-" + name
	if _, err := s.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return figure{}, err
	}
	if _, err := s.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		return figure{}, err
	}
	pid := s.APIServer.Pid()
	countedBefore, err := measure.ReadCounters(ctx, s.Client)
	if err != nil {
		return figure{}, err
	}
	cpuBefore, err := measure.CPUSeconds(pid)
	if err != nil {
		return figure{}, err
	}
	limit := d
	if steps > 0 {
		limit = 4 * d
	}
	runCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var taken atomic.Int64
	more := func() bool {
		if runCtx.Err() != nil {
			return false
		}
		n := taken.Add(1)
		return steps <= 0 || n <= steps
	}
	var (
		mu       sync.Mutex
		all      []time.Duration
		errs     int
		firstErr string
		wg       sync.WaitGroup
	)
	began := time.Now()
	for client := 0; client < concurrency; client++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			var myErrs int
			var myFirst string
			for seq := 0; more(); seq++ {
				if err := sc.step(runCtx, s.Client, ns, client, seq, &lat); err != nil && runCtx.Err() == nil {
					myErrs++
					if myFirst == "" {
						myFirst = err.Error()
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			all = append(all, lat...)
			errs += myErrs
			if firstErr == "" {
				firstErr = myFirst
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	if steps > 0 {
		taken.Store(min(taken.Load(), steps))
	}
	cpuAfter, err := measure.CPUSeconds(pid)
	if err != nil {
		return figure{}, err
	}
	countedAfter, err := measure.ReadCounters(ctx, s.Client)
	if err != nil {
		return figure{}, err
	}
	rss, err := measure.PeakRSSMiB(pid)
	if err != nil {
		return figure{}, err
	}
	_, live, err := s.LiveHeap(ctx)
	if err != nil {
		return figure{}, err
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000
	}
	f := figure{
		Steps:    taken.Load(),
		Requests: len(all), Errors: errs, FirstError: firstErr,
		Throughput: float64(len(all)) / elapsed.Seconds(),
		P50:        pct(0.50), P90: pct(0.90), P99: pct(0.99),
		PeakRSSMiB: rss,
		PerRequest: measure.PerRequest(countedBefore, countedAfter, len(all)), LiveHeapMiB: live,
	}
	if len(all) > 0 {
		f.CPUPer1k = (cpuAfter - cpuBefore) / float64(len(all)) * 1000
	}
	return f, nil
}
