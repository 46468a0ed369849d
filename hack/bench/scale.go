// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

// The scale benchmark (`make bench-scale`, `bench -scale`): how the cost of
// each side grows with the cluster. For each side it starts a control plane
// with kwok's fake nodes (scalecluster.go), then grows the cluster step by
// step (nodes, pods through Deployments, PodSecurityPolicies and
// PersistentVolumeLabel rules) and measures at each step:
//   - the time the step's Deployments take to become available, and the
//     apiserver's CPU per request while they roll out;
//   - with the cluster at that size, a probe's latencies (scaleworkload.go),
//     and what else shaped them: etcd's mean fsync and commit, and how busy
//     the machine and the apiserver were (measuredProbe);
//   - the apiserver's resident memory.
// Sides run one after another, each alone on the machine.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	pspclient "github.com/turnstile-k8s/turnstile/pkg/client/clientset/versioned"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// scaleStep is the size a step grows the cluster to.
type scaleStep struct {
	Nodes       int `json:"nodes"`
	Pods        int `json:"pods"`
	Policies    int `json:"policies"`
	VolumeRules int `json:"volumeRules"`
}

func (s scaleStep) String() string {
	return fmt.Sprintf("%d nodes, %d pods, %d policies, %d volume rules", s.Nodes, s.Pods, s.Policies, s.VolumeRules)
}

// parseSteps reads "NODES/PODS/POLICIES/RULES,...": each step at least as
// big as the one before (a step only adds).
func parseSteps(s string) ([]scaleStep, error) {
	var steps []scaleStep
	for i, field := range strings.Split(s, ",") {
		parts := strings.Split(strings.TrimSpace(field), "/")
		if len(parts) != 4 {
			return nil, fmt.Errorf("-steps: step %d %q: want NODES/PODS/POLICIES/RULES", i+1, field)
		}
		var n [4]int
		for j, p := range parts {
			v, err := strconv.Atoi(p)
			if err != nil || v < 1 {
				return nil, fmt.Errorf("-steps: step %d %q: %q is not a positive number", i+1, field, p)
			}
			n[j] = v
		}
		step := scaleStep{Nodes: n[0], Pods: n[1], Policies: n[2], VolumeRules: n[3]}
		if len(steps) > 0 {
			prev := steps[len(steps)-1]
			if step.Nodes < prev.Nodes || step.Pods < prev.Pods || step.Policies < prev.Policies || step.VolumeRules < prev.VolumeRules {
				return nil, fmt.Errorf("-steps: step %d (%s) is smaller than step %d (%s): steps only grow", i+1, step, i, prev)
			}
		}
		steps = append(steps, step)
	}
	return steps, nil
}

type scaleOptions struct {
	steps        []scaleStep
	sides        string
	out          string
	admission    string
	probes       int
	listProbes   int
	listFor      time.Duration
	concurrency  int
	replicas     int
	clientQPS    int
	leaseSeconds int
	podCIDR      string
	stepTimeout  time.Duration
	minMemoryMiB float64
	profile      time.Duration
	// repeats is how many times every side grows through the steps, in
	// turns whose order alternates (A B, then B A), so that neither side
	// always runs on the machine first.
	repeats int
	// samePods sends every side its pods as Turnstile stores them
	// (workloadPod).
	samePods bool
}

// scaleSide is one control plane the benchmark grows.
type scaleSide struct {
	Name, Description string
	Binary            string // empty: our kube-apiserver
	Args              []string
	// Turnstile sides get the PodSecurityPolicies and the
	// PersistentVolumeLabel rules; upstream has neither.
	Turnstile bool
}

func scaleSides(admissionConfig string) []scaleSide {
	return []scaleSide{
		{
			Name:        "turnstile",
			Description: "Turnstile with every documented controller that can run together (all-documented)",
			Args:        []string{"--enable-admission-plugins=" + strings.Join(allDocumented, ","), "--admission-control-config-file=" + admissionConfig},
			Turnstile:   true,
		},
		{
			Name:        "upstream-same",
			Description: "upstream with the upstream plugins of all-documented, configured the same",
			Binary:      "kube-apiserver-upstream",
			Args:        []string{"--enable-admission-plugins=" + strings.Join(upstreamOnly(allDocumented), ","), "--admission-control-config-file=" + admissionConfig},
		},
		{
			Name:        "upstream",
			Description: "upstream with its default plugins",
			Binary:      "kube-apiserver-upstream",
		},
	}
}

// scaleFigure is what one side measured at one step.
type scaleFigure struct {
	Side string    `json:"side"`
	Step scaleStep `json:"step"`
	// Repeat is the turn, from 1, in which the side grew to Step.
	Repeat int `json:"repeat"`
	// Reached is false when the step could not be made; Reason says why.
	Reached bool   `json:"reached"`
	Reason  string `json:"reason,omitempty"`
	// RolloutSeconds is from the step's first Deployment create until
	// every workload pod is available.
	RolloutSeconds float64 `json:"rolloutSeconds"`
	// RolloutRequests and CPUPerRequestMs: the apiserver's requests
	// (apiserver_request_total) and CPU per request while the step grew
	// the cluster and its Deployments rolled out.
	RolloutRequests float64            `json:"rolloutRequests"`
	CPUPerRequestMs float64            `json:"cpuPerRequestMs"`
	Latency         map[string]latency `json:"latency,omitempty"`
	RSSMiB          float64            `json:"rssMiB"`
	PeakRSSMiB      float64            `json:"peakRssMiB"`
	// LiveHeapMiB is the heap in use after a garbage collection, once
	// the step is probed: the part of RSS that is neither garbage waiting
	// for the collector nor memory the runtime has yet to return.
	LiveHeapMiB float64 `json:"liveHeapMiB"`
	HeapProfile string  `json:"heapProfile,omitempty"`
	// Profile is a CPU profile of the rollout's first seconds, attributed
	// to admission plugins; its File is the raw profile.
	Profile *profileReport `json:"profile,omitempty"`
	// SettleSeconds is how long the apiserver's CPU kept falling after
	// the rollout, before the probe; BackgroundCores is its CPU, in
	// cores, over the last window before the probe: what the controllers
	// and kwok's heartbeats cost while the probe measures.
	SettleSeconds   float64 `json:"settleSeconds"`
	BackgroundCores float64 `json:"backgroundCores"`
	// BackgroundProfile is a CPU profile of settleWindow once settled,
	// before the probe: where the background cores go.
	BackgroundProfile string `json:"backgroundProfile,omitempty"`
	// EtcdFsyncMs and EtcdCommitMs are etcd's mean WAL fsync and backend
	// commit while the probe ran (etcdDisk): the disk's part in the
	// probe's write latencies, which is not the apiserver's.
	EtcdFsyncMs  float64 `json:"etcdFsyncMs"`
	EtcdCommitMs float64 `json:"etcdCommitMs"`
	// ProbeMachineBusy is the share of the machine's CPUs busy while the
	// probe ran, and ProbeAPIServerCores the apiserver's part, in cores:
	// at 30,000 pods the writes queue for CPU that the apiserver shares
	// with etcd, kwok and the controllers.
	ProbeMachineBusy    float64 `json:"probeMachineBusy"`
	ProbeAPIServerCores float64 `json:"probeApiserverCores"`
	// ProbeCPUPerRequestMs is the apiserver's CPU per request it answered
	// while the probe ran, the background's requests included: with equal
	// cores, a side that answers fewer requests spends more on each.
	ProbeCPUPerRequestMs float64 `json:"probeCpuPerRequestMs"`
	// AllocPerRequestKiB and ProbeAllocPerRequestKiB are the heap bytes
	// the apiserver allocated per request during the rollout and the
	// probe, and ProbeGCShare its garbage collector's share of its CPU
	// during the probe: on a heap of a gigabyte a collection takes seconds
	// of CPU, and what a side allocates decides how often one comes.
	AllocPerRequestKiB      float64 `json:"allocPerRequestKiB"`
	ProbeAllocPerRequestKiB float64 `json:"probeAllocPerRequestKiB"`
	ProbeGCShare            float64 `json:"probeGcShare"`
	// ProbeProfile is a CPU profile of the probe's first probeProfileFor,
	// its writes on a large cluster: where the apiserver's cores go while
	// the write latencies are measured.
	ProbeProfile *profileReport `json:"probeProfile,omitempty"`
}

type scaleReport struct {
	Started time.Time     `json:"started"`
	Machine string        `json:"machine"`
	Sides   []scaleSide   `json:"sides"`
	Steps   []scaleStep   `json:"steps"`
	Figures []scaleFigure `json:"figures"`
	// SamePods says every side was sent its pods as Turnstile's
	// PodSecurityPolicy stores them (-same-pods): such a run compares the
	// binaries holding the same objects, and does not merge with the others.
	SamePods bool `json:"samePods,omitempty"`
	// Summary and Verdicts are written with the report: Figures by side
	// and step, and whether each side is within tolerance of the baseline.
	Summary  []scaleSummary `json:"summary,omitempty"`
	Verdicts []scaleVerdict `json:"verdicts,omitempty"`
}

func runScale(ctx context.Context, o scaleOptions) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	root, pki, err := workspace("turnstile-bench-scale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	admissionConfig := filepath.Join(root, "admission-config.yaml")
	volumeRules := filepath.Join(root, "persistentvolumelabel.yaml")
	if err := writeScaleAdmissionConfig(o.admission, admissionConfig, volumeRules); err != nil {
		return err
	}
	sides, err := chooseSides(scaleSides(admissionConfig), o.sides)
	if err != nil {
		return err
	}
	rep := scaleReport{Started: time.Now().UTC(), Machine: machine(), Sides: sides, Steps: o.steps, SamePods: o.samePods}
	for repeat := 1; repeat <= o.repeats; repeat++ {
		for _, side := range turnOrder(rep.Sides, repeat) {
			// Each side starts from the first step's rules.
			if err := writeFileAtomic(volumeRules, []byte(volumeRulesYAML(o.steps[0].VolumeRules))); err != nil {
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
				_ = writeScaleReport(o.out, rep, nil)
				return fmt.Errorf("%s: %w", side.Name, err)
			}
			// A turn at 30,000 pods is a quarter of an hour: its figures
			// are on disk as soon as it ends, not only after the last.
			if err := writeScaleReport(o.out, rep, nil); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "bench-scale: %s: turn %d of %d done; the table so far: %s\n", side.Name, repeat, o.repeats, filepath.Join(o.out, "table.md"))
		}
	}
	return writeScaleReport(o.out, rep, os.Stdout)
}

// chooseSides returns the sides that names (comma-separated) lists, in
// the order of all; a name that is no side is an error that lists them.
func chooseSides(all []scaleSide, names string) ([]scaleSide, error) {
	var known []string
	for _, side := range all {
		known = append(known, side.Name)
	}
	wanted := map[string]bool{}
	for _, name := range splitList(names) {
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("-sides: %q is not a side; the sides are %s", name, strings.Join(known, ", "))
		}
		wanted[name] = true
	}
	var chosen []scaleSide
	for _, side := range all {
		if wanted[side.Name] {
			chosen = append(chosen, side)
		}
	}
	if len(chosen) == 0 {
		return nil, fmt.Errorf("-sides %q: no side chosen; the sides are %s", names, strings.Join(known, ", "))
	}
	return chosen, nil
}

// turnOrder is the order the sides grow in on turn repeat (from 1): as
// given on odd turns, reversed on even ones.
func turnOrder(sides []scaleSide, repeat int) []scaleSide {
	order := slices.Clone(sides)
	if repeat%2 == 0 {
		slices.Reverse(order)
	}
	return order
}

// fileStem names a side's files of one step and turn in the output
// directory; the first turn keeps the names a single run has always had.
func fileStem(side string, repeat, step int) string {
	if repeat <= 1 {
		return fmt.Sprintf("%s-step%d", side, step)
	}
	return fmt.Sprintf("%s-run%d-step%d", side, repeat, step)
}

// writeScaleAdmissionConfig writes hack/bench's AdmissionConfiguration with
// its paths made absolute and PersistentVolumeLabel's entry pointing at
// volumeRules, which each step rewrites and Turnstile reloads.
func writeScaleAdmissionConfig(source, dest, volumeRules string) error {
	source, err := filepath.Abs(source)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(source)
	if err != nil {
		return err
	}
	var config map[string]any
	if err := yaml.Unmarshal(data, &config); err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	plugins, _ := config["plugins"].([]any)
	found := false
	for _, p := range plugins {
		entry, ok := p.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: plugins: an entry is not a mapping", source)
		}
		if entry["name"] == "PersistentVolumeLabel" {
			entry["path"], found = volumeRules, true
			delete(entry, "configuration")
		} else if path, ok := entry["path"].(string); ok && !filepath.IsAbs(path) {
			entry["path"] = filepath.Join(filepath.Dir(source), path)
		}
	}
	if !found {
		return fmt.Errorf("%s: no PersistentVolumeLabel entry for the scale benchmark's rules", source)
	}
	out, err := yaml.Marshal(config)
	if err != nil {
		return err
	}
	return os.WriteFile(dest, out, 0o600)
}

// growSide starts side's control plane and grows it through every step. A
// step it cannot make ends the side with a figure that says why; the
// error is for failures of the benchmark itself.
func growSide(ctx context.Context, o scaleOptions, dir string, pki *framework.PKI, side scaleSide, repeat int, volumeRules string) ([]scaleFigure, error) {
	fmt.Fprintf(os.Stderr, "bench-scale: %s: turn %d of %d: %s\n", side.Name, repeat, o.repeats, side.Description)
	c, err := startScaleCluster(dir, pki, side.Binary, side.Args, o)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	var psps pspclient.Interface
	if side.Turnstile {
		quiet := rest.CopyConfig(c.config)
		quiet.WarningHandler = rest.NoWarnings{}
		if psps, err = pspclient.NewForConfig(quiet); err != nil {
			return nil, err
		}
	}
	prober, err := c.apiserver.Config(probeUser)
	if err != nil {
		return nil, err
	}
	prober.QPS, prober.Burst, prober.ContentType = -1, 0, c.config.ContentType
	probeClient, err := kubernetes.NewForConfig(prober)
	if err != nil {
		return nil, err
	}
	if err := setupScale(ctx, c.client); err != nil {
		return nil, err
	}
	if err := waitForServiceAccounts(ctx, c); err != nil {
		return nil, err
	}
	var figures []scaleFigure
	for i, step := range o.steps {
		fmt.Fprintf(os.Stderr, "bench-scale: %s: step %d of %d: %s\n", side.Name, i+1, len(o.steps), step)
		f := scaleFigure{Side: side.Name, Step: step, Repeat: repeat}
		if mem, err := procMiB("/proc/meminfo", "MemAvailable:"); err == nil && mem < o.minMemoryMiB {
			f.Reason = fmt.Sprintf("not attempted: %.0f MiB of memory available, below -min-memory %.0f MiB", mem, o.minMemoryMiB)
			fmt.Fprintf(os.Stderr, "bench-scale: %s: %s\n", side.Name, f.Reason)
			return append(figures, f), nil
		}
		if err := growStep(ctx, o, c, psps, probeClient, side, step, i, volumeRules, &f); err != nil {
			// The step's own time is up; the evidence gets a minute.
			late, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			f.Reason = err.Error() + "; " + c.evidence(late, filepath.Join(o.out, fileStem(side.Name, repeat, i+1)+"-logs"))
			cancel()
			fmt.Fprintf(os.Stderr, "bench-scale: %s: step %d not reached: %s\n", side.Name, i+1, f.Reason)
			return append(figures, f), nil
		}
		f.Reached = true
		figures = append(figures, f)
	}
	return figures, nil
}

func growStep(ctx context.Context, o scaleOptions, c *scaleCluster, psps pspclient.Interface, probeClient kubernetes.Interface, side scaleSide, step scaleStep, index int, volumeRules string, f *scaleFigure) error {
	ctx, cancel := context.WithTimeout(ctx, o.stepTimeout)
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
	if err := ensurePolicies(ctx, c.client, psps, step.Policies, workers); err != nil {
		return err
	}
	if err := ensureNodes(ctx, c.client, step.Nodes, workers); err != nil {
		return err
	}
	began := time.Now()
	profiled := c.profileInBackground(ctx, o.profile)
	if err := ensureDeployments(ctx, c.client, step.Pods, o.replicas, workers, o.samePods); err != nil {
		return err
	}
	if err := c.waitAvailable(ctx, side.Name, step.Pods); err != nil {
		return err
	}
	f.RolloutSeconds = time.Since(began).Seconds()
	files := filepath.Join(o.out, fileStem(side.Name, f.Repeat, index+1))
	cpu, err := profiled()
	if err != nil {
		return fmt.Errorf("CPU profile of the rollout: %w", err)
	}
	report, err := attribute(cpu, 0, o.profile)
	if err != nil {
		return err
	}
	report.Of, report.File = side.Name+": the rollout's first seconds", files+".cpu.pprof"
	if err := writeProfile(cpu, report.File); err != nil {
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
	background, err := c.cpuProfile(ctx, settleWindow)
	if err != nil {
		return fmt.Errorf("CPU profile of the background: %w", err)
	}
	f.BackgroundProfile = files + ".background.cpu.pprof"
	if err := writeProfile(background, f.BackgroundProfile); err != nil {
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
	pid := c.apiserver.Pid()
	if f.RSSMiB, err = procMiB(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:"); err != nil {
		return err
	}
	if f.PeakRSSMiB, err = peakRSSMiB(pid); err != nil {
		return err
	}
	heap, live, err := c.liveHeap(ctx)
	if err != nil {
		return err
	}
	f.LiveHeapMiB = live
	f.HeapProfile = files + ".heap.pprof"
	return writeProfile(heap, f.HeapProfile)
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
func (c *scaleCluster) measuredProbe(ctx context.Context, probeClient kubernetes.Interface, o scaleOptions, step scaleStep, index int, files string, f *scaleFigure) error {
	diskBefore, err := c.etcdDisk(ctx)
	if err != nil {
		return err
	}
	busyBefore, totalBefore, err := machineTicks()
	if err != nil {
		return err
	}
	before, err := c.usage(ctx)
	if err != nil {
		return err
	}
	began := time.Now()
	profiled := c.profileInBackground(ctx, probeProfileFor)
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
	busyAfter, totalAfter, err := machineTicks()
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
	report, err := attribute(cpu, 0, probeProfileFor)
	if err != nil {
		return err
	}
	report.Of, report.File = f.Side+": the probe's first seconds", files+".probe.cpu.pprof"
	f.ProbeProfile = &report
	return writeProfile(cpu, report.File)
}

// waitAvailable waits until pods workload pods are available, printing
// progress every 15 s.
func (c *scaleCluster) waitAvailable(ctx context.Context, side string, pods int) error {
	last, seen := time.Now(), 0
	for {
		available, deployments, err := availablePods(ctx, c.client)
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
			if _, err := c.client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
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
	last, err := cpuSeconds(c.apiserver.Pid())
	if err != nil {
		return 0, 0, err
	}
	for {
		select {
		case <-ctx.Done():
			return 0, 0, context.Cause(ctx)
		case <-time.After(settleWindow):
		}
		now, err := cpuSeconds(c.apiserver.Pid())
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
	if u.cpu, err = cpuSeconds(c.apiserver.Pid()); err != nil {
		return usage{}, err
	}
	seen := map[string]bool{}
	err = c.scrape(ctx, func(name, line string, value float64) {
		seen[name] = true
		switch name {
		case "apiserver_request_total":
			u.requests += value
		case metricAllocBytes:
			u.allocBytes = value
		case metricGCCPU:
			u.gcCPU = value
		}
	})
	if err != nil {
		return usage{}, err
	}
	for _, name := range []string{"apiserver_request_total", metricAllocBytes, metricGCCPU} {
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
	return scrape(ctx, c.client, each)
}

// eachSample calls each for every sample of a Prometheus text exposition:
// the metric's name, the whole line (for its labels) and the value.
func eachSample(body []byte, each func(name, line string, value float64)) error {
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.etcd.URL+"/metrics", nil)
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
	err := eachSample(body, func(name, _ string, value float64) {
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
			return fmt.Errorf("kube-apiserver refused the %d PersistentVolumeLabel rules of %s (its log: %s)", rules, path, c.apiserver.Log)
		}
		if err := c.alive(ctx); err != nil {
			return fmt.Errorf("waiting for the reload of %s: %w", path, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// scaleOps are the probe's operations in the order of the table.
var scaleOps = []string{opPodCreate, opBinding, opPodStatus, opVolumeCreate, opListPodsNS, opListPodsPage, opListNodes}

// tableHeader writes a Markdown table's header: columns, then a column per
// probe operation named with suffix; the first column left-aligned, the
// figures right-aligned.
func tableHeader(w io.Writer, columns []string, suffix string) {
	fmt.Fprintf(w, "| %s |", strings.Join(columns, " | "))
	for _, op := range scaleOps {
		fmt.Fprintf(w, " %s %s |", op, suffix)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---:|", len(columns)-1+len(scaleOps)))
}

// printScaleTable prints every turn's figures, then the report's summary
// and verdicts (writeScaleReport fills them).
func printScaleTable(w io.Writer, rep scaleReport) {
	fmt.Fprintln(w)
	if rep.SamePods {
		fmt.Fprintf(w, "Every side was sent its pods as Turnstile's PodSecurityPolicy stores them (-same-pods: the %s annotation, no privilege escalation, every capability dropped).\n\n", pspAnnotation)
	}
	tableHeader(w, []string{"side", "turn", "nodes", "pods", "policies", "rules", "rollout s", "CPU ms/req", "alloc KiB/req", "RSS MiB", "live heap MiB", "admission / PSP % of CPU", "settle s / cores", "etcd fsync / commit ms", "probe: busy % / apiserver cores / ms/req", "probe: GC % / alloc KiB/req"}, "p50/p99 ms")
	for _, f := range rep.Figures {
		s := f.Step
		if !f.Reached {
			fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | not reached: %s |\n", f.Side, f.Repeat, s.Nodes, s.Pods, s.Policies, s.VolumeRules, f.Reason)
			continue
		}
		disk, busy, alloc, gc := "-", "-", "-", "-" // not measured: a merged run from before these columns
		if f.EtcdFsyncMs > 0 {
			disk = fmt.Sprintf("%.1f / %.1f", f.EtcdFsyncMs, f.EtcdCommitMs)
		}
		if f.ProbeMachineBusy > 0 {
			busy = fmt.Sprintf("%.0f / %.2f", 100*f.ProbeMachineBusy, f.ProbeAPIServerCores)
		}
		if f.ProbeCPUPerRequestMs > 0 {
			busy += fmt.Sprintf(" / %.2f", f.ProbeCPUPerRequestMs)
		}
		if f.AllocPerRequestKiB > 0 {
			alloc = fmt.Sprintf("%.0f", f.AllocPerRequestKiB)
			gc = fmt.Sprintf("%.0f / %.0f", 100*f.ProbeGCShare, f.ProbeAllocPerRequestKiB)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %.0f | %.2f | %s | %.0f | %.0f | %s | %.0f / %.2f | %s | %s | %s |", f.Side, f.Repeat, s.Nodes, s.Pods, s.Policies, s.VolumeRules, f.RolloutSeconds, f.CPUPerRequestMs, alloc, f.RSSMiB, f.LiveHeapMiB, f.Profile.shares(), f.SettleSeconds, f.BackgroundCores, disk, busy, gc)
		for _, op := range scaleOps {
			l := f.Latency[op]
			fmt.Fprintf(w, " %.1f / %.1f |", l.P50, l.P99)
		}
		fmt.Fprintln(w)
	}
	printSummaryTable(w, rep.Summary)
	printVerdictTable(w, rep.Verdicts)
}

// spread is one measure over the turns that reached a step.
type spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// spreadOf is the median and range of values; of none, the zero spread
// (printed as not measured).
func spreadOf(values []float64) spread {
	if len(values) == 0 {
		return spread{}
	}
	return spread{Median: median(values), Min: slices.Min(values), Max: slices.Max(values)}
}

// scaleSummary is one side at one step over every turn that reached it.
// A single run's p99 at these sizes moves by more than 10% from run to
// run of the same binary, so comparisons are between medians.
type scaleSummary struct {
	Side  string    `json:"side"`
	Step  scaleStep `json:"step"`
	Turns int       `json:"turns"`
	// ProbeRounds is the write rounds of each turn's probe: a merge
	// holds a step to one count, and steps may differ.
	ProbeRounds     int    `json:"probeRounds"`
	RolloutSeconds  spread `json:"rolloutSeconds"`
	CPUPerRequestMs spread `json:"cpuPerRequestMs"`
	RSSMiB          spread `json:"rssMiB"`
	EtcdFsyncMs     spread `json:"etcdFsyncMs"`
	// ProbeBusy and ProbeCPUPerRequestMs: the machine's busy share and
	// the apiserver's CPU per request while the probe ran.
	ProbeBusy            spread `json:"probeBusy"`
	ProbeCPUPerRequestMs spread `json:"probeCpuPerRequestMs"`
	// ProbeGCShare and ProbeAllocPerRequestKiB: the garbage collector's
	// share of the apiserver's CPU and its allocation per request then.
	ProbeGCShare            spread            `json:"probeGcShare"`
	ProbeAllocPerRequestKiB spread            `json:"probeAllocPerRequestKiB"`
	P99                     map[string]spread `json:"p99Ms"`
}

// summarize gathers the figures of each side and step, sides in the
// report's order and steps in the run's; a step no turn reached has none.
func summarize(rep scaleReport) []scaleSummary {
	var out []scaleSummary
	for _, side := range rep.Sides {
		for _, step := range rep.Steps {
			turns := reachedTurns(rep, side.Name, step)
			if len(turns) == 0 {
				continue
			}
			of := func(value func(scaleFigure) float64) spread { return spreadOf(valuesOf(turns, value)) }
			s := scaleSummary{Side: side.Name, Step: step, Turns: len(turns), ProbeRounds: probeRounds(turns[0]),
				RolloutSeconds:          of(func(f scaleFigure) float64 { return f.RolloutSeconds }),
				CPUPerRequestMs:         of(func(f scaleFigure) float64 { return f.CPUPerRequestMs }),
				RSSMiB:                  of(rssOf),
				EtcdFsyncMs:             of(func(f scaleFigure) float64 { return f.EtcdFsyncMs }),
				ProbeBusy:               of(func(f scaleFigure) float64 { return f.ProbeMachineBusy }),
				ProbeCPUPerRequestMs:    of(func(f scaleFigure) float64 { return f.ProbeCPUPerRequestMs }),
				ProbeGCShare:            of(func(f scaleFigure) float64 { return f.ProbeGCShare }),
				ProbeAllocPerRequestKiB: of(func(f scaleFigure) float64 { return f.ProbeAllocPerRequestKiB }),
				P99:                     map[string]spread{}}
			for _, op := range scaleOps {
				s.P99[op] = of(p99Of(op))
			}
			out = append(out, s)
		}
	}
	return out
}

// reachedTurns is the figures of side's turns that reached step.
func reachedTurns(rep scaleReport, side string, step scaleStep) []scaleFigure {
	var turns []scaleFigure
	for _, f := range rep.Figures {
		if f.Side == side && f.Step == step && f.Reached {
			turns = append(turns, f)
		}
	}
	return turns
}

// valuesOf is one measure of each turn. A turn merged from a run older
// than the measure has zero there and is left out: the values are what
// the turns that have it measured.
func valuesOf(turns []scaleFigure, value func(scaleFigure) float64) []float64 {
	var values []float64
	for _, f := range turns {
		if v := value(f); v > 0 {
			values = append(values, v)
		}
	}
	return values
}

func rssOf(f scaleFigure) float64 { return f.RSSMiB }

func p99Of(op string) func(scaleFigure) float64 {
	return func(f scaleFigure) float64 { return f.Latency[op].P99 }
}

// baseline is the side every other is compared with: upstream with the
// same upstream plugins, so that a ratio is the cost of what Turnstile
// adds.
const baseline = "upstream-same"

// printSummaryTable prints the medians over the turns, their range, and
// each side's ratio to the baseline's median at the same step.
func printSummaryTable(w io.Writer, summaries []scaleSummary) {
	base := map[scaleStep]scaleSummary{}
	for _, s := range summaries {
		if s.Side == baseline {
			base[s.Step] = s
		}
	}
	cell := func(v spread, of float64, format string) string {
		if v == (spread{}) {
			return "-" // not measured: merged runs from before the column
		}
		text := fmt.Sprintf(format+" ("+format+"–"+format+")", v.Median, v.Min, v.Max)
		if of > 0 {
			text += fmt.Sprintf(" ×%.2f", v.Median/of)
		}
		return text
	}
	fmt.Fprintf(w, "\nMedian (lowest–highest) over the turns that reached each step; ×: the median's ratio to %s's at the same step.\n\n", baseline)
	tableHeader(w, []string{"side", "pods", "turns", "write rounds", "rollout s", "CPU ms/req", "RSS MiB", "etcd fsync ms", "probe: busy %", "probe: CPU ms/req", "probe: GC %", "probe: alloc KiB/req"}, "p99 ms")
	for _, s := range summaries {
		b, compared := base[s.Step]
		if s.Side == baseline {
			compared = false
		}
		of := func(v spread) float64 {
			if compared {
				return v.Median
			}
			return 0
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |", s.Side, s.Step.Pods, s.Turns, s.ProbeRounds,
			cell(s.RolloutSeconds, of(b.RolloutSeconds), "%.0f"), cell(s.CPUPerRequestMs, of(b.CPUPerRequestMs), "%.2f"), cell(s.RSSMiB, of(b.RSSMiB), "%.0f"),
			cell(s.EtcdFsyncMs, of(b.EtcdFsyncMs), "%.1f"), cell(percent(s.ProbeBusy), of(percent(b.ProbeBusy)), "%.0f"), cell(s.ProbeCPUPerRequestMs, of(b.ProbeCPUPerRequestMs), "%.2f"),
			cell(percent(s.ProbeGCShare), of(percent(b.ProbeGCShare)), "%.0f"), cell(s.ProbeAllocPerRequestKiB, of(b.ProbeAllocPerRequestKiB), "%.0f"))
		for _, op := range scaleOps {
			fmt.Fprintf(w, " %s |", cell(s.P99[op], of(b.P99[op]), "%.0f"))
		}
		fmt.Fprintln(w)
	}
}

// percent is a spread of shares in percent.
func percent(v spread) spread {
	return spread{Median: 100 * v.Median, Min: 100 * v.Min, Max: 100 * v.Max}
}

// writeScaleReport writes the tables (table.md, and to echo unless nil),
// the raw figures with their summary and verdicts (latest.json) and the
// plot's panels (plot.json, for test/scale/plot): each metric's median over
// the turns against the pods in the cluster, one line per side. The summary
// and verdicts are computed here, once a write.
func writeScaleReport(dir string, rep scaleReport, echo io.Writer) error {
	rep.Summary, rep.Verdicts = summarize(rep), verdicts(rep)
	var table strings.Builder
	printScaleTable(&table, rep)
	if echo != nil {
		fmt.Fprint(echo, table.String())
	}
	if err := os.WriteFile(filepath.Join(dir, "table.md"), []byte(table.String()), 0o644); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "latest.json"), data, 0o644); err != nil {
		return err
	}
	type series struct {
		Name   string       `json:"name"`
		Points [][2]float64 `json:"points"`
	}
	type panel struct {
		Title  string   `json:"title"`
		X      string   `json:"x"`
		Y      string   `json:"y"`
		Series []series `json:"series"`
	}
	metric := func(title, y string, value func(scaleSummary) float64) panel {
		p := panel{Title: title, X: "pods in the cluster", Y: y}
		for _, side := range rep.Sides {
			s := series{Name: side.Name}
			for _, m := range rep.Summary {
				if m.Side == side.Name {
					s.Points = append(s.Points, [2]float64{float64(m.Step.Pods), value(m)})
				}
			}
			p.Series = append(p.Series, s)
		}
		return p
	}
	p99 := func(op string) func(scaleSummary) float64 {
		return func(m scaleSummary) float64 { return m.P99[op].Median }
	}
	panels := []panel{
		metric("pod create p99", "ms", p99(opPodCreate)),
		metric("binding p99", "ms", p99(opBinding)),
		metric("pod status patch p99", "ms", p99(opPodStatus)),
		metric("volume create p99", "ms", p99(opVolumeCreate)),
		metric("list pods of a namespace p99", "ms", p99(opListPodsNS)),
		metric("list nodes p99", "ms", p99(opListNodes)),
		metric("apiserver CPU per request", "ms", func(m scaleSummary) float64 { return m.CPUPerRequestMs.Median }),
		metric("apiserver resident memory", "MiB", func(m scaleSummary) float64 { return m.RSSMiB.Median }),
		metric("Deployments available after", "s", func(m scaleSummary) float64 { return m.RolloutSeconds.Median }),
	}
	plot, err := json.MarshalIndent(map[string]any{"title": "kube-apiserver cost against cluster size (" + rep.Machine + ")", "panels": panels}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "plot.json"), plot, 0o644)
}
