// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// reloadWindow is how soon a good configuration must be in force.
const reloadWindow = 10 * time.Second

// A server under a steady load of creates gets three changes to its
// admission configuration, the way a kubelet updates a ConfigMap volume
// (the files are symlinks into a directory that a new ..data symlink
// replaces): EventRateLimit's limit lowered, then a broken file, then a
// fixed one with a high limit. Each good change is in force within 10 s,
// the broken one changes nothing, the metrics count two successes and one
// failure, and no request of the load fails.
func TestAdmissionConfigReloadUnderLoad(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	config := filepath.Join(dir, "admission.yaml")
	volume := newConfigMapVolume(t, filepath.Join(dir, "volume"))
	volume.write(t, map[string]string{"eventratelimit.yaml": eventRateLimitConfig(10000, 10000)})
	write(t, config, "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n  - name: EventRateLimit\n    path: "+
		filepath.Join(volume.dir, "eventratelimit.yaml")+"\n")
	s, c := startServer(t, "admission-reload", "--enable-admission-plugins=EventRateLimit", "--admission-control-config-file="+config)
	ns := createNamespace(t, c)

	load := startCreateLoad(t, c, ns, 120)
	rejects := func(n int) int { // events refused of n written at once
		refused := 0
		for i := range n {
			if err := policyEvent(ctx, c, ns, "reload", fmt.Sprintf("cm-%d", i), false); apierrors.IsTooManyRequests(err) {
				refused++
			} else if err != nil {
				t.Fatalf("event: %v", err)
			}
		}
		return refused
	}
	if got := rejects(30); got != 0 {
		t.Fatalf("%d of 30 events refused under the first, high limit", got)
	}

	// 1. The limit lowered: a burst of 3 for the whole server.
	changed := time.Now()
	volume.write(t, map[string]string{"eventratelimit.yaml": eventRateLimitConfig(1, 3)})
	waitFor(t, "the lowered limit", func() bool { return rejects(10) > 0 })
	t.Logf("lowered limit in force %s after the write", time.Since(changed).Round(time.Millisecond))

	// 2. A broken file: refused, the low limit stays.
	volume.write(t, map[string]string{"eventratelimit.yaml": strings.Replace(eventRateLimitConfig(1, 3), "qps: 1", "qps: -1", 1)})
	waitFor(t, "the failed reload in the metrics", func() bool { return reloadCount(t, s.Client, "failure") == 1 })
	if got := rejects(10); got == 0 {
		t.Error("after a broken file, 10 events in a row were all admitted: the last good limit is no longer in force")
	}
	logged, err := os.ReadFile(s.Log)
	if err != nil {
		t.Fatal(err)
	}
	if want := "plugin EventRateLimit (path " + filepath.Join(volume.dir, "eventratelimit.yaml") + "): limits[0].qps: Invalid value: -1: must be positive"; !strings.Contains(strings.ReplaceAll(string(logged), `\"`, `"`), want) {
		t.Errorf("the server's log lacks %q", want)
	}

	// 3. Fixed, with a high limit again.
	changed = time.Now()
	volume.write(t, map[string]string{"eventratelimit.yaml": eventRateLimitConfig(10000, 10000)})
	waitFor(t, "the raised limit", func() bool { return rejects(20) == 0 })
	t.Logf("raised limit in force %s after the write", time.Since(changed).Round(time.Millisecond))

	if got := reloadCount(t, s.Client, "success"); got != 2 {
		t.Errorf("automatic_reloads_total{status=success} = %v, want 2", got)
	}
	if got := reloadCount(t, s.Client, "failure"); got != 1 {
		t.Errorf("automatic_reloads_total{status=failure} = %v, want 1", got)
	}
	if info := metricLines(t, s.Client, "apiserver_admission_config_controller_last_config_info"); len(info) != 1 || !strings.Contains(info[0], `hash="sha256:`) {
		t.Errorf("last_config_info: %q, want one series with the configuration's hash", info)
	}
	// Let the load run long enough to mean something.
	time.Sleep(time.Until(load.began.Add(10 * time.Second)))
	created, failed, rate := load.stop()
	t.Logf("load: %d creates, %.0f/s, %d failed", created, rate, failed)
	if failed != 0 {
		t.Errorf("%d creates of the load failed during the reloads", failed)
	}
	if rate < 100 {
		t.Errorf("the load ran at %.0f creates/s, want at least 100", rate)
	}
}

func eventRateLimitConfig(qps, burst int) string {
	return fmt.Sprintf("apiVersion: eventratelimit.admission.k8s.io/v1alpha1\nkind: Configuration\nlimits:\n  - type: Server\n    qps: %d\n    burst: %d\n", qps, burst)
}

// configMapVolume lays files out as the kubelet lays out a ConfigMap
// volume: each file a symlink through ..data, a symlink to a timestamped
// directory that every update replaces by rename.
type configMapVolume struct {
	dir string
	n   int
}

func newConfigMapVolume(t *testing.T, dir string) *configMapVolume {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return &configMapVolume{dir: dir}
}

func (v *configMapVolume) write(t *testing.T, files map[string]string) {
	t.Helper()
	v.n++
	version := fmt.Sprintf("..%d_%d", time.Now().UnixNano(), v.n)
	for name, content := range files {
		write(t, filepath.Join(v.dir, version, name), content)
		link := filepath.Join(v.dir, name)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(version, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(reloadWindow)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, reloadWindow)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// createLoad creates ConfigMaps at a steady rate and counts failures.
type createLoad struct {
	cancel          context.CancelFunc
	wg              sync.WaitGroup
	created, failed atomic.Int64
	began           time.Time
	firstError      atomic.Value
}

func startCreateLoad(t *testing.T, c kubernetes.Interface, ns string, perSecond int) *createLoad {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	l := &createLoad{cancel: cancel, began: time.Now()}
	const workers = 8
	interval := time.Second * workers / time.Duration(perSecond)
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-%d-%d", w, i)}}
				if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					if ctx.Err() != nil {
						return
					}
					l.failed.Add(1)
					l.firstError.CompareAndSwap(nil, err.Error())
					continue
				}
				l.created.Add(1)
			}
		}()
	}
	t.Cleanup(cancel)
	return l
}

// stop ends the load and returns what it did.
func (l *createLoad) stop() (created, failed int64, perSecond float64) {
	took := time.Since(l.began)
	l.cancel()
	l.wg.Wait()
	if e := l.firstError.Load(); e != nil {
		fmt.Fprintf(os.Stderr, "load: first failure: %s\n", e)
	}
	return l.created.Load(), l.failed.Load(), float64(l.created.Load()) / took.Seconds()
}

var metricSample = regexp.MustCompile(`\s([0-9.e+-]+)$`)

// metricLines are the samples of a metric family on the server.
func metricLines(t *testing.T, client func(string, ...string) (kubernetes.Interface, error), name string) []string {
	t.Helper()
	c, err := client("e2e-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	body, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	var lines []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			lines = append(lines, line)
		}
	}
	return lines
}

// reloadCount is apiserver_admission_config_controller_automatic_reloads_total{status}.
func reloadCount(t *testing.T, client func(string, ...string) (kubernetes.Interface, error), status string) float64 {
	t.Helper()
	var sum float64
	for _, line := range metricLines(t, client, "apiserver_admission_config_controller_automatic_reloads_total") {
		if strings.Contains(line, `status="`+status+`"`) {
			if m := metricSample.FindStringSubmatch(line); m != nil {
				v, _ := strconv.ParseFloat(m[1], 64)
				sum += v
			}
		}
	}
	return sum
}
