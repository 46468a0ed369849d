// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/attribution"
	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/plugins"
	turnstileadmission "github.com/turnstile-k8s/turnstile/pkg/admission"
	"github.com/turnstile-k8s/turnstile/pkg/admission/configfile"
)

func TestParseSteps(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		want    []scaleStep
	}{
		{in: "100/3000/1/1,1000/10000/100/100", want: []scaleStep{{100, 3000, 1, 1}, {1000, 10000, 100, 100}}},
		{in: " 5/50/2/3 ", want: []scaleStep{{5, 50, 2, 3}}},
		{in: "100/3000/1", err: `step 1 "100/3000/1": want NODES/PODS/POLICIES/RULES`},
		{in: "100/3000/0/1", err: `"0" is not a positive number`},
		{in: "100/x/1/1", err: `"x" is not a positive number`},
		{in: "100/3000/1/1,50/3000/1/1", err: "step 2 (50 nodes, 3000 pods, 1 policies, 1 volume rules) is smaller than step 1"},
	} {
		got, err := ParseSteps(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSteps(%q) = %v, want an error containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("ParseSteps(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("ParseSteps(%q)[%d] = %v, want %v", tc.in, i, got[i], tc.want[i])
			}
		}
	}
}

// TestScaleAdmissionConfig checks that what the benchmark hands the
// apiserver passes Turnstile's strict loader, with every step's rule count:
// a refused reload would stop the benchmark mid-run.
func TestScaleAdmissionConfig(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "admission-config.yaml")
	rules := filepath.Join(dir, "persistentvolumelabel.yaml")
	if err := writeScaleAdmissionConfig("../../admission-config.yaml", config, rules); err != nil {
		t.Fatal(err)
	}
	o := kubeoptions.NewAdmissionOptions()
	if err := turnstileadmission.Apply(o.GenericAdmission); err != nil {
		t.Fatal(err)
	}
	plugins := configfile.Plugins{Registered: o.GenericAdmission.Plugins.Registered(), Enabled: plugins.AllDocumented}
	for _, n := range []int{1, 100, 1000} {
		if err := writeFileAtomic(rules, []byte(volumeRulesYAML(n))); err != nil {
			t.Fatal(err)
		}
		if err := configfile.Validate(config, plugins); err != nil {
			t.Errorf("%d rules: the apiserver would refuse the configuration: %v", n, err)
		}
	}
	if got := strings.Count(volumeRulesYAML(7), "idRegex"); got != 7 {
		t.Errorf("volumeRulesYAML(7) has %d rules", got)
	}
	if err := writeScaleAdmissionConfig(filepath.Join(dir, "missing.yaml"), config, rules); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing source: %v, want a not-exist error", err)
	}
	noVolumeLabel := filepath.Join(dir, "no-pvl.yaml")
	if err := os.WriteFile(noVolumeLabel, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeScaleAdmissionConfig(noVolumeLabel, config, rules); err == nil || !strings.Contains(err.Error(), "no PersistentVolumeLabel entry") {
		t.Errorf("a source without PersistentVolumeLabel: %v", err)
	}
}

func TestRecorder(t *testing.T) {
	r := newRecorder()
	for i := 1; i <= 100; i++ {
		_ = r.time("op", func() error { time.Sleep(time.Duration(i) * 10 * time.Microsecond); return nil })
	}
	boom := errors.New("boom")
	if err := r.time("op", func() error { return boom }); err != boom {
		t.Errorf("time returned %v, want the request's error", err)
	}
	_ = r.time("failing", func() error { return boom })
	got := r.latencies()
	op := got["op"]
	if op.Count != 100 || op.Errors != 1 || op.FirstError != "boom" {
		t.Errorf("op = %+v, want 100 timed, 1 error", op)
	}
	if !(op.P50 > 0 && op.P50 <= op.P99) {
		t.Errorf("op: p50 %v, p99 %v", op.P50, op.P99)
	}
	if f := got["failing"]; f.Count != 0 || f.Errors != 1 {
		t.Errorf("failing = %+v, want only an error", f)
	}
}

func TestScaleReport(t *testing.T) {
	dir := t.TempDir()
	rep := scaleReport{
		Machine: "test",
		Sides:   []scaleSide{{Name: "turnstile"}, {Name: "upstream"}},
		Steps:   []scaleStep{{1, 10, 1, 1}, {2, 20, 2, 2}},
		Figures: []scaleFigure{
			{Side: "turnstile", Step: scaleStep{1, 10, 1, 1}, Repeat: 1, Reached: true, Latency: map[string]latency{opPodCreate: {Count: 1, P50: 1, P99: 2}}, LiveHeapMiB: 123, SettleSeconds: 35, BackgroundCores: 0.42, EtcdFsyncMs: 2.5, EtcdCommitMs: 4, ProbeMachineBusy: 0.934, ProbeAPIServerCores: 1.2, ProbeCPUPerRequestMs: 0.85, AllocPerRequestKiB: 48.4, ProbeAllocPerRequestKiB: 61.2, ProbeGCShare: 0.183,
				Profile: &attribution.ProfileReport{Chain: attribution.PluginCost{Share: 0.25}, Plugins: []attribution.PluginCost{{Plugin: "LimitRanger", Share: 0.1}, {Plugin: "PodSecurityPolicy", Share: 0.031}}}},
			{Side: "turnstile", Step: scaleStep{2, 20, 2, 2}, Repeat: 1, Reason: "not attempted: memory"},
			{Side: "upstream", Step: scaleStep{1, 10, 1, 1}, Repeat: 1, Reached: true},
			{Side: "upstream", Step: scaleStep{2, 20, 2, 2}, Repeat: 1, Reached: true},
		},
	}
	if err := writeScaleReport(dir, rep, nil); err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile(filepath.Join(dir, "table.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| turnstile | 1 | 1 | 10 | 1 | 1 |", "| 48 | 0 | 123 | 25.0 / 3.1 | 35 / 0.42 | 2.5 / 4.0 | 93 / 1.20 / 0.85 | 18 / 61 |", "1.0 / 2.0", "| 0 | - |", "| turnstile | 1 | 2 | 20 | 2 | 2 | not reached: not attempted: memory |"} {
		if !strings.Contains(string(table), want) {
			t.Errorf("table.md lacks %q:\n%s", want, table)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "plot.json"))
	if err != nil {
		t.Fatal(err)
	}
	var plot struct {
		Panels []struct {
			Title  string
			Series []struct {
				Name   string
				Points [][2]float64
			}
		}
	}
	if err := json.Unmarshal(data, &plot); err != nil {
		t.Fatal(err)
	}
	if len(plot.Panels) == 0 || plot.Panels[0].Title != "pod create p99" {
		t.Fatalf("plot.json panels: %+v", plot.Panels)
	}
	// An unreached step is no point: turnstile has one, upstream two.
	series := plot.Panels[0].Series
	if len(series) != 2 || len(series[0].Points) != 1 || series[0].Points[0] != [2]float64{10, 2} || len(series[1].Points) != 2 {
		t.Errorf("pod create p99 series: %+v", series)
	}
}

func TestChooseSides(t *testing.T) {
	all := scaleSides("config.yaml")
	for _, tc := range []struct{ in, want, err string }{
		{in: "upstream, turnstile", want: "turnstile upstream"},
		{in: "upstream-same", want: "upstream-same"},
		{in: "turnstile,upstream-sam", err: `"upstream-sam" is not a side; the sides are turnstile, upstream-same, upstream`},
		{in: "", err: "no side chosen"},
	} {
		got, err := chooseSides(all, strings.FieldsFunc(tc.in, func(r rune) bool { return r == ',' || r == ' ' }))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("chooseSides(%q) = %v, want an error containing %q", tc.in, err, tc.err)
			}
			continue
		}
		var names []string
		for _, side := range got {
			names = append(names, side.Name)
		}
		if err != nil || strings.Join(names, " ") != tc.want {
			t.Errorf("chooseSides(%q) = %v, %v; want %s", tc.in, names, err, tc.want)
		}
	}
}

func TestTurnOrder(t *testing.T) {
	sides := []scaleSide{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	names := func(s []scaleSide) string {
		var n []string
		for _, side := range s {
			n = append(n, side.Name)
		}
		return strings.Join(n, " ")
	}
	for repeat, want := range map[int]string{1: "a b c", 2: "c b a", 3: "a b c", 4: "c b a"} {
		if got := names(turnOrder(sides, repeat)); got != want {
			t.Errorf("turn %d: %s, want %s", repeat, got, want)
		}
	}
	if got := names(sides); got != "a b c" {
		t.Errorf("turnOrder changed its argument: %s", got)
	}
	if got := fileStem("turnstile", 1, 2); got != "turnstile-step2" {
		t.Errorf("fileStem of the first turn: %s", got)
	}
	if got := fileStem("turnstile", 3, 2); got != "turnstile-run3-step2" {
		t.Errorf("fileStem of the third turn: %s", got)
	}
}

// TestSummary checks that the summary takes the median over the turns that
// reached a step, its range, and the ratio to upstream-same's median.
func TestSummary(t *testing.T) {
	small, large := scaleStep{1, 10, 1, 1}, scaleStep{2, 20, 2, 2}
	figure := func(side string, repeat int, step scaleStep, p99, cpu float64) scaleFigure {
		f := scaleFigure{Side: side, Repeat: repeat, Step: step, Reached: true, CPUPerRequestMs: cpu, RSSMiB: 100, RolloutSeconds: 10, EtcdFsyncMs: cpu,
			Latency: map[string]latency{opPodCreate: {Count: 1000, P99: p99}}}
		if step == small { // the large step's turns stand for runs older than the probe's columns
			f.ProbeMachineBusy, f.ProbeCPUPerRequestMs, f.ProbeGCShare, f.ProbeAllocPerRequestKiB = cpu/5, 2*cpu, cpu/20, 10*cpu
		}
		return f
	}
	rep := scaleReport{
		Sides: []scaleSide{{Name: "turnstile"}, {Name: baseline}},
		Steps: []scaleStep{small, large},
		Figures: []scaleFigure{
			figure("turnstile", 1, small, 90, 3), figure(baseline, 1, small, 40, 2),
			figure(baseline, 2, small, 50, 2), figure("turnstile", 2, small, 50, 3),
			figure("turnstile", 3, small, 60, 4), figure(baseline, 3, small, 45, 2),
			figure(baseline, 1, large, 100, 2), figure(baseline, 2, large, 200, 4),
			{Side: "turnstile", Repeat: 1, Step: large, Reason: "not attempted: memory"},
		},
	}
	got := summarize(rep)
	if len(got) != 3 {
		t.Fatalf("summarize: %d summaries, want 3 (turnstile never reached the large step): %+v", len(got), got)
	}
	if s := got[0]; s.Side != "turnstile" || s.Step != small || s.Turns != 3 || s.P99[opPodCreate] != (spread{Median: 60, Min: 50, Max: 90}) || s.CPUPerRequestMs.Median != 3 {
		t.Errorf("turnstile, small step: %+v", s)
	}
	if s := got[2]; s.Side != baseline || s.Step != large || s.Turns != 2 || s.P99[opPodCreate] != (spread{Median: 150, Min: 100, Max: 200}) {
		t.Errorf("%s, large step (an even count's median is the mean of the middle two): %+v", baseline, s)
	}
	var table strings.Builder
	printSummaryTable(&table, got)
	for _, want := range []string{
		"| turnstile | 10 | 3 | 1000 | 10 (10–10) ×1.00 | 3.00 (3.00–4.00) ×1.50 | 100 (100–100) ×1.00 | 3.0 (3.0–4.0) ×1.50 | 60 (60–80) ×1.50 | 6.00 (6.00–8.00) ×1.50 | 15 (15–20) ×1.50 | 30 (30–40) ×1.50 | 60 (50–90) ×1.33 |",
		"| upstream-same | 10 | 3 | 1000 | 10 (10–10) | 2.00 (2.00–2.00) | 100 (100–100) | 2.0 (2.0–2.0) | 40 (40–40) | 4.00 (4.00–4.00) | 10 (10–10) | 20 (20–20) | 45 (40–50) |",
		"| upstream-same | 20 | 2 | 1000 | 10 (10–10) | 3.00 (2.00–4.00) | 100 (100–100) | 3.0 (2.0–4.0) | - | - | - | - | 150 (100–200) |",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("summary table lacks %q:\n%s", want, table.String())
		}
	}
}

// TestEtcdDisk reads etcd's disk histograms as etcd exposes them and takes
// the means of what happened between two reads.
func TestEtcdDisk(t *testing.T) {
	exposition := func(fsyncs, fsyncSeconds, commits, commitSeconds float64) []byte {
		return []byte(fmt.Sprintf(`# HELP etcd_disk_wal_fsync_duration_seconds The latency distributions of fsync called by WAL.
# TYPE etcd_disk_wal_fsync_duration_seconds histogram
etcd_disk_wal_fsync_duration_seconds_bucket{le="0.001"} 0
etcd_disk_wal_fsync_duration_seconds_bucket{le="+Inf"} %[1]g
etcd_disk_wal_fsync_duration_seconds_sum %[2]g
etcd_disk_wal_fsync_duration_seconds_count %[1]g
etcd_disk_backend_commit_duration_seconds_bucket{le="+Inf"} %[3]g
etcd_disk_backend_commit_duration_seconds_sum %[4]g
etcd_disk_backend_commit_duration_seconds_count %[3]g
etcd_disk_defrag_inflight 0
`, fsyncs, fsyncSeconds, commits, commitSeconds))
	}
	read := func(body []byte) etcdDisk {
		t.Helper()
		d, err := parseEtcdDisk(body)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	before := read(exposition(100, 0.5, 50, 0.4))
	if before != (etcdDisk{Fsyncs: 100, FsyncSeconds: 0.5, Commits: 50, CommitSeconds: 0.4}) {
		t.Errorf("parsed %+v", before)
	}
	fsync, commit := read(exposition(300, 1.5, 60, 0.45)).meansSince(before)
	if math.Abs(fsync-5) > 1e-9 || math.Abs(commit-5) > 1e-9 {
		t.Errorf("means: fsync %v ms, commit %v ms; want 5 and 5 (1 s over 200 fsyncs, 50 ms over 10 commits)", fsync, commit)
	}
	if fsync, commit := before.meansSince(before); fsync != 0 || commit != 0 {
		t.Errorf("nothing between the reads: %v, %v; want 0, 0", fsync, commit)
	}
	if _, err := parseEtcdDisk([]byte("process_cpu_seconds_total 1\n")); err == nil {
		t.Error("an exposition without etcd's fsync histogram: no error")
	}
}

func TestSettled(t *testing.T) {
	for _, tc := range []struct {
		previous, current float64
		want              bool
	}{
		{-1, 0.5, false}, // the first window has nothing to compare with
		{1.0, 0.5, false},
		{1.0, 0.89, false},
		{1.0, 0.9, true},
		{1.0, 1.4, true},
		{0, 0, true},
	} {
		if got := settled(tc.previous, tc.current); got != tc.want {
			t.Errorf("settled(%v, %v) = %v, want %v", tc.previous, tc.current, got, tc.want)
		}
	}
}

func TestPodStates(t *testing.T) {
	ready := func(status corev1.ConditionStatus) []corev1.PodCondition {
		return []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: status}}
	}
	var s podStates
	for _, p := range []corev1.Pod{
		{Status: corev1.PodStatus{Phase: corev1.PodPending}},
		{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
		{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: ready(corev1.ConditionTrue)}},
		{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready(corev1.ConditionFalse)}},
		{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready(corev1.ConditionTrue)}},
		{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready(corev1.ConditionTrue)}},
	} {
		s.add(&p)
	}
	if want := (podStates{Unscheduled: 1, Pending: 2, Unready: 2, Ready: 2}); s != want {
		t.Errorf("podStates = %+v, want %+v", s, want)
	}
	if got, want := s.String(), "workload pods: 1 not scheduled, 2 scheduled but pending, 2 started but not ready, 2 ready"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestKeepLogTails(t *testing.T) {
	dir, dest := t.TempDir(), filepath.Join(t.TempDir(), "logs")
	if err := os.MkdirAll(filepath.Join(dir, "etcd"), 0o755); err != nil {
		t.Fatal(err)
	}
	for path, content := range map[string]string{
		"kwok.log":         "0123456789",
		"etcd/etcd.log":    "abc",
		"kwok.kubeconfig":  "secret",
		"admission-config": "x",
	} {
		if err := os.WriteFile(filepath.Join(dir, path), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := keepLogTails(dir, dest, 4); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dest)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dest, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got[e.Name()] = string(data)
	}
	if want := map[string]string{"kwok.log": "6789", "etcd_etcd.log": "abc"}; !reflect.DeepEqual(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
}

func TestMergeScaleRuns(t *testing.T) {
	small, large := scaleStep{1, 10, 1, 1}, scaleStep{2, 20, 2, 2}
	first, second := runWith(t, "m", 1000, []scaleStep{large}, "turnstile"), runWith(t, "m", 1000, []scaleStep{small}, "turnstile", baseline)
	out := filepath.Join(t.TempDir(), "merged")
	if err := WriteMerged([]string{first, second}, out); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, "latest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var merged scaleReport
	if err := json.Unmarshal(data, &merged); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(merged.Steps, []scaleStep{small, large}) || len(merged.Sides) != 2 || merged.Sides[1].Name != baseline {
		t.Errorf("steps %v (want by size), sides %v", merged.Steps, merged.Sides)
	}
	var turns []int
	for _, f := range merged.Figures {
		if f.Side == "turnstile" {
			turns = append(turns, f.Repeat)
		}
	}
	if !reflect.DeepEqual(turns, []int{1, 2, 3, 4}) {
		t.Errorf("turnstile's turns %v, want the second run's numbered on: [1 2 3 4]", turns)
	}
	if len(merged.Summary) != 3 || merged.Summary[0].Turns != 2 {
		t.Errorf("summary: %+v", merged.Summary)
	}
	if err := WriteMerged([]string{first, runWith(t, "m", 5000, []scaleStep{small}, "turnstile")}, out); err != nil {
		t.Errorf("runs of different probe sizes at different steps: %v, want them merged (each step compares its sides on its own)", err)
	}
	samePods := runWith(t, "m", 1000, []scaleStep{small}, "turnstile")
	var rep scaleReport
	if data, err := os.ReadFile(filepath.Join(samePods, "latest.json")); err != nil || json.Unmarshal(data, &rep) != nil {
		t.Fatalf("read back %s: %v", samePods, err)
	}
	rep.SamePods = true
	if err := writeScaleReport(samePods, rep, nil); err != nil {
		t.Fatal(err)
	}
	if table, err := os.ReadFile(filepath.Join(samePods, "table.md")); err != nil || !strings.Contains(string(table), "as Turnstile's PodSecurityPolicy stores them (-same-pods") {
		t.Errorf("a -same-pods run's table does not say so (%v):\n%s", err, table)
	}
	for _, bad := range []struct {
		dirs []string
		out  string
		want string
	}{
		{[]string{first, runWith(t, "other", 1000, []scaleStep{small}, "turnstile")}, out, "different machines"},
		{[]string{first, samePods}, out, "-same-pods true, " + filepath.Join(first, "latest.json") + ": -same-pods false: runs whose sides held different pods do not compare"},
		{[]string{first, runWith(t, "m", 5000, []scaleStep{large}, "turnstile")}, out, "probed 2 nodes, 20 pods, 2 policies, 2 volume rules with 5000 write rounds"},
		{[]string{first, t.TempDir()}, out, "no such file"},
		{[]string{first, second}, second, "would be overwritten"},
		{nil, out, "no directories"},
	} {
		if err := WriteMerged(bad.dirs, bad.out); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("merge %v into %s: %v, want an error with %q", bad.dirs, bad.out, err, bad.want)
		}
	}
}

// runWith writes the report of a run on machine whose probes took rounds
// write rounds, two turns of each side through steps, and returns its
// directory.
func runWith(t *testing.T, machine string, rounds int, steps []scaleStep, sides ...string) string {
	t.Helper()
	dir := t.TempDir()
	rep := scaleReport{Machine: machine, Steps: steps}
	for _, side := range sides {
		rep.Sides = append(rep.Sides, scaleSide{Name: side})
		for repeat := 1; repeat <= 2; repeat++ {
			for _, step := range steps {
				rep.Figures = append(rep.Figures, scaleFigure{Side: side, Step: step, Repeat: repeat, Reached: true, RSSMiB: 100,
					Latency: map[string]latency{opPodCreate: {Count: rounds, P99: float64(step.Pods)}}})
			}
		}
	}
	if err := writeScaleReport(dir, rep, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestVerdicts checks the verdict on each side's ratio to the baseline:
// within or over only when the bootstrap's interval is clear of ×1.10,
// and none from too few turns.
func TestVerdicts(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b []float64
		want string
	}{
		{"equal and steady", []float64{100, 101, 99, 100, 102}, []float64{100, 99, 101, 100, 98}, verdictWithin},
		{"cheaper", []float64{60, 62, 61}, []float64{100, 98, 103}, verdictWithin},
		{"a third over", []float64{133, 135, 131, 134}, []float64{100, 101, 99, 100}, verdictOver},
		{"equal medians, turns twice apart", []float64{56, 100, 64, 102, 70}, []float64{52, 104, 66, 98, 72}, verdictUndecided},
		{"two turns", []float64{100, 100}, []float64{100, 100}, verdictTooFew},
	} {
		got := compareMedians(c.a, c.b)
		if got.Verdict != c.want || got.Low > got.Ratio || got.Ratio > got.High {
			t.Errorf("%s: %+v, want %s with the ratio inside its interval", c.name, got, c.want)
		}
	}
	if again, first := compareMedians([]float64{56, 100, 64}, []float64{52, 104, 66}), compareMedians([]float64{56, 100, 64}, []float64{52, 104, 66}); again != first {
		t.Errorf("the same turns gave %+v, then %+v: the seed is fixed so a report says the same each time", first, again)
	}

	step, other := scaleStep{1, 10, 1, 1}, scaleStep{2, 20, 2, 2}
	figure := func(side string, step scaleStep, rss, p99 float64) scaleFigure {
		return scaleFigure{Side: side, Step: step, Reached: true, RSSMiB: rss, Latency: map[string]latency{opPodCreate: {P99: p99}}}
	}
	rep := scaleReport{
		Sides: []scaleSide{{Name: "turnstile"}, {Name: baseline}},
		Steps: []scaleStep{step, other},
		Figures: []scaleFigure{
			figure("turnstile", step, 105, 200), figure("turnstile", step, 104, 210), figure("turnstile", step, 106, 190),
			figure(baseline, step, 100, 100), figure(baseline, step, 101, 105), figure(baseline, step, 99, 95),
			figure(baseline, other, 100, 100), // turnstile never reached it: no verdict there
		},
	}
	got := verdicts(rep)
	if len(got) != 1 || got[0].Side != "turnstile" || got[0].Step != step || got[0].Turns != 3 || got[0].BaseTurns != 3 {
		t.Fatalf("verdicts: %+v, want one, turnstile's at the step both reached", got)
	}
	if rss, create := got[0].Measures[measureRSS], got[0].Measures[opPodCreate]; rss.Verdict != verdictWithin || create.Verdict != verdictOver {
		t.Errorf("RSS %+v (want within), pod create %+v (want over)", rss, create)
	}
	if _, ok := got[0].Measures[opBinding]; ok {
		t.Errorf("a verdict on binding, which no turn measured: %+v", got[0].Measures)
	}
	var table strings.Builder
	printVerdictTable(&table, got)
	if want := "| turnstile | 10 | 3 / 3 | ×1.05 (1.03–1.07) within | - | ×2.00 (1.81–2.21) over | - |"; !strings.Contains(table.String(), want) {
		t.Errorf("verdict table lacks %q:\n%s", want, table.String())
	}
}
