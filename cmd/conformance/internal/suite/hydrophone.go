// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/turnstile-k8s/turnstile/cmd/conformance/internal/profiles"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The runners: ours starts ginkgo and e2e.test on the host (runPasses);
// hydrophone, as certification runs it, starts upstream's conformance image
// in the cluster, where go-runner runs ginkgo over e2e.test, and downloads
// e2e.log and junit_01.xml.
const (
	RunnerOurs       = "ours"
	runnerHydrophone = "hydrophone"
)

// reportDir is where a run on profile p writes its reports: the profile's
// name for ours, with -hydrophone for hydrophone's, so that each runner's
// last run stays beside the other's for the comparison.
func reportDir(out, runner string, p profiles.Profile) string {
	if runner == runnerHydrophone {
		return filepath.Join(out, p.Name+"-"+runnerHydrophone)
	}
	return filepath.Join(out, p.Name)
}

// runHydrophone runs sigs.k8s.io/hydrophone --conformance against the
// cluster. hydrophone asks for registry.k8s.io/conformance:<the server's
// version> and busybox, which the nodes have (make conformance-image, and
// the node images) and their registry serves; it writes e2e.log and
// junit_01.xml into dir. ginkgo runs the [Serial] specs alone after the
// others in the same run (the e2e framework gives them ginkgo's Serial
// decorator), so there is one run, with -procs processes.
func runHydrophone(ctx context.Context, o Options, dir string, c *cluster) error {
	args := hydrophoneArgs(o, c.kubeconfig, dir)
	logPath := filepath.Join(dir, "hydrophone.log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	fmt.Printf("conformance: hydrophone %s\nconformance: its log, with the conformance pod's output: %s\n", strings.Join(args, " "), logPath)
	cmd := exec.Command(filepath.Join(o.Bin, "hydrophone"), args...)
	// stdout is the conformance pod's log (ginkgo's verbose output): a
	// line a spec on the terminal; stderr is hydrophone's own lines.
	progress := &progressWriter{out: os.Stdout}
	defer progress.Flush()
	cmd.Stdout = io.MultiWriter(log, progress)
	cmd.Stderr = io.MultiWriter(log, os.Stdout)
	config, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	// hydrophone v0.8.0 waits forever for a conformance pod that was
	// evicted (a node under DiskPressure evicts it): the watchdog stops it.
	run, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go watchdog(run, cancel, client, podGrace)
	err, stopped := runWhileCluster(run, cmd, c, "run", logPath)
	if stopped != nil {
		return stopped
	}
	// hydrophone exits with the suite's status when a spec failed, which
	// the summary tells better; without its two files the run failed (and
	// if the watchdog stopped it, that says why). A watchdog that stopped
	// it while it cleaned up after downloading them changes nothing.
	for _, name := range []string{"e2e.log", "junit_01.xml"} {
		if _, statErr := os.Stat(filepath.Join(dir, name)); statErr != nil {
			if cause := context.Cause(run); ctx.Err() == nil && cause != nil && !errors.Is(cause, context.Canceled) {
				return fmt.Errorf("hydrophone stopped: %w; see %s:\n%s", cause, logPath, tail(logPath, 20))
			}
			return fmt.Errorf("hydrophone wrote no %s (%v); see %s:\n%s", name, err, logPath, tail(logPath, 20))
		}
	}
	return nil
}

// The conformance pod hydrophone v0.8.0 starts (pkg/conformance: PodName,
// types.DefaultNamespace).
const (
	conformanceNamespace = "conformance"
	conformancePod       = "e2e-conformance-test"
)

// podGrace is how long hydrophone has to notice, by itself, that its pod
// ended before the watchdog stops it; podPoll how often the pod is read.
var (
	podGrace = 2 * time.Minute
	podPoll  = 10 * time.Second
)

// watchdog cancels run, with the reason, when the conformance pod has
// failed (evicted, or killed with its sidecar) or vanished after it
// existed, and hydrophone has not ended within grace of it. It returns
// when run ends.
func watchdog(run context.Context, cancel context.CancelCauseFunc, client kubernetes.Interface, grace time.Duration) {
	seen := false
	for {
		select {
		case <-run.Done():
			return
		case <-time.After(podPoll):
		}
		pod, err := client.CoreV1().Pods(conformanceNamespace).Get(run, conformancePod, metav1.GetOptions{})
		reason := ""
		switch {
		case apierrors.IsNotFound(err) && seen:
			reason = "the conformance pod " + conformanceNamespace + "/" + conformancePod + " is gone"
		case err != nil:
			continue
		default:
			seen = true
			reason = podEnded(pod)
		}
		if reason == "" {
			continue
		}
		// hydrophone deletes the pod itself once it has the results, and
		// ends: only one that has not ended within grace is stopped.
		select {
		case <-run.Done():
		case <-time.After(grace):
			fmt.Printf("conformance: %s, and hydrophone did not end within %s of it: stopping it\n", reason, grace)
			cancel(errors.New(reason))
		}
		return
	}
}

// podEnded says how the conformance pod ended, or "" while it runs: its
// phase is Failed only once every container, the result sidecar too, has
// stopped, which a finished run never does before hydrophone has the
// results.
func podEnded(pod *corev1.Pod) string {
	if pod.Status.Phase != corev1.PodFailed {
		return ""
	}
	return fmt.Sprintf("the conformance pod %s/%s failed: %s %s", pod.Namespace, pod.Name, pod.Status.Reason, pod.Status.Message)
}

// hydrophoneArgs are hydrophone's flags for a run of o's specs. With a
// focus, hydrophone's --focus takes --conformance's place, and a label
// filter keeps the run to [Conformance] specs as ours does.
func hydrophoneArgs(o Options, kubeconfig, dir string) []string {
	args := []string{"--kubeconfig", kubeconfig, "--output-dir", dir,
		"--parallel", strconv.Itoa(o.Procs),
		// 6 and up gives ginkgo -v: e2e.log names every spec, as ours.
		"--verbosity", "6",
		// Its periodic "Progress: n/m" lines would land amid ginkgo's.
		"--disable-progress-status",
		"--extra-ginkgo-args", "--timeout=" + o.Timeout.String()}
	if o.Focus != "" {
		args = append(args, "--focus", o.Focus, "--extra-ginkgo-args", "--label-filter=Conformance")
	} else {
		args = append(args, "--conformance")
	}
	if o.Skip != "" {
		args = append(args, "--skip", o.Skip)
	}
	return args
}

// agreement compares the specs this hydrophone run passed with those our
// runner's last run on the same profile passed (ours: its passed.txt), both
// ways, within the specs this run selected. It is a paragraph for the
// summary.
func agreement(s summary, ours string) string {
	oursNames, err := readPassed(ours)
	if err != nil {
		return fmt.Sprintf("\n## Compared with our runner\nOur runner has no run on profile %s to compare with (sudo make conformance PROFILE=%s).\n", s.profile.Name, s.profile.Name)
	}
	selected, passed := s.selected(), s.passedSet()
	oursPassed := map[string]bool{}
	var onlyOurs, onlyHydrophone []string
	for _, name := range oursNames {
		if !selected[name] {
			continue
		}
		oursPassed[name] = true
		if !passed[name] {
			onlyOurs = append(onlyOurs, name)
		}
	}
	for name := range passed {
		if !oursPassed[name] {
			onlyHydrophone = append(onlyHydrophone, name)
		}
	}
	sort.Strings(onlyHydrophone)
	var b strings.Builder
	b.WriteString("\n## Compared with our runner\n")
	if len(onlyOurs) == 0 && len(onlyHydrophone) == 0 {
		fmt.Fprintf(&b, "Both runners passed the same %d specs: this run and our runner's last on profile %s (%s) agree spec for spec.\n", len(passed), s.profile.Name, ours)
		return b.String()
	}
	fmt.Fprintf(&b, "The runners disagree on %d specs (our runner's last run: %s).\n", len(onlyOurs)+len(onlyHydrophone), ours)
	for _, part := range []struct {
		title string
		names []string
	}{{"Passed by our runner, not by hydrophone", onlyOurs}, {"Passed by hydrophone, not by our runner", onlyHydrophone}} {
		if len(part.names) > 0 {
			fmt.Fprintf(&b, "\n### %s\n", part.title)
			for _, n := range part.names {
				fmt.Fprintf(&b, "- %s\n", n)
			}
		}
	}
	return b.String()
}

// registryLine is a request in the nodes' registry log (localnode's
// registry): method, path, status.
var registryLine = regexp.MustCompile(`(GET|HEAD) /v2/(.+)/manifests/(\S+) ([0-9]{3})$`)

// pulls reads the nodes' registry log: the images it served and those it
// did not have, as "repository:reference", for the summary's account of
// where the run's images came from.
func pulls(registryLog string) (served, missing []string, err error) {
	f, err := os.Open(registryLog)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	seen := map[string]bool{}
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		m := registryLine.FindStringSubmatch(lines.Text())
		if m == nil {
			continue
		}
		ref := m[2] + ":" + m[3]
		if strings.HasPrefix(m[3], "sha256:") {
			ref = m[2] + "@" + m[3]
		}
		key := ref + " " + m[4]
		if seen[key] {
			continue
		}
		seen[key] = true
		if m[4] == "200" {
			served = append(served, ref)
		} else {
			missing = append(missing, ref)
		}
	}
	slices.Sort(served)
	slices.Sort(missing)
	return served, missing, lines.Err()
}

// pullReport is the summary's paragraph on the images the nodes pulled
// during the run. Every pull goes to the run's registry (containerd's
// hosts directory sends every registry there, with no fallback); an image
// it has not is refused there, and the guard drops any packet for off the
// machine, so such a pull fails its pod.
func pullReport(registryLog string) string {
	served, missing, err := pulls(registryLog)
	if err != nil {
		return fmt.Sprintf("\n## Image pulls\nThe nodes' registry log could not be read: %v\n", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Image pulls\nThe nodes pull from the run's own registry only (%s); it served %d images", registryLog, len(served))
	if len(served) > 0 {
		fmt.Fprintf(&b, ":\n")
		for _, r := range served {
			fmt.Fprintf(&b, "- %s\n", r)
		}
	} else {
		b.WriteString(" (every image the run started was imported into the nodes from the same archives).\n")
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "\nIt refused %d it does not have (the spec that asked for them expects the pull to fail, or failed):\n", len(missing))
		for _, r := range missing {
			fmt.Fprintf(&b, "- %s\n", r)
		}
	}
	return b.String()
}

// checkRunner refuses -runner values and the flags that only our runner
// has.
func checkRunner(o Options) error {
	switch o.Runner {
	case RunnerOurs:
		return nil
	case runnerHydrophone:
		if o.Passes != DefaultPasses {
			return errors.New("-passes is our runner's: hydrophone runs every selected spec in one ginkgo run, the [Serial] ones alone at its end")
		}
		if o.Specs != "" {
			return errors.New("-specs is our runner's; with hydrophone, name the specs with -focus")
		}
		return nil
	}
	return fmt.Errorf("-runner %q: the runners are %s and %s", o.Runner, RunnerOurs, runnerHydrophone)
}
