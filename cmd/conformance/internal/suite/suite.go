// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package suite runs upstream's conformance suite against a local-up
// cluster under one profile, with our runner (ginkgo and e2e.test here) or
// hydrophone's (upstream's conformance image in the cluster), then
// summarizes the run and writes the submission folder.
package suite

import (
	"context"
	"errors"
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

	"github.com/turnstile-k8s/turnstile/cmd/conformance/internal/profiles"
	"github.com/turnstile-k8s/turnstile/internal/localnode"
)

// Options are the command's flags (cmd/conformance).
type Options struct {
	Profile, Bin, Images, E2EImages, Out string
	Containerd                           string
	// Runner is ours or hydrophone; ConformanceImage is upstream's
	// conformance image's archive, which hydrophone starts.
	Runner, ConformanceImage string
	Focus, Skip, Specs       string
	Procs, Nodes             int
	Passes                   string
	Timeout                  time.Duration
	// Product and Reproduce go into the submission folder.
	Product, Reproduce string
}

// Run starts the profile's cluster, runs the suite's passes on it, and
// writes the summary and the submission folder.
func Run(o Options) error {
	p, err := profiles.Lookup(o.Profile)
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
	if o.Runner == RunnerOurs {
		o.ConformanceImage = ""
	}
	userFocus := o.Focus
	if _, err := unmatchedAlternatives(o.Focus, nil); err != nil {
		return err // before anything starts
	}
	var named []string
	if o.Specs != "" {
		if named, err = readSpecs(o.Specs); err != nil {
			return err
		}
		if o.Focus != "" {
			return errors.New("-focus and -specs exclude each other")
		}
		o.Focus = focusOn(named)
	}
	for _, path := range []*string{&o.Bin, &o.Images, &o.E2EImages, &o.Containerd, &o.ConformanceImage, &o.Out} {
		if *path == "" {
			continue
		}
		if *path, err = filepath.Abs(*path); err != nil {
			return err
		}
	}
	tools := []string{"e2e.test", "ginkgo", "local-up", "kubectl", "kube-apiserver", "kube-apiserver-upstream"}
	if o.Runner == runnerHydrophone {
		tools = append(tools, "hydrophone")
		if _, err := os.Stat(o.ConformanceImage); err != nil {
			return fmt.Errorf("upstream's conformance image is not built (make conformance RUNNER=hydrophone builds it: make conformance-image): %w", err)
		}
	}
	for _, name := range tools {
		if _, err := os.Stat(filepath.Join(o.Bin, name)); err != nil {
			return fmt.Errorf("%s is not built (make conformance builds it): %w", name, err)
		}
	}
	release, err := sameRelease(o.Bin)
	if err != nil {
		return err
	}
	if o.Reproduce == "" {
		o.Reproduce = strings.Join(os.Args, " ")
	}
	dir := reportDir(o.Out, o.Runner, p)
	// A fresh cluster and fresh reports for every run: results must not
	// depend on what an earlier run left behind.
	if err := cleanCluster(o, filepath.Join(o.Out, "cluster")); err != nil {
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

	fmt.Printf("conformance: profile %s: %s; runner: %s\n", p.Name, p.Description, o.Runner)
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
	// Less than this and specs fail when a node comes under DiskPressure
	// and evicts their pods, or hydrophone's conformance pod.
	if warning := localnode.LowDisk(o.Out, runHeadroom); warning != "" {
		fmt.Println("conformance: warning:", warning)
	}
	cluster, err := startCluster(ctx, o, p, dir)
	if err != nil {
		return err
	}
	var runErr error
	if o.Runner == runnerHydrophone {
		runErr = runHydrophone(ctx, o, dir, cluster)
	} else {
		runErr = runPasses(ctx, o, dir, cluster, passes)
	}
	if err := cluster.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "conformance: %v\n", err)
	}
	var s summary
	if o.Runner == runnerHydrophone {
		s, err = summarizeJUnit(dir, p, time.Since(began), userFocus)
	} else {
		s, err = summarize(dir, p, time.Since(began), userFocus)
	}
	if err != nil {
		return errors.Join(runErr, err)
	}
	fmt.Printf("\n%s\nThe summary with every spec's name: %s\n", s.head(), filepath.Join(dir, "summary.md"))
	if o.Runner == runnerHydrophone {
		extra := agreement(s, reportDir(o.Out, RunnerOurs, p)) + pullReport(filepath.Join(o.Out, "cluster", "logs", "registry.log"))
		fmt.Print(extra)
		if err := appendFile(filepath.Join(dir, "summary.md"), extra); err != nil {
			return errors.Join(runErr, err)
		}
	}
	if runErr == nil {
		folder, err := writeSubmission(o, dir, release, passes, o.Reproduce)
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
		return fmt.Errorf("%s names specs that did not run (renamed upstream, or not [Conformance]):\n  %s", o.Specs, strings.Join(missing, "\n  "))
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

// DefaultPasses are both passes, in upstream's order.
const DefaultPasses = "parallel,serial"

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
func passesOf(o Options) ([]pass, error) {
	var passes []pass
	for _, name := range strings.Split(o.Passes, ",") {
		switch strings.TrimSpace(name) {
		case "parallel":
			passes = append(passes, pass{"parallel", "Conformance && !Serial", o.Procs})
		case "serial":
			passes = append(passes, pass{"serial", "Conformance && Serial", 1})
		default:
			return nil, fmt.Errorf("-passes %q: %q is not a pass (parallel, serial)", o.Passes, name)
		}
	}
	return passes, nil
}

func runPasses(ctx context.Context, o Options, dir string, c *cluster, passes []pass) error {
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
func runGinkgo(ctx context.Context, o Options, dir string, c *cluster, ps pass) error {
	args := []string{
		"--procs=" + strconv.Itoa(ps.procs), "--label-filter=" + ps.labelFilter,
		"--timeout=" + o.Timeout.String(), "--no-color", "--silence-skips", "-v",
		"--output-dir=" + dir, "--json-report=report-" + ps.name + ".json", "--junit-report=junit-" + ps.name + ".xml",
	}
	if o.Focus != "" {
		args = append(args, "--focus="+o.Focus)
	}
	if o.Skip != "" {
		args = append(args, "--skip="+o.Skip)
	}
	args = append(args, filepath.Join(o.Bin, "e2e.test"), "--",
		"--provider=skeleton", "--kubeconfig="+c.kubeconfig, "--kubectl-path="+filepath.Join(o.Bin, "kubectl"),
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
	cmd := exec.Command(filepath.Join(o.Bin, "ginkgo"), args...)
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

// runHeadroom is about what a conformance run writes to the nodes'
// filesystem: the images of every spec each node imports, containers, logs.
const runHeadroom = 10 << 30

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
