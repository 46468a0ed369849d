// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command conformance runs upstream's [Conformance] specs against a local
// control plane with real nodes: hack/local-up -nodes 2 with the e2e
// framework's images, under one of the profiles of profiles.go. e2e.test
// and ginkgo are upstream's, built from test/conformance's module at the
// pinned versions.
//
// It runs the specs in two passes, as upstream's conformance image does:
// those that may run in parallel with -procs ginkgo processes, then the
// [Serial] ones alone. Each pass writes ginkgo's JUnit and JSON reports in
// -out/<profile>; then it writes summary.md there (passed, failed and
// skipped, with names) and passed.txt, which the next run of another profile
// compares against. `make conformance` builds everything and calls it.
//
// With -runner hydrophone (hydrophone.go) it runs the suite as
// certification does instead: sigs.k8s.io/hydrophone starts upstream's
// conformance image in the cluster, and the run's reports are the e2e.log
// and junit_01.xml hydrophone downloads, in -out/<profile>-hydrophone,
// compared spec for spec with our runner's last run on the profile.
//
// Every run that finishes writes the submission folder for
// cncf/k8s-conformance (submission.go).
//
// `conformance check DIR` applies the checks of cncf/k8s-conformance's bot
// to a submission folder (check.go); `make conformance-check DIR=...`
// passes it the release's conformance.yaml and the current release.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/turnstile-k8s/turnstile/internal/ports"
)

type options struct {
	profile, bin, images, e2eImages, out string
	containerd                           string
	// runner is ours or hydrophone; conformanceImage is upstream's
	// conformance image's archive, which hydrophone starts.
	runner, conformanceImage string
	focus, skip, specs       string
	procs, nodes             int
	passes                   string
	timeout                  time.Duration
	// product and reproduce go into the submission folder.
	product, reproduce string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "check" {
		if err := runCheck(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "conformance: %v\n", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.StringVar(&o.profile, "profile", "all-compatible", "the control plane to test (hack/conformance/profiles.go; docs/conformance.md)")
	flag.StringVar(&o.bin, "bin", "_output/bin", "directory with e2e.test, ginkgo, local-up and the binaries local-up runs")
	flag.StringVar(&o.images, "images", "_output/images/node", "the nodes' image tarballs (make node-images control-plane-images)")
	flag.StringVar(&o.e2eImages, "e2e-images", "_output/images/e2e/e2e.tar", "the e2e framework's other images (make e2e-images); empty for none, when the specs run need only the node images")
	flag.StringVar(&o.containerd, "containerd", "_output/bin/containerd-2", "containerd 2's binaries for the nodes (make containerd); empty for Debian's containerd 1.6, which has no image volumes")
	flag.StringVar(&o.runner, "runner", runnerOurs, "who runs the suite: ours (ginkgo and e2e.test on this machine) or hydrophone (upstream's conformance image in the cluster, started by hydrophone in -bin, as certification runs it)")
	flag.StringVar(&o.conformanceImage, "conformance-image", "_output/images/e2e/conformance.tar", "with -runner hydrophone, the archive of upstream's conformance image (make conformance-image) for the nodes to import")
	flag.StringVar(&o.out, "out", "_output/conformance", "where each profile's reports go, in a directory of its name")
	flag.StringVar(&o.focus, "focus", "", "run only the [Conformance] specs whose names match this regular expression")
	flag.StringVar(&o.skip, "skip", "", "leave out the specs whose names match this regular expression")
	flag.StringVar(&o.specs, "specs", "", "run only the specs this file names, one full name a line (# starts a comment); each must run")
	flag.IntVar(&o.procs, "procs", 8, "ginkgo processes for the parallel pass (they mostly wait for pods)")
	flag.IntVar(&o.nodes, "nodes", 2, "real worker nodes (two: one spec needs two untainted nodes)")
	flag.StringVar(&o.passes, "passes", defaultPasses, "which passes to run, in this order: parallel (the specs that may share the cluster), serial (the [Serial] ones, alone)")
	flag.DurationVar(&o.timeout, "timeout", 3*time.Hour, "ginkgo's timeout for each pass")
	flag.StringVar(&o.product, "product", productFile, "the submission's PRODUCT.yaml (${VERSION} becomes the tested kube-apiserver's version)")
	flag.StringVar(&o.reproduce, "reproduce", "", "the command that reproduces this run, for the submission's README.md (make conformance passes it); default: this command line")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "conformance: %v\n", err)
		os.Exit(1)
	}
}

func run(o options) error {
	p, err := lookup(o.profile)
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("needs root: the nodes create network namespaces, a bridge, cgroups and mounts")
	}
	passes, err := passesOf(o)
	if err != nil {
		return err
	}
	if err := checkRunner(o); err != nil {
		return err
	}
	if o.runner == runnerOurs {
		o.conformanceImage = ""
	}
	userFocus := o.focus
	if _, err := unmatchedAlternatives(o.focus, nil); err != nil {
		return err // before anything starts
	}
	var named []string
	if o.specs != "" {
		if named, err = readSpecs(o.specs); err != nil {
			return err
		}
		if o.focus != "" {
			return errors.New("-focus and -specs exclude each other")
		}
		o.focus = focusOn(named)
	}
	for _, path := range []*string{&o.bin, &o.images, &o.e2eImages, &o.containerd, &o.conformanceImage, &o.out} {
		if *path == "" {
			continue
		}
		if *path, err = filepath.Abs(*path); err != nil {
			return err
		}
	}
	tools := []string{"e2e.test", "ginkgo", "local-up", "kubectl", "kube-apiserver", "kube-apiserver-upstream"}
	if o.runner == runnerHydrophone {
		tools = append(tools, "hydrophone")
		if _, err := os.Stat(o.conformanceImage); err != nil {
			return fmt.Errorf("upstream's conformance image is not built (make conformance RUNNER=hydrophone builds it: make conformance-image): %w", err)
		}
	}
	for _, name := range tools {
		if _, err := os.Stat(filepath.Join(o.bin, name)); err != nil {
			return fmt.Errorf("%s is not built (make conformance builds it): %w", name, err)
		}
	}
	release, err := sameRelease(o.bin)
	if err != nil {
		return err
	}
	if o.reproduce == "" {
		o.reproduce = strings.Join(os.Args, " ")
	}
	dir := reportDir(o.out, o.runner, p)
	// A fresh cluster and fresh reports for every run: results must not
	// depend on what an earlier run left behind.
	if err := cleanCluster(o, filepath.Join(o.out, "cluster")); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	// Ctrl-C reaches local-up and ginkgo too (one process group): both stop
	// by themselves, and this waits for them instead of dying first.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Printf("conformance: profile %s: %s; runner: %s\n", p.Name, p.Description, o.runner)
	began := time.Now()
	if p.AdmissionConfig != "" && !p.ImagePolicy {
		if p.AdmissionConfig, err = snapshotAdmissionConfig(p.AdmissionConfig, filepath.Join(dir, "admission")); err != nil {
			return err
		}
	}
	if p.ImagePolicy {
		backend, config, err := startImagePolicyBackend(dir)
		if err != nil {
			return err
		}
		defer func() {
			backend.stop()
			report := backend.report()
			fmt.Print(report)
			if err := os.WriteFile(filepath.Join(dir, "imagepolicy-report.txt"), []byte(report), 0o644); err != nil {
				fmt.Fprintf(os.Stderr, "conformance: %v\n", err)
			}
		}()
		p.AdmissionConfig = config
	}
	if warning := diskWarning(o.out); warning != "" {
		fmt.Println("conformance: warning:", warning)
	}
	cluster, err := startCluster(ctx, o, p, dir)
	if err != nil {
		return err
	}
	var runErr error
	if o.runner == runnerHydrophone {
		runErr = runHydrophone(ctx, o, dir, cluster)
	} else {
		runErr = runPasses(ctx, o, dir, cluster, passes)
	}
	if err := cluster.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "conformance: %v\n", err)
	}
	var s summary
	if o.runner == runnerHydrophone {
		s, err = summarizeJUnit(dir, p, time.Since(began), userFocus)
	} else {
		s, err = summarize(dir, p, time.Since(began), userFocus)
	}
	if err != nil {
		return errors.Join(runErr, err)
	}
	fmt.Printf("\n%s\nThe summary with every spec's name: %s\n", s.head(), filepath.Join(dir, "summary.md"))
	if o.runner == runnerHydrophone {
		extra := agreement(s, reportDir(o.out, runnerOurs, p)) + pullReport(filepath.Join(o.out, "cluster", "logs", "registry.log"))
		fmt.Print(extra)
		if err := appendFile(filepath.Join(dir, "summary.md"), extra); err != nil {
			return errors.Join(runErr, err)
		}
	}
	if runErr == nil {
		folder, err := writeSubmission(o, dir, release, passes, o.reproduce)
		if err != nil {
			return fmt.Errorf("writing the submission folder: %w", err)
		}
		fmt.Printf("The submission folder for cncf/k8s-conformance: %s (make conformance-check DIR=%s checks it)\n", folder, folder)
	}
	if runErr != nil {
		return runErr
	}
	if len(s.failed) > 0 {
		return fmt.Errorf("%d of %d specs failed (%s)", len(s.failed), s.ran(), filepath.Join(dir, "summary.md"))
	}
	if len(s.unmatchedFocus) > 0 {
		return fmt.Errorf("-focus named %d that matched no [Conformance] spec (renamed upstream, not [Conformance], or mistyped):\n  %s",
			len(s.unmatchedFocus), strings.Join(s.unmatchedFocus, "\n  "))
	}
	if missing := s.missing(named); len(missing) > 0 {
		return fmt.Errorf("%s names specs that did not run (renamed upstream, or not [Conformance]):\n  %s", o.specs, strings.Join(missing, "\n  "))
	}
	return nil
}

// readSpecs reads a file of spec names, one a line, # for comments.
func readSpecs(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			names = append(names, line)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s names no spec", path)
	}
	return names, nil
}

// focusOn is a ginkgo focus that matches the named specs: ginkgo matches
// it against the suite's description, then the spec's containers' texts
// and its own, joined by spaces; the last two are the name the summary
// gives.
func focusOn(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return "(^| )(" + strings.Join(quoted, "|") + ")$"
}

// defaultPasses are both passes, in upstream's order.
const defaultPasses = "parallel,serial"

// appendFile adds text at the end of the file at path.
func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	return errors.Join(err, f.Close())
}

// pass is one ginkgo run over part of the specs.
type pass struct {
	name        string
	labelFilter string
	procs       int
}

// passesOf parses -passes.
func passesOf(o options) ([]pass, error) {
	var passes []pass
	for _, name := range strings.Split(o.passes, ",") {
		switch strings.TrimSpace(name) {
		case "parallel":
			passes = append(passes, pass{"parallel", "Conformance && !Serial", o.procs})
		case "serial":
			passes = append(passes, pass{"serial", "Conformance && Serial", 1})
		default:
			return nil, fmt.Errorf("-passes %q: %q is not a pass (parallel, serial)", o.passes, name)
		}
	}
	return passes, nil
}

func runPasses(ctx context.Context, o options, dir string, c *cluster, passes []pass) error {
	var errs []error
	for _, ps := range passes {
		if ctx.Err() != nil {
			break
		}
		fmt.Printf("conformance: %s pass (%s), %d process(es); log in %s\n", ps.name, ps.labelFilter, ps.procs, filepath.Join(dir, "ginkgo-"+ps.name+".log"))
		if err := runGinkgo(ctx, o, dir, c, ps); err != nil {
			errs = append(errs, fmt.Errorf("%s pass: %w", ps.name, err))
		}
		select {
		case <-c.done:
			return errors.Join(errs...)
		default:
		}
	}
	if ctx.Err() != nil {
		errs = append(errs, errors.New("interrupted"))
	}
	return errors.Join(errs...)
}

// runGinkgo runs one pass. Its exit status only says that a spec failed,
// which the summary tells better; a pass that wrote no report is an error.
func runGinkgo(ctx context.Context, o options, dir string, c *cluster, ps pass) error {
	args := []string{
		"--procs=" + strconv.Itoa(ps.procs), "--label-filter=" + ps.labelFilter,
		"--timeout=" + o.timeout.String(), "--no-color", "--silence-skips", "-v",
		"--output-dir=" + dir, "--json-report=report-" + ps.name + ".json", "--junit-report=junit-" + ps.name + ".xml",
	}
	if o.focus != "" {
		args = append(args, "--focus="+o.focus)
	}
	if o.skip != "" {
		args = append(args, "--skip="+o.skip)
	}
	args = append(args, filepath.Join(o.bin, "e2e.test"), "--",
		"--provider=skeleton", "--kubeconfig="+c.kubeconfig, "--kubectl-path="+filepath.Join(o.bin, "kubectl"),
		// Gathering node logs needs SSH to the nodes, which provider
		// skeleton has not; the logs are in the cluster's state directory.
		"--disable-log-dump",
		// The e2e framework's own JUnit report, junit_01.xml, which the
		// submission holds, as upstream's conformance image writes it.
		"--report-dir="+filepath.Join(dir, "e2e-"+ps.name))
	log, err := os.Create(filepath.Join(dir, "ginkgo-"+ps.name+".log"))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(filepath.Join(o.bin, "ginkgo"), args...)
	// The log is ginkgo's verbose output, every spec by name with what it
	// logged (the submission's e2e.log); the terminal gets a line a spec.
	progress := &progressWriter{out: os.Stdout}
	defer progress.Flush()
	cmd.Stdout = io.MultiWriter(log, progress)
	cmd.Stderr = cmd.Stdout
	err, stopped := runWhileCluster(ctx, cmd, c, "pass", log.Name())
	if stopped != nil {
		return stopped
	}
	if _, statErr := os.Stat(filepath.Join(dir, "report-"+ps.name+".json")); statErr != nil {
		return fmt.Errorf("ginkgo wrote no report (%v); see %s", err, log.Name())
	}
	return nil
}

// runWhileCluster runs cmd (ginkgo, or hydrophone) in a process group of
// its own, with the processes it starts, so that all of them can be
// stopped at once, and returns how it exited. Ctrl-C (ctx) passes SIGINT
// to the group: ginkgo reports the specs it interrupts and cleans up. When
// the cluster ends first, the group is killed, since every spec would wait
// out its timeouts, and so would the clean-up after an interrupt; stopped
// then says so, with the end of the cluster's log.
func runWhileCluster(ctx context.Context, cmd *exec.Cmd, c *cluster, what, logPath string) (exit, stopped error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case exit = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		exit = <-done
	case <-c.done:
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return nil, fmt.Errorf("the cluster stopped during the %s (%v); see %s:\n%s", what, c.err, logPath, tail(c.log, 20))
	}
	return exit, nil
}

// runHeadroom is about what a run writes to the nodes' file system: the
// images each node imports, containers, logs.
const runHeadroom = 10 << 30

// diskWarning says when the file system under path (the nodes' state) has
// less free than the kubelets' eviction threshold (5%, nodefs and imagefs)
// plus runHeadroom: a node under DiskPressure evicts pods, so specs fail
// and hydrophone's conformance pod is evicted.
func diskWarning(path string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil || st.Blocks == 0 {
		return ""
	}
	return lowDisk(path, st.Bavail*uint64(st.Bsize), st.Blocks*uint64(st.Bsize))
}

// lowDisk is diskWarning's verdict on a file system with free of total
// bytes free.
func lowDisk(path string, free, total uint64) string {
	if free >= total/20+runHeadroom {
		return ""
	}
	return fmt.Sprintf("%s has %.1f GiB free of %.0f GiB; the nodes' kubelets evict pods below 5%% free (%.1f GiB), and a run needs about %d GiB more: free some space first",
		path, float64(free)/(1<<30), float64(total)/(1<<30), float64(total/20)/(1<<30), runHeadroom>>30)
}

// cluster is a running hack/local-up.
type cluster struct {
	cmd             *exec.Cmd
	kubeconfig, log string
	done            chan struct{} // closed when local-up has exited
	err             error         // how it exited, set before done is closed
}

// startCluster starts local-up on free ports and waits for its ready
// message, with its output in dir/local-up.log. Its state is in -out's
// cluster/, the same for every profile (one runs at a time, and a socket's
// path under it must stay short).
func startCluster(ctx context.Context, o options, p profile, dir string) (*cluster, error) {
	state := filepath.Join(o.out, "cluster")
	args := []string{"-dir", state, "-bin", o.bin, "-nodes", strconv.Itoa(o.nodes),
		"-images", o.images, "-e2e-images", o.e2eImages, "-extra-images", o.conformanceImage, "-containerd", o.containerd}
	for _, flag := range []string{"-port", "-controller-manager-port", "-scheduler-port"} {
		port, err := ports.Free()
		if err != nil {
			return nil, err
		}
		args = append(args, flag, strconv.Itoa(port))
	}
	args = append(args, p.localUpArgs()...)
	logPath := filepath.Join(dir, "local-up.log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	c := &cluster{cmd: exec.Command(filepath.Join(o.bin, "local-up"), args...), kubeconfig: filepath.Join(state, "admin.conf"), log: logPath, done: make(chan struct{})}
	fmt.Printf("conformance: starting the cluster: local-up %s\n", strings.Join(args, " "))
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.cmd.Stderr = c.cmd.Stdout
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	go func() {
		lines := bufio.NewScanner(out)
		signalled := false
		for lines.Scan() {
			fmt.Fprintln(log, lines.Text())
			if !signalled && strings.Contains(lines.Text(), "Ctrl-C stops it") {
				close(ready)
				signalled = true
			}
		}
		log.Close()
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	select {
	case <-ready:
		fmt.Printf("conformance: the cluster is ready (%s)\n", logPath)
		return c, nil
	case <-c.done:
		return nil, fmt.Errorf("local-up ended before the cluster was ready (%v):\n%s", c.err, tail(logPath, 30))
	case <-ctx.Done():
		_ = c.stop()
		return nil, errors.New("interrupted while the cluster started")
	case <-time.After(15 * time.Minute):
		_ = c.stop()
		return nil, fmt.Errorf("the cluster was not ready within 15 minutes:\n%s", tail(logPath, 30))
	}
}

// stop is Ctrl-C for local-up: it removes the nodes and stops the control
// plane, within three minutes.
func (c *cluster) stop() error {
	_ = c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.done:
		if c.err != nil {
			return fmt.Errorf("local-up: %w", c.err)
		}
		return nil
	case <-time.After(3 * time.Minute):
		_ = c.cmd.Process.Kill()
		return errors.New("local-up did not stop within 3 minutes; killed (make clean-local-style cleanup: local-up -clean -dir ...)")
	}
}

// cleanCluster removes what an earlier run's cluster left in state (its
// nodes too, when it was killed), with local-up's own -clean.
func cleanCluster(o options, state string) error {
	if _, err := os.Stat(state); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	out, err := exec.Command(filepath.Join(o.bin, "local-up"), "-dir", state, "-clean").CombinedOutput()
	if err != nil {
		return fmt.Errorf("removing the previous run's cluster in %s: %v\n%s", state, err, out)
	}
	return nil
}

// tail is the last n lines of a file, for an error message.
func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// sameRelease checks that e2e.test in bin is the release of the control
// plane's binaries beside it: a suite run against another release's
// control plane passes or fails for the wrong reasons (make conformance
// LINE=1.Y once ran main's binaries with the line's suite).
func sameRelease(bin string) (string, error) {
	suite, err := exec.Command(filepath.Join(bin, "e2e.test"), "--version").Output()
	if err != nil {
		return "", fmt.Errorf("e2e.test --version: %w", err)
	}
	server, err := exec.Command(filepath.Join(bin, "kube-apiserver-upstream"), "--version").Output()
	if err != nil {
		return "", fmt.Errorf("kube-apiserver-upstream --version: %w", err)
	}
	return strings.TrimPrefix(strings.TrimSpace(string(suite)), "Kubernetes "), compareReleases(string(suite), string(server), bin)
}

var releaseRE = regexp.MustCompile(`v[0-9]+\.[0-9]+\.[0-9]+`)

// compareReleases compares the releases two --version outputs name.
func compareReleases(suite, server, bin string) error {
	s, v := releaseRE.FindString(suite), releaseRE.FindString(server)
	if s == "" || v == "" {
		return fmt.Errorf("%s: no release in e2e.test's %q or kube-apiserver-upstream's %q --version", bin, suite, server)
	}
	if s != v {
		return fmt.Errorf("%s: e2e.test is %s but the control plane's binaries are %s: build both from one line (make conformance LINE=1.Y)", bin, s, v)
	}
	return nil
}
