// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/attribution"
	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/measure"
	pspclient "github.com/turnstile-k8s/turnstile/pkg/client/clientset/versioned"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

func Run(ctx context.Context, o Options) error {
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	root, pki, err := measure.Workspace("turnstile-bench-scale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	admissionConfig := filepath.Join(root, "admission-config.yaml")
	volumeRules := filepath.Join(root, "persistentvolumelabel.yaml")
	if err := writeScaleAdmissionConfig(o.Admission, admissionConfig, volumeRules); err != nil {
		return err
	}
	sides, err := chooseSides(scaleSides(admissionConfig), o.Sides)
	if err != nil {
		return err
	}
	rep := scaleReport{Started: time.Now().UTC(), Machine: measure.Machine(), Sides: sides, Steps: o.Steps, SamePods: o.SamePods}
	for repeat := 1; repeat <= o.Repeats; repeat++ {
		for _, side := range turnOrder(rep.Sides, repeat) {
			// Each side starts from the first step's rules.
			if err := writeFileAtomic(volumeRules, []byte(volumeRulesYAML(o.Steps[0].VolumeRules))); err != nil {
				return err
			}
			dir := filepath.Join(root, fmt.Sprintf("%s-run%d", side.Name, repeat))
			figures, err := growSide(ctx, o, dir, pki, side, repeat, volumeRules)
			rep.Figures = append(rep.Figures, figures...)
			// etcd's data of a large step is gigabytes; the next turn
			// starts afresh.
			_ = os.RemoveAll(dir)
			if err == nil && ctx.Err() != nil {
				err = fmt.Errorf("interrupted: %w", context.Cause(ctx))
			}
			if err != nil {
				// What ran so far is still worth its table.
				_ = writeScaleReport(o.Out, rep, nil)
				return fmt.Errorf("%s: %w", side.Name, err)
			}
			// A turn at 30,000 pods is a quarter of an hour: its figures
			// are on disk as soon as it ends, not only after the last.
			if err := writeScaleReport(o.Out, rep, nil); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "bench-scale: %s: turn %d of %d done; the table so far: %s\n", side.Name, repeat, o.Repeats, filepath.Join(o.Out, "table.md"))
		}
	}
	return writeScaleReport(o.Out, rep, os.Stdout)
}

// growSide starts side's control plane and grows it through every step. A
// step it cannot make ends the side with a figure that says why; the
// error is for failures of the benchmark itself.
func growSide(ctx context.Context, o Options, dir string, pki *framework.PKI, side scaleSide, repeat int, volumeRules string) ([]scaleFigure, error) {
	fmt.Fprintf(os.Stderr, "bench-scale: %s: turn %d of %d: %s\n", side.Name, repeat, o.Repeats, side.Description)
	c, err := startScaleCluster(dir, pki, side.Binary, side.Args, o)
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	var psps pspclient.Interface
	if side.Turnstile {
		quiet := rest.CopyConfig(c.Config)
		quiet.WarningHandler = rest.NoWarnings{}
		if psps, err = pspclient.NewForConfig(quiet); err != nil {
			return nil, err
		}
	}
	prober, err := c.APIServer.Config(probeUser)
	if err != nil {
		return nil, err
	}
	prober.QPS, prober.Burst, prober.ContentType = -1, 0, c.Config.ContentType
	probeClient, err := kubernetes.NewForConfig(prober)
	if err != nil {
		return nil, err
	}
	if err := setupScale(ctx, c.Client); err != nil {
		return nil, err
	}
	if err := waitForServiceAccounts(ctx, c); err != nil {
		return nil, err
	}
	var figures []scaleFigure
	for i, step := range o.Steps {
		fmt.Fprintf(os.Stderr, "bench-scale: %s: step %d of %d: %s\n", side.Name, i+1, len(o.Steps), step)
		f := scaleFigure{Side: side.Name, Step: step, Repeat: repeat}
		if mem, err := measure.ProcMiB("/proc/meminfo", "MemAvailable:"); err == nil && mem < o.MinMemoryMiB {
			f.Reason = fmt.Sprintf("not attempted: %.0f MiB of memory available, below -min-memory %.0f MiB", mem, o.MinMemoryMiB)
			fmt.Fprintf(os.Stderr, "bench-scale: %s: %s\n", side.Name, f.Reason)
			return append(figures, f), nil
		}
		if err := growStep(ctx, o, c, psps, probeClient, side, step, i, volumeRules, &f); err != nil {
			// The step's own time is up; the evidence gets a minute.
			late, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			f.Reason = err.Error() + "; " + c.evidence(late, filepath.Join(o.Out, fileStem(side.Name, repeat, i+1)+"-logs"))
			cancel()
			fmt.Fprintf(os.Stderr, "bench-scale: %s: step %d not reached: %s\n", side.Name, i+1, f.Reason)
			return append(figures, f), nil
		}
		f.Reached = true
		figures = append(figures, f)
	}
	return figures, nil
}

func growStep(ctx context.Context, o Options, c *scaleCluster, psps pspclient.Interface, probeClient kubernetes.Interface, side scaleSide, step scaleStep, index int, volumeRules string, f *scaleFigure) error {
	ctx, cancel := context.WithTimeout(ctx, o.StepTimeout)
	defer cancel()
	before, err := c.usage(ctx)
	if err != nil {
		return err
	}
	if side.Turnstile {
		if err := c.reloadVolumeRules(ctx, volumeRules, step.VolumeRules); err != nil {
			return err
		}
	}
	workers := 16
	if err := ensurePolicies(ctx, c.Client, psps, step.Policies, workers); err != nil {
		return err
	}
	if err := ensureNodes(ctx, c.Client, step.Nodes, workers); err != nil {
		return err
	}
	began := time.Now()
	profiled := c.ProfileInBackground(ctx, o.Profile)
	if err := ensureDeployments(ctx, c.Client, step.Pods, o.Replicas, workers, o.SamePods); err != nil {
		return err
	}
	if err := c.waitAvailable(ctx, side.Name, step.Pods); err != nil {
		return err
	}
	f.RolloutSeconds = time.Since(began).Seconds()
	files := filepath.Join(o.Out, fileStem(side.Name, f.Repeat, index+1))
	cpu, err := profiled()
	if err != nil {
		return fmt.Errorf("CPU profile of the rollout: %w", err)
	}
	report, err := attribution.Attribute(cpu, 0, o.Profile)
	if err != nil {
		return err
	}
	report.Of, report.File = side.Name+": the rollout's first seconds", files+".cpu.pprof"
	if err := measure.WriteProfile(cpu, report.File); err != nil {
		return err
	}
	f.Profile = &report
	after, err := c.usage(ctx)
	if err != nil {
		return err
	}
	rollout := after.since(before)
	f.RolloutRequests = rollout.requests
	f.CPUPerRequestMs, f.AllocPerRequestKiB = rollout.perRequest()
	fmt.Fprintf(os.Stderr, "bench-scale: %s: available in %.0f s; settling\n", side.Name, f.RolloutSeconds)
	if f.SettleSeconds, f.BackgroundCores, err = c.settle(ctx); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench-scale: %s: settled after %.0f s at %.2f cores; profiling the background, then probing\n", side.Name, f.SettleSeconds, f.BackgroundCores)
	background, err := c.CPUProfile(ctx, settleWindow)
	if err != nil {
		return fmt.Errorf("CPU profile of the background: %w", err)
	}
	f.BackgroundProfile = files + ".background.cpu.pprof"
	if err := measure.WriteProfile(background, f.BackgroundProfile); err != nil {
		return err
	}
	if err := c.measuredProbe(ctx, probeClient, o, step, index, files, f); err != nil {
		return err
	}
	for op, l := range f.Latency {
		if l.Errors > 0 {
			return fmt.Errorf("probe: %d of the %q requests failed, the first: %s", l.Errors, op, l.FirstError)
		}
	}
	pid := c.APIServer.Pid()
	if f.RSSMiB, err = measure.ProcMiB(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:"); err != nil {
		return err
	}
	if f.PeakRSSMiB, err = measure.PeakRSSMiB(pid); err != nil {
		return err
	}
	heap, live, err := c.LiveHeap(ctx)
	if err != nil {
		return err
	}
	f.LiveHeapMiB = live
	f.HeapProfile = files + ".heap.pprof"
	return measure.WriteProfile(heap, f.HeapProfile)
}

// probeProfileFor is how long the probe's CPU profile runs. The writes
// come first and take about 20 s at 30,000 pods with 1,000 rounds, where
// the write latencies are in question; on a small cluster they take less
// and the profile runs on into the LISTs.
const probeProfileFor = 10 * time.Second

// measuredProbe runs the probe and records, beside its latencies, what
// else shaped them: etcd's disk, the machine's and the apiserver's CPU
// meanwhile, and a CPU profile of its first probeProfileFor (files is the
// stem of the profile's file).
func (c *scaleCluster) measuredProbe(ctx context.Context, probeClient kubernetes.Interface, o Options, step scaleStep, index int, files string, f *scaleFigure) error {
	diskBefore, err := c.etcdDisk(ctx)
	if err != nil {
		return err
	}
	busyBefore, totalBefore, err := measure.MachineTicks()
	if err != nil {
		return err
	}
	before, err := c.usage(ctx)
	if err != nil {
		return err
	}
	began := time.Now()
	profiled := c.ProfileInBackground(ctx, probeProfileFor)
	if f.Latency, err = probe(ctx, probeClient, o, step.VolumeRules, index); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	after, err := c.usage(ctx)
	if err != nil {
		return err
	}
	spent := after.since(before)
	f.ProbeAPIServerCores = spent.cpu / time.Since(began).Seconds()
	f.ProbeCPUPerRequestMs, f.ProbeAllocPerRequestKiB = spent.perRequest()
	if spent.cpu > 0 {
		f.ProbeGCShare = spent.gcCPU / spent.cpu
	}
	busyAfter, totalAfter, err := measure.MachineTicks()
	if err != nil {
		return err
	}
	if totalAfter > totalBefore {
		f.ProbeMachineBusy = (busyAfter - busyBefore) / (totalAfter - totalBefore)
	}
	diskAfter, err := c.etcdDisk(ctx)
	if err != nil {
		return err
	}
	f.EtcdFsyncMs, f.EtcdCommitMs = diskAfter.meansSince(diskBefore)
	cpu, err := profiled()
	if err != nil {
		return fmt.Errorf("CPU profile of the probe: %w", err)
	}
	report, err := attribution.Attribute(cpu, 0, probeProfileFor)
	if err != nil {
		return err
	}
	report.Of, report.File = f.Side+": the probe's first seconds", files+".probe.cpu.pprof"
	f.ProbeProfile = &report
	return measure.WriteProfile(cpu, report.File)
}

// waitAvailable waits until pods workload pods are available, printing
// progress every 15 s.
func (c *scaleCluster) waitAvailable(ctx context.Context, side string, pods int) error {
	last, seen := time.Now(), 0
	for {
		available, deployments, err := availablePods(ctx, c.Client)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if err == nil {
			seen = available
		}
		if seen >= pods {
			return nil
		}
		if err := c.alive(ctx); err != nil {
			return fmt.Errorf("%d of %d pods available: %w", seen, pods, err)
		}
		if time.Since(last) > 15*time.Second {
			fmt.Fprintf(os.Stderr, "bench-scale: %s: %d of %d pods available (%d Deployments)\n", side, available, pods, deployments)
			last = time.Now()
		}
		time.Sleep(2 * time.Second)
	}
}

// waitForServiceAccounts waits for the service account controller's
// default accounts, without which the ServiceAccount plugin refuses pods.
func waitForServiceAccounts(ctx context.Context, c *scaleCluster) error {
	namespaces := []string{probeNamespace}
	for i := range scaleNamespaces {
		namespaces = append(namespaces, workloadNamespace(i))
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, ns := range namespaces {
		for {
			if _, err := c.Client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
				break
			}
			if err := c.alive(ctx); err != nil {
				return fmt.Errorf("waiting for the default service account of %s: %w", ns, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	return nil
}

// The probe waits for the apiserver's CPU to stop falling after a
// rollout: the controllers' and kwok's backlog drains for seconds to
// minutes, longer on a larger cluster, and a probe taken during the drain
// measures how far behind each side happened to be rather than its cost.
const (
	settleWindow = 5 * time.Second
	settleMax    = 2 * time.Minute
)

// settle waits until one settleWindow's apiserver CPU is at least 90% of
// the window's before (settled), or settleMax. It returns the time it
// waited and the last window's CPU in cores.
func (c *scaleCluster) settle(ctx context.Context) (seconds, cores float64, err error) {
	began := time.Now()
	previous := -1.0
	last, err := measure.CPUSeconds(c.APIServer.Pid())
	if err != nil {
		return 0, 0, err
	}
	for {
		select {
		case <-ctx.Done():
			return 0, 0, context.Cause(ctx)
		case <-time.After(settleWindow):
		}
		now, err := measure.CPUSeconds(c.APIServer.Pid())
		if err != nil {
			return 0, 0, err
		}
		cores = (now - last) / settleWindow.Seconds()
		if waited := time.Since(began); settled(previous, cores) || waited >= settleMax {
			return waited.Seconds(), cores, nil
		}
		previous, last = cores, now
	}
}

// settled reports whether a window's CPU (current) has stopped falling
// from the window's before (previous, negative for none): within 10%, or
// higher.
func settled(previous, current float64) bool {
	return previous >= 0 && current >= 0.9*previous
}

// usage is what the apiserver has spent so far: CPU seconds (from /proc),
// requests answered (the sum of apiserver_request_total), and from the Go
// runtime's metrics the bytes allocated on the heap and the CPU seconds
// its garbage collector took.
type usage struct {
	cpu, requests, allocBytes, gcCPU float64
}

// metricGCCPU is the Go runtime's /cpu/classes/gc/total:cpu-seconds as
// client_golang names it: the runtime's estimate of its garbage
// collector's CPU, brought up to date at each collection.
const metricGCCPU = "go_cpu_classes_gc_total_cpu_seconds_total"

func (c *scaleCluster) usage(ctx context.Context) (usage, error) {
	var u usage
	var err error
	if u.cpu, err = measure.CPUSeconds(c.APIServer.Pid()); err != nil {
		return usage{}, err
	}
	seen := map[string]bool{}
	err = c.scrape(ctx, func(name, line string, value float64) {
		seen[name] = true
		switch name {
		case "apiserver_request_total":
			u.requests += value
		case measure.MetricAllocBytes:
			u.allocBytes = value
		case metricGCCPU:
			u.gcCPU = value
		}
	})
	if err != nil {
		return usage{}, err
	}
	for _, name := range []string{"apiserver_request_total", measure.MetricAllocBytes, metricGCCPU} {
		if !seen[name] {
			return usage{}, fmt.Errorf("the apiserver's /metrics has no %s", name)
		}
	}
	return u, nil
}

// since is what was spent between before and u.
func (u usage) since(before usage) usage {
	return usage{u.cpu - before.cpu, u.requests - before.requests, u.allocBytes - before.allocBytes, u.gcCPU - before.gcCPU}
}

// perRequest is CPU milliseconds and KiB allocated per request answered,
// zero for none.
func (u usage) perRequest() (cpuMs, allocKiB float64) {
	if u.requests <= 0 {
		return 0, 0
	}
	return u.cpu / u.requests * 1000, u.allocBytes / u.requests / 1024
}

// scrape reads the apiserver's /metrics and calls each for every sample.
func (c *scaleCluster) scrape(ctx context.Context, each func(name, line string, value float64)) error {
	return measure.Scrape(ctx, c.Client, each)
}

// etcdDisk is etcd's own time on the disk so far: its WAL's fsyncs and its
// backend's commits, counted and summed. Every write the probe times waits
// for a WAL fsync, and a backend commit (batched, every 100 ms) holds up
// the writes being applied while it runs. The disk belongs to neither
// apiserver: a turn whose writes were slow while etcd's fsyncs were slow
// too measured the disk.
type etcdDisk struct {
	Fsyncs, FsyncSeconds, Commits, CommitSeconds float64
}

// etcdDisk reads etcd's /metrics (plain HTTP on loopback, as StartEtcd
// serves it).
func (c *scaleCluster) etcdDisk(ctx context.Context) (etcdDisk, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Etcd.URL+"/metrics", nil)
	if err != nil {
		return etcdDisk{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return etcdDisk{}, fmt.Errorf("etcd's /metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s", resp.Status)
	}
	var d etcdDisk
	if err == nil {
		d, err = parseEtcdDisk(body)
	}
	if err != nil {
		return etcdDisk{}, fmt.Errorf("etcd's /metrics: %w", err)
	}
	return d, nil
}

// parseEtcdDisk takes etcdDisk from etcd's metrics.
func parseEtcdDisk(body []byte) (etcdDisk, error) {
	var d etcdDisk
	fields := map[string]*float64{
		"etcd_disk_wal_fsync_duration_seconds_count":      &d.Fsyncs,
		"etcd_disk_wal_fsync_duration_seconds_sum":        &d.FsyncSeconds,
		"etcd_disk_backend_commit_duration_seconds_count": &d.Commits,
		"etcd_disk_backend_commit_duration_seconds_sum":   &d.CommitSeconds,
	}
	err := measure.EachSample(body, func(name, _ string, value float64) {
		if field, ok := fields[name]; ok {
			*field = value
		}
	})
	if err == nil && d.Fsyncs == 0 {
		err = fmt.Errorf("no etcd_disk_wal_fsync_duration_seconds")
	}
	return d, err
}

// meansSince returns the mean fsync and commit, in milliseconds, of those
// etcd made after before; zero where it made none.
func (d etcdDisk) meansSince(before etcdDisk) (fsyncMs, commitMs float64) {
	mean := func(seconds, count float64) float64 {
		if count <= 0 {
			return 0
		}
		return seconds / count * 1000
	}
	return mean(d.FsyncSeconds-before.FsyncSeconds, d.Fsyncs-before.Fsyncs), mean(d.CommitSeconds-before.CommitSeconds, d.Commits-before.Commits)
}

// reloadVolumeRules rewrites PersistentVolumeLabel's rules and waits until
// Turnstile's admission configuration controller has reloaded them.
func (c *scaleCluster) reloadVolumeRules(ctx context.Context, path string, rules int) error {
	want := volumeRulesYAML(rules)
	if current, err := os.ReadFile(path); err == nil && string(current) == want {
		return nil
	}
	reloads := func(status string) (float64, error) {
		sum := 0.0
		err := c.scrape(ctx, func(name, line string, value float64) {
			if name == "apiserver_admission_config_controller_automatic_reloads_total" && strings.Contains(line, `status="`+status+`"`) {
				sum += value
			}
		})
		return sum, err
	}
	before, err := reloads("success")
	if err != nil {
		return err
	}
	failedBefore, err := reloads("failure")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(path, []byte(want)); err != nil {
		return err
	}
	for {
		if n, err := reloads("success"); err != nil {
			return err
		} else if n > before {
			return nil
		}
		if n, err := reloads("failure"); err != nil {
			return err
		} else if n > failedBefore {
			return fmt.Errorf("kube-apiserver refused the %d PersistentVolumeLabel rules of %s (its log: %s)", rules, path, c.APIServer.Log)
		}
		if err := c.alive(ctx); err != nil {
			return fmt.Errorf("waiting for the reload of %s: %w", path, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
