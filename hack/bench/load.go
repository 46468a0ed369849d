// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
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

// server is an etcd and apiserver pair started for one scenario.
type server struct {
	etcd      *framework.Etcd
	apiserver *framework.APIServer
	config    *rest.Config // the load's: system:masters, protobuf, no throttling
	client    kubernetes.Interface
	// profileFile is where profiledLoad writes the raw CPU profile.
	profileFile string
}

// startServer starts an etcd and the apiserver binary (empty: ours) in dir,
// with godebug, when not empty, as the apiserver's GODEBUG.
func startServer(dir string, pki *framework.PKI, binary string, args []string, godebug string) (*server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var command []string
	if godebug != "" {
		if binary == "" {
			binary = "kube-apiserver"
		}
		bin, err := framework.Binary(binary)
		if err != nil {
			return nil, err
		}
		command = []string{"env", "GODEBUG=" + godebug, bin}
	}
	etcd, err := framework.StartEtcd(dir)
	if err != nil {
		return nil, err
	}
	s := &server{etcd: etcd}
	s.apiserver, err = framework.StartAPIServer(framework.APIServerConfig{Binary: binary, Command: command, Dir: filepath.Join(dir, "apiserver"), Etcd: etcd, PKI: pki, Args: args})
	if err != nil {
		s.stop()
		return nil, err
	}
	config, err := s.apiserver.Config("bench-admin", "system:masters")
	if err != nil {
		s.stop()
		return nil, err
	}
	// No client-side throttling, protobuf as controllers use, so the
	// server is what is measured.
	config.QPS, config.Burst = -1, 0
	config.ContentType = "application/vnd.kubernetes.protobuf"
	s.config = config
	s.client, err = kubernetes.NewForConfig(config)
	if err != nil {
		s.stop()
	}
	return s, err
}

func (s *server) stop() {
	if s.apiserver != nil {
		_ = s.apiserver.Stop(syscall.SIGTERM)
	}
	_ = s.etcd.Stop()
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
	PerRequest counters `json:"perRequest"`
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
func (s *server) load(ctx context.Context, sc scenario, concurrency int, d time.Duration, steps int64, name string) (figure, error) {
	ns := "bench-" + sc.name + "-" + name
	if _, err := s.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return figure{}, err
	}
	if _, err := s.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		return figure{}, err
	}
	pid := s.apiserver.Pid()
	countedBefore, err := readCounters(ctx, s.client)
	if err != nil {
		return figure{}, err
	}
	cpuBefore, err := cpuSeconds(pid)
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
				if err := sc.step(runCtx, s.client, ns, client, seq, &lat); err != nil && runCtx.Err() == nil {
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
	cpuAfter, err := cpuSeconds(pid)
	if err != nil {
		return figure{}, err
	}
	countedAfter, err := readCounters(ctx, s.client)
	if err != nil {
		return figure{}, err
	}
	rss, err := peakRSSMiB(pid)
	if err != nil {
		return figure{}, err
	}
	_, live, err := s.liveHeap(ctx)
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
		PerRequest: perRequest(countedBefore, countedAfter, len(all)), LiveHeapMiB: live,
	}
	if len(all) > 0 {
		f.CPUPer1k = (cpuAfter - cpuBefore) / float64(len(all)) * 1000
	}
	return f, nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times; 100 on
// every Linux architecture Kubernetes runs on.
const clockTicks = 100

// cpuSeconds is the process's user plus system CPU time.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th fields of the whole line.
	rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
	fields := strings.Fields(rest)
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad CPU times", pid)
	}
	return (utime + stime) / clockTicks, nil
}

// machineTicks is the machine's CPU time so far, from /proc/stat's first
// line, in clock ticks: busy (all but idle and iowait) and in all.
func machineTicks() (busy, total float64, err error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	return parseMachineTicks(data)
}

func parseMachineTicks(data []byte) (busy, total float64, err error) {
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	// cpu user nice system idle iowait irq softirq steal (guest and
	// guest_nice are counted in user and nice already).
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: first line %q: want cpu and eight times", line)
	}
	var ticks [8]float64
	for i := range ticks {
		if ticks[i], err = strconv.ParseFloat(fields[i+1], 64); err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		total += ticks[i]
	}
	return total - ticks[3] - ticks[4], total, nil
}

// peakRSSMiB is the process's peak resident set size (VmHWM).
func peakRSSMiB(pid int) (float64, error) {
	return procMiB(fmt.Sprintf("/proc/%d/status", pid), "VmHWM:")
}

// procMiB reads a size in kB from a /proc file of "Field: N kB" lines
// (/proc/<pid>/status, /proc/meminfo), in MiB.
func procMiB(path, field string) (float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("%s has no %s", path, field)
}

func numCPU() int { return runtime.NumCPU() }
