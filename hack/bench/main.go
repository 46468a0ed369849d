// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command bench runs Turnstile's kube-apiserver and vanilla upstream
// kube-apiserver (built from the same module graph) alternately under the same
// load and reports the ratio of every figure, so that a user can see what
// the distribution costs. `make bench` builds the binaries and runs this.
//
// For each configuration and scenario it starts, for each binary, a fresh
// etcd and an apiserver with identical flags, warms both up, then runs
// -pairs pairs in ABBA order (Turnstile first in even pairs, upstream first
// in odd ones). Each run gets a fresh namespace. The load generator runs in
// this process. The noise-floor configuration runs upstream on both sides.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"k8s.io/klog/v2"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// configuration is what the two sides run: flags for each, and for the
// noise floor, upstream's binary on the Turnstile side too.
type configuration struct {
	Name, Description   string
	Turnstile, Upstream []string
	TurnstileBinary     string // empty: our kube-apiserver
	// TurnstileSetup, when set, creates what the Turnstile side's plugins
	// need (objects of APIs that upstream does not serve) once, before the
	// warm-up.
	TurnstileSetup func(context.Context, *server) error
}

// allDocumented is every documented controller that can run together. Left
// out: AlwaysDeny (denies everything), NamespaceAutoProvision (conflicts
// with NamespaceExists) and ImagePolicyWebhook (needs an image-policy
// backend). Upstream's default set is on in both. PodSecurityPolicy runs
// with the policy set of podsecuritypolicy.go.
var allDocumented = []string{
	"AlwaysAdmit", "AlwaysPullImages", "DenyServiceExternalIPs", "EventRateLimit", "ExtendedResourceToleration",
	"LimitPodHardAntiAffinityTopology", "NamespaceExists", "NodeRestriction", "OwnerReferencesPermissionEnforcement",
	"PodNodeSelector", "PodTolerationRestriction",
	"SecurityContextDeny", "DenyEscalatingExec", "DenyExecOnPrivileged", "PersistentVolumeLabel", "PodSecurityPolicy",
}

func configurations(admissionConfig string) []configuration {
	return []configuration{
		{
			Name:            "noise-floor",
			Description:     "upstream against itself: the run-to-run noise any ratio must beat",
			TurnstileBinary: "kube-apiserver-upstream",
		},
		{
			Name:        "same-plugins",
			Description: "both binaries with upstream's default admission plugins: the cost of being a distribution",
		},
		{
			Name:        "all-documented",
			Description: "Turnstile with every documented controller that can run together, upstream with its defaults",
			Turnstile: []string{
				"--enable-admission-plugins=" + strings.Join(allDocumented, ","),
				"--admission-control-config-file=" + admissionConfig,
			},
			TurnstileSetup: setupPodSecurityPolicies,
		},
		{
			Name:        "upstream-same",
			Description: "all-documented against upstream with the same upstream plugins, configured the same: the cost of what we wrote",
			Turnstile: []string{
				"--enable-admission-plugins=" + strings.Join(allDocumented, ","),
				"--admission-control-config-file=" + admissionConfig,
			},
			TurnstileSetup: setupPodSecurityPolicies,
			// Upstream's loader reads only the entries of the plugins it runs,
			// so the same file configures it.
			Upstream: []string{
				"--enable-admission-plugins=" + strings.Join(upstreamOnly(allDocumented), ","),
				"--admission-control-config-file=" + admissionConfig,
			},
		},
	}
}

// upstreamOnly is names without the plugins upstream does not have.
func upstreamOnly(names []string) []string {
	var out []string
	for _, name := range names {
		if slices.Contains(kubeoptions.AllOrderedPlugins, name) {
			out = append(out, name)
		}
	}
	return out
}

type options struct {
	pairs       int
	duration    time.Duration
	warmup      time.Duration
	concurrency int
	out         string
	admission   string
	only        string
	micro       string
	profile     time.Duration
	profileOf   string
	attribute   string
}

func main() {
	var o options
	flag.IntVar(&o.pairs, "pairs", 3, "Turnstile/upstream run pairs per scenario")
	flag.DurationVar(&o.duration, "duration", 8*time.Second, "length of one measured run: every run takes the steps the slower side took in this long at its warm-up's pace, so that both sides do the same work (ended at 4× this at the latest)")
	flag.DurationVar(&o.warmup, "warmup", 3*time.Second, "unmeasured load on each server before the pairs")
	flag.IntVar(&o.concurrency, "concurrency", 8, "concurrent clients")
	flag.DurationVar(&o.profile, "profile-duration", 30*time.Second, "length of the profiled run (100 samples a second); with -scale, of the CPU profile at the start of each step's rollout")
	flag.StringVar(&o.profileOf, "profile", "all-documented/pods", "configuration/scenario whose Turnstile side gets one more run under a CPU profile, attributed to admission plugins")
	flag.StringVar(&o.attribute, "attribute", "same-plugins/pods,upstream-same/pods", "configuration/scenario,...: after the pairs, profile each side for -profile-duration more and list, function by function, what Turnstile spends per request that upstream does not (CPU, bytes and objects allocated); none: \"\"")
	flag.StringVar(&o.out, "out", "_output/bench", "directory for the JSON report")
	flag.StringVar(&o.admission, "admission-config", "hack/bench/admission-config.yaml", "AdmissionConfiguration for all-documented")
	flag.StringVar(&o.only, "only", "", "run only configurations or scenarios whose name contains this")
	flag.StringVar(&o.micro, "micro", "", "output of `go test -bench` to include in the report")
	flag.IntVar(&pspScale.teams, "psp-teams", 0, "replace the 40 named teams of PodSecurityPolicy's policy set by this many generic ones (app-NNN, each tried before privileged), as make bench-psp's clusters (0: the named teams)")
	flag.IntVar(&pspScale.bindings, "psp-bindings", 0, "RoleBindings and ClusterRoleBindings to create besides the policies' grants, on the Turnstile side of the configurations with PodSecurityPolicy")
	var so scaleOptions
	scale := flag.String("scale", "", "run the scale benchmark instead, through these steps: NODES/PODS/POLICIES/RULES,... (make bench-scale)")
	policyHeap := flag.String("policy-heap", "", "instead of the load, measure what serving policy/v1beta1 adds to the live heap: NODES/PODS/POLICIES on two of our apiservers, one serving the API with the policies, one not (bench-scale's largest step: 5000/30000/1000)")
	merge := flag.String("scale-merge", "", "instead of running, combine earlier scale runs (DIR,DIR,...: their latest.json) into one table, summary and plot.json in -out")
	flag.StringVar(&so.sides, "sides", "turnstile,upstream-same,upstream", "scale: the sides to grow, one after another (turnstile, upstream-same, upstream)")
	flag.IntVar(&so.repeats, "repeats", 1, "scale: turns in which every side grows through the steps, in alternating order; the summary compares medians")
	flag.IntVar(&so.probes, "probes", 1000, "scale: pod and volume rounds of the probe at each step (a p99 of 1,000 is the tenth slowest)")
	flag.IntVar(&so.listProbes, "list-probes", 100, "scale: the fewest rounds of the probe's three LISTs at each step")
	flag.DurationVar(&so.listFor, "list-duration", 30*time.Second, "scale: the shortest time the probe's LIST rounds take at each step (more rounds on a small cluster)")
	flag.BoolVar(&so.samePods, "same-pods", false, "scale: send every side its pods as Turnstile's PodSecurityPolicy stores them (the kubernetes.io/psp annotation and the policy's defaults), so that the sides differ in binaries only, not in the objects they hold")
	flag.IntVar(&so.replicas, "replicas", 100, "scale: pods per Deployment")
	flag.IntVar(&so.clientQPS, "client-qps", 200, "scale: kube-controller-manager's and kube-scheduler's --kube-api-qps (burst twice that)")
	flag.IntVar(&so.leaseSeconds, "lease-seconds", 40, "scale: the fake nodes' lease duration (kubelet's default 40 s: renewed every 10 s)")
	flag.StringVar(&so.podCIDR, "pod-cidr", "127.128.0.0/10", "scale: the range kwok gives pod IPs from (loopback: written in pod status only, never sent to)")
	flag.DurationVar(&so.stepTimeout, "step-timeout", 30*time.Minute, "scale: the longest one step may take")
	flag.Float64Var(&so.minMemoryMiB, "min-memory", 3072, "scale: MiB of available memory below which no further step is attempted")
	flag.Parse()
	quietKlog()
	if *policyHeap != "" {
		size, err := parsePolicyHeapSize(*policyHeap)
		if err == nil {
			err = runPolicyHeap(o, size)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if *merge != "" {
		err := fmt.Errorf("-scale and -scale-merge: one or the other")
		if *scale == "" {
			err = writeMergedScale(splitList(*merge), o.out)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench-scale: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if *scale != "" {
		steps, err := parseSteps(*scale)
		if err == nil && so.repeats < 1 {
			err = fmt.Errorf("-repeats %d: want at least 1", so.repeats)
		}
		if err == nil && (so.probes < 1 || so.listProbes < 1 || so.listFor < 0) {
			err = fmt.Errorf("-probes %d, -list-probes %d, -list-duration %s: want at least 1 round of each and no negative time", so.probes, so.listProbes, so.listFor)
		}
		if err == nil {
			so.steps, so.out, so.admission, so.concurrency, so.profile = steps, o.out, o.admission, o.concurrency, o.profile
			// Ctrl-C or SIGTERM ends the step under way, stops the
			// clusters and writes the table of what ran.
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			err = runScale(ctx, so)
			stop()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench-scale: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// quietKlog discards klog's output: client-go logs the requests a run's
// deadline cuts short, and etcd's client its dials before etcd listens;
// both are expected and neither is counted.
func quietKlog() {
	quiet := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(quiet)
	_ = quiet.Set("logtostderr", "false")
	_ = quiet.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}

// report is what the JSON file holds.
type report struct {
	Started     time.Time `json:"started"`
	Machine     string    `json:"machine"`
	Pairs       int       `json:"pairs"`
	Duration    string    `json:"duration"`
	Concurrency int       `json:"concurrency"`
	Results     []result  `json:"results"`
	// Micro is the `go test -bench` output for our plugins and registry.
	Micro string `json:"micro,omitempty"`
}

type result struct {
	Configuration string   `json:"configuration"`
	Scenario      string   `json:"scenario"`
	Turnstile     []figure `json:"turnstile"`
	Upstream      []figure `json:"upstream"`
	// Profile attributes the Turnstile side's CPU to admission plugins,
	// from one more run under a CPU profile (all-documented pods only).
	Profile *profileReport `json:"profile,omitempty"`
	// Attribution is what Turnstile spends that upstream does not, by
	// function (-attribute).
	Attribution *attributionReport `json:"attribution,omitempty"`
	// cpuProfiles are the attribution's CPU profiles, of the timed
	// servers (Turnstile's, upstream's).
	cpuProfiles [2]profiles
}

// attributed says whether -attribute names the configuration and scenario.
func attributed(o options, c configuration, s scenario) bool {
	return slices.Contains(splitList(o.attribute), c.Name+"/"+s.name)
}

// profiled says whether a result gets a CPU profile: the one -profile
// names (by default the pod creates with every documented controller on,
// where the plugins do the most).
func profiled(o options, c configuration, s scenario) bool {
	return o.profileOf == c.Name+"/"+s.name
}

func run(o options) error {
	admissionConfig, err := filepath.Abs(o.admission)
	if err != nil {
		return err
	}
	root, pki, err := workspace("turnstile-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	rep := report{Started: time.Now().UTC(), Machine: machine(), Pairs: o.pairs, Duration: o.duration.String(), Concurrency: o.concurrency}
	for _, c := range configurations(admissionConfig) {
		for _, s := range scenarios {
			if o.only != "" && !strings.Contains(c.Name+"/"+s.name, o.only) {
				continue
			}
			fmt.Fprintf(os.Stderr, "bench: %s / %s\n", c.Name, s.name)
			r, err := measure(o, root, pki, c, s)
			if err == nil && attributed(o, c, s) {
				r.Attribution, err = attributeAgainstUpstream(o, root, pki, c, s, r.cpuProfiles)
			}
			if err != nil {
				return fmt.Errorf("%s / %s: %w", c.Name, s.name, err)
			}
			rep.Results = append(rep.Results, r)
		}
	}
	if o.micro != "" {
		data, err := os.ReadFile(o.micro)
		if err != nil {
			return err
		}
		rep.Micro = string(data)
	}
	printTable(os.Stdout, rep)
	for _, r := range rep.Results {
		if r.Profile != nil {
			printProfile(os.Stdout, *r.Profile)
		}
	}
	for _, r := range rep.Results {
		if r.Attribution != nil {
			printAttribution(os.Stdout, *r.Attribution)
		}
	}
	if rep.Micro != "" {
		fmt.Printf("\nMicrobenchmarks (go test -bench):\n%s", rep.Micro)
	}
	return writeJSON(o.out, rep)
}

// workspace makes a temporary directory for a run's servers, with the
// PKI they share; the caller removes it.
func workspace(prefix string) (string, *framework.PKI, error) {
	root, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	pki, err := framework.NewPKI(filepath.Join(root, "pki"))
	if err != nil {
		os.RemoveAll(root)
		return "", nil, err
	}
	return root, pki, nil
}

// measure runs one scenario of one configuration: both servers fresh, then
// alternating runs.
func measure(o options, root string, pki *framework.PKI, c configuration, s scenario) (result, error) {
	ctx := context.Background()
	t, u, err := startSides(ctx, filepath.Join(root, c.Name+"-"+s.name), pki, c, "")
	if err != nil {
		return result{}, err
	}
	defer t.stop()
	defer u.stop()

	steps, err := warmUp(ctx, o, s, t, u)
	if err != nil {
		return result{}, err
	}
	r := result{Configuration: c.Name, Scenario: s.name}
	type side struct {
		srv *server
		out *[]figure
	}
	for i := 0; i < o.pairs; i++ {
		// ABBA: which side goes first alternates, so an effect of position
		// within a pair (the other server's leftover work, caches) cancels.
		order := []side{{t, &r.Turnstile}, {u, &r.Upstream}}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, side := range order {
			f, err := side.srv.load(ctx, s, o.concurrency, o.duration, steps, fmt.Sprintf("run-%d", i))
			if err != nil {
				return result{}, err
			}
			*side.out = append(*side.out, f)
		}
	}
	if profiled(o, c, s) {
		t.profileFile = filepath.Join(o.out, c.Name+"-"+s.name+".pprof")
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return result{}, err
		}
		p, err := t.profiledLoad(ctx, s, o.concurrency, o.profile)
		if err != nil {
			return result{}, err
		}
		p.Of = c.Name + "/" + s.name
		r.Profile = &p
	}
	if attributed(o, c, s) {
		if r.cpuProfiles, err = cpuProfiles(ctx, o, s, t, u); err != nil {
			return result{}, err
		}
	}
	return r, nil
}

// startSides starts a configuration's two servers, fresh, in dir, with
// godebug as each apiserver's GODEBUG (none if empty), and creates what
// the Turnstile side's plugins need.
func startSides(ctx context.Context, dir string, pki *framework.PKI, c configuration, godebug string) (t, u *server, err error) {
	t, err = startServer(filepath.Join(dir, "turnstile"), pki, c.TurnstileBinary, c.Turnstile, godebug)
	if err != nil {
		return nil, nil, err
	}
	if c.TurnstileSetup != nil {
		if err := c.TurnstileSetup(ctx, t); err != nil {
			t.stop()
			return nil, nil, fmt.Errorf("setup: %w", err)
		}
	}
	u, err = startServer(filepath.Join(dir, "upstream"), pki, "kube-apiserver-upstream", c.Upstream, godebug)
	if err != nil {
		t.stop()
		return nil, nil, err
	}
	return t, u, nil
}

// warmUp runs the scenario on each server for -warmup, unmeasured, and
// returns the number of steps every measured run takes: what the slower
// side did in -duration at its warm-up's pace.
func warmUp(ctx context.Context, o options, s scenario, servers ...*server) (int64, error) {
	rate := -1.0
	for _, srv := range servers {
		f, err := srv.load(ctx, s, o.concurrency, o.warmup, 0, "warmup")
		if err != nil {
			return 0, err
		}
		if r := float64(f.Steps) / o.warmup.Seconds(); rate < 0 || r < rate {
			rate = r
		}
	}
	return max(int64(rate*o.duration.Seconds()), int64(o.concurrency)), nil
}

func writeJSON(dir string, rep report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	name := filepath.Join(dir, "bench-"+rep.Started.Format("20060102T150405Z")+".json")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		return err
	}
	fmt.Printf("\nJSON: %s\n", name)
	return os.WriteFile(filepath.Join(dir, "latest.json"), data, 0o644)
}

// metric reads one figure from a run; lowerIsBetter only labels the table.
type metric struct {
	name  string
	unit  string
	value func(figure) float64
}

var metrics = []metric{
	{"throughput", "req/s", func(f figure) float64 { return f.Throughput }},
	{"p50", "ms", func(f figure) float64 { return f.P50 }},
	{"p90", "ms", func(f figure) float64 { return f.P90 }},
	{"p99", "ms", func(f figure) float64 { return f.P99 }},
	{"cpu", "s/1k req", func(f figure) float64 { return f.CPUPer1k }},
	{"peak rss", "MiB", func(f figure) float64 { return f.PeakRSSMiB }},
	{"allocated", "KiB/req", func(f figure) float64 { return f.PerRequest.AllocBytes / 1024 }},
	{"allocated", "objects/req", func(f figure) float64 { return f.PerRequest.AllocObjects }},
	{"etcd", "requests/req", func(f figure) float64 { return f.PerRequest.EtcdRequests }},
	{"live heap", "MiB", func(f figure) float64 { return f.LiveHeapMiB }},
	{"goroutines", "", func(f figure) float64 { return f.PerRequest.Goroutines }},
	{"errors", "", func(f figure) float64 { return float64(f.Errors) }},
}

func printTable(w *os.File, rep report) {
	fmt.Fprintf(w, "\nTurnstile vs upstream %s: %d pairs of %s runs, %d clients, on %s\n", kubernetesVersion(), rep.Pairs, rep.Duration, rep.Concurrency, rep.Machine)
	fmt.Fprintf(w, "Medians over the runs; ratio = Turnstile/upstream, median of the per-pair ratios (min..max across pairs).\n")
	fmt.Fprintf(w, "noise-floor runs upstream on both sides: its ratios show how far 1.0 moves by chance.\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "configuration\tscenario\tmetric\tTurnstile\tupstream\tratio\tmin..max\t")
	for _, r := range rep.Results {
		for _, m := range metrics {
			ts, us := values(r.Turnstile, m), values(r.Upstream, m)
			var ratios []float64
			for i := range ts {
				if us[i] != 0 {
					ratios = append(ratios, ts[i]/us[i])
				}
			}
			ratio, span := "-", "-"
			if len(ratios) > 0 {
				ratio = fmt.Sprintf("%.3f", median(ratios))
				lo, hi := minMax(ratios)
				span = fmt.Sprintf("%.3f..%.3f", lo, hi)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s %s\t%.2f\t%.2f\t%s\t%s\t\n", r.Configuration, r.Scenario, m.name, m.unit, median(ts), median(us), ratio, span)
		}
	}
	tw.Flush()
}

func values(fs []figure, m metric) []float64 {
	out := make([]float64, len(fs))
	for i, f := range fs {
		out[i] = m.value(f)
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minMax(xs []float64) (float64, float64) {
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

func machine() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%d CPUs, %s", numCPU(), model)
}

// kubernetesVersion is the k8s.io/kubernetes release this command, and so
// both apiservers it compares, were built from.
func kubernetesVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/kubernetes" {
				return dep.Version
			}
		}
	}
	return "(unknown version)"
}
