// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A task page (docs/tasks/) is a reader's two terminals: each of its shell
// blocks starts with "# terminal 1" (a command that holds the terminal, such
// as make run, ready once it prints "Ctrl-C stops it") or "# terminal 2"
// (commands run to their end, each of which must succeed). runTaskPage runs
// them in the page's order, as the reader would, so that a command changed
// on the page is a command changed in the test. Starting terminal 1 again
// first presses Ctrl-C in it, and so does the page's "## Undo" section, as
// each page's text tells the reader to.
//
// A page of several machines (the HA cluster's) has blocks that start with
// "# on NAME" or "# on NAME, NAME...": the block runs to its end on each
// machine named, in that order, as terminal 2's do; the test says what a
// machine is (taskMachine).
//
// What differs from a reader's run: sudo is dropped (a page that uses it
// runs only as root), and
// the state directory and ports are the test's own, given to make through
// its variables and to the commands in place of _output/local. A test may
// put its own in place of more of the page's words (a registry, a key) and
// add to the commands' environment (taskOptions).

// taskOptions is what a test puts in place of a page's words, and adds to
// its commands' environment.
type taskOptions struct {
	replace    map[string]string // each key, wherever the page has it, by its value
	env        []string          // NAME=value, over the test's own environment
	beforeUndo func(*taskRun)    // the test's own checks, before the page's "## Undo"
	bound      time.Duration     // each terminal 2 block's time; three minutes if unset
	machines   map[string]taskMachine
}

// taskMachine is one machine of a page's "# on" blocks, as the test makes
// it: where its commands run, what its environment adds, and what of the
// page's words are its own (/etc/kubernetes, a containerd socket); the
// page-wide replacements apply after the machine's.
type taskMachine struct {
	name    string // the page's; machine sets it
	dir     string // the commands' working directory; the repository's if empty
	env     []string
	replace map[string]string
}

// taskBlock is one shell block of a task page.
type taskBlock struct {
	terminal int      // 1 or 2; 2 for a block on machines
	machines []string // the machines an "# on" block runs on, in order
	script   string   // the block without its first line
	line     int      // where it starts on the page
	undo     bool     // in the page's "## Undo" section
}

var (
	terminalLine = regexp.MustCompile(`^# terminal ([12])$`)
	machineLine  = regexp.MustCompile(`^# on ([a-z0-9-]+(?:, [a-z0-9-]+)*)$`)
)

// readTaskPage reads a page's shell blocks; every one must name its terminal.
func readTaskPage(t *testing.T, page string) []taskBlock {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []taskBlock
	var cur *taskBlock
	var body []string
	undo := false
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "## "):
			undo = line == "## Undo"
		case cur == nil && line == "```sh":
			cur = &taskBlock{line: i + 1, undo: undo}
			body = nil
		case cur == nil && strings.HasPrefix(line, "```") && len(line) > 3:
			t.Fatalf("%s:%d: a %s block: a task page's commands are ```sh blocks, each run by its test", page, i+1, line[3:])
		case cur != nil && line == "```":
			if len(body) == 0 {
				t.Fatalf("%s:%d: an empty block", page, cur.line)
			}
			if m := machineLine.FindStringSubmatch(body[0]); m != nil {
				cur.terminal, cur.machines = 2, strings.Split(m[1], ", ")
			} else if m := terminalLine.FindStringSubmatch(body[0]); m != nil {
				cur.terminal = int(m[1][0] - '0')
			} else {
				t.Fatalf("%s:%d: the block's first line is %q, want \"# terminal 1\", \"# terminal 2\" or \"# on MACHINE[, MACHINE...]\"", page, cur.line, body[0])
			}
			cur.script = strings.Join(body[1:], "\n")
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			body = append(body, line)
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: the block is not closed", page, cur.line)
	}
	return blocks
}

// taskRun is a task page being run.
type taskRun struct {
	t        *testing.T
	page     string
	dir      string    // the state directory, for _output/local
	env      []string  // make's variables, and what terminal 2 exported
	exports  []string  // terminal 2's export lines, kept as a shell keeps them
	holder   *exec.Cmd // what holds terminal 1
	terminal *os.File  // terminal 1, as the reader types into it
	out      *syncBuffer
	exited   chan error
	outputs  []string      // each terminal 2 block's output, in order
	bound    time.Duration // each terminal 2 block's time
	repoRoot string
}

// runTaskPage runs every block of page; ready bounds each terminal 1
// command's start (make run may build first).
func runTaskPage(t *testing.T, page string, ready time.Duration, opts ...taskOptions) *taskRun {
	t.Helper()
	blocks := readTaskPage(t, page)
	for _, b := range blocks {
		if strings.Contains(b.script, "sudo ") && os.Geteuid() != 0 {
			t.Skipf("%s needs root; `make test-node` runs it", page)
		}
	}
	ports := freePorts(t, 3)
	r := &taskRun{t: t, page: page, dir: t.TempDir(), repoRoot: filepath.Join("..", ".."), bound: 3 * time.Minute}
	r.env = append(os.Environ(), "LOCAL_DIR="+r.dir, "PORT="+ports[0], "CONTROLLER_MANAGER_PORT="+ports[1], "SCHEDULER_PORT="+ports[2])
	for _, o := range opts {
		r.env = append(r.env, o.env...)
		if o.bound > 0 {
			r.bound = o.bound
		}
	}
	var pageWords []map[string]string
	for _, o := range opts {
		pageWords = append(pageWords, o.replace)
	}
	// The state directory is the page's if it runs make run or names
	// _output/local; its undo must then remove it.
	undone, local := false, false
	for _, b := range blocks {
		local = local || strings.Contains(b.script, "make run") || strings.Contains(b.script, "_output/local")
		if b.undo && !undone {
			for _, o := range opts {
				if o.beforeUndo != nil {
					o.beforeUndo(r)
				}
			}
		}
		undone = undone || b.undo
		script := strings.ReplaceAll(b.script, "sudo ", "")
		script = strings.ReplaceAll(strings.ReplaceAll(script, "$PWD/_output/local", r.dir), "_output/local", r.dir)
		script = replaceWords(script, pageWords...)
		if b.undo {
			r.stop(b)
		}
		switch {
		case b.machines != nil:
			for _, name := range b.machines {
				m, ok := machine(opts, name)
				if !ok {
					t.Fatalf("%s:%d: the block runs on %q, a machine the test does not make", page, b.line, name)
				}
				mine := strings.ReplaceAll(replaceWords(b.script, m.replace), "sudo ", "")
				r.run(b, replaceWords(mine, pageWords...), m)
			}
		case b.terminal == 1:
			r.stop(b)
			r.start(b, script, ready)
		default:
			r.run(b, script, taskMachine{})
		}
	}
	if _, err := os.Stat(r.dir); undone && local && !os.IsNotExist(err) {
		t.Errorf("%s: after the page's undo, the state directory %s is still there (%v)", page, r.dir, err)
	}
	return r
}

// replaceWords puts each map's words in place in script, all of one map
// in one pass, so that a value is never replaced again by another key of
// its map.
func replaceWords(script string, words ...map[string]string) string {
	for _, m := range words {
		var pairs []string
		for word, by := range m {
			pairs = append(pairs, word, by)
		}
		script = strings.NewReplacer(pairs...).Replace(script)
	}
	return script
}

// machine is the machine name of an "# on" block, from the options.
func machine(opts []taskOptions, name string) (taskMachine, bool) {
	for _, o := range opts {
		if m, ok := o.machines[name]; ok {
			m.name = name
			return m, true
		}
	}
	return taskMachine{}, false
}

// start runs a terminal 1 command on a pseudo-terminal of its own, as the
// terminal's foreground job, until it says it is ready.
func (r *taskRun) start(b taskBlock, script string, ready time.Duration) {
	r.t.Helper()
	r.t.Logf("%s:%d: terminal 1: %s", r.page, b.line, script)
	r.holder = exec.Command("bash", "-c", script)
	r.holder.Dir, r.holder.Env = r.repoRoot, r.env
	r.terminal, r.out, r.exited = onTerminal(r.t, r.holder)
	r.t.Cleanup(r.cleanup) // after onTerminal's, so before the terminal closes
	deadline := time.After(ready)
	for !strings.Contains(r.out.String(), "Ctrl-C stops it") {
		select {
		case err := <-r.exited:
			r.holder = nil
			r.t.Fatalf("%s:%d: %q ended before it was ready (%v):\n%s", r.page, b.line, script, err, r.out.String())
		case <-deadline:
			r.t.Fatalf("%s:%d: %q not ready in %s:\n%s", r.page, b.line, script, ready, r.out.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stop presses Ctrl-C in terminal 1, if a command holds it, and waits
// for it to end cleanly.
func (r *taskRun) stop(b taskBlock) {
	r.t.Helper()
	if r.holder == nil {
		return
	}
	if _, err := r.terminal.Write([]byte{0x03}); err != nil { // Ctrl-C
		r.t.Fatal(err)
	}
	select {
	case err := <-r.exited:
		if err != nil || strings.Contains(r.out.String(), "make: ***") {
			r.t.Fatalf("%s:%d: terminal 1 after Ctrl-C: %v\n%s", r.page, b.line, err, r.out.String())
		}
	case <-time.After(3 * time.Minute):
		r.t.Fatalf("%s:%d: terminal 1 still running 3 minutes after Ctrl-C:\n%s", r.page, b.line, r.out.String())
	}
	r.holder = nil
}

// run runs a terminal 2 block, or a block on machine m, to its end, after
// the exports earlier blocks made, and fails the test on the first command
// that fails.
func (r *taskRun) run(b taskBlock, script string, m taskMachine) {
	r.t.Helper()
	for _, line := range strings.Split(script, "\n") {
		if strings.HasPrefix(line, "export ") {
			r.exports = append(r.exports, line)
		}
	}
	full := "set -euo pipefail\n" + strings.Join(r.exports, "\n") + "\n" + script
	// A reader sees a command that hangs; the test gives each block its
	// bound and names it, rather than wait for go test's deadline.
	ctx, cancel := context.WithTimeout(context.Background(), r.bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", full)
	cmd.Dir, cmd.Env, cmd.WaitDelay = r.repoRoot, append(slices.Clip(r.env), m.env...), 10*time.Second
	if m.dir != "" {
		cmd.Dir = m.dir
	}
	where := "terminal 2"
	if m.name != "" {
		where = "on " + m.name
	}
	r.t.Logf("%s:%d: %s:\n%s", r.page, b.line, where, script)
	log := &lineLog{t: r.t, prefix: fmt.Sprintf("%s:%d: %s: ", filepath.Base(r.page), b.line, where)}
	cmd.Stdout, cmd.Stderr = log, log
	err := cmd.Run()
	out := log.flush()
	if err != nil {
		r.t.Fatalf("%s:%d: %s: %v\n%s", r.page, b.line, where, err, lastLines(out, 30))
	}
	r.outputs = append(r.outputs, out)
}

// lineLog writes each whole line of a block's output to the test's log as
// it comes, so that a long block (make conformance's half hour) shows its
// progress, and keeps all of it for the block's output. exec.Cmd calls
// Write from one goroutine at a time when Stdout and Stderr are the same.
type lineLog struct {
	t      *testing.T
	prefix string
	all    strings.Builder
	part   []byte
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.all.Write(p)
	l.part = append(l.part, p...)
	for {
		i := slices.Index(l.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.t.Logf("%s%s", l.prefix, l.part[:i])
		l.part = l.part[i+1:]
	}
}

// flush logs what is left after the last newline, and returns the whole
// output.
func (l *lineLog) flush() string {
	if len(l.part) > 0 {
		l.t.Logf("%s%s", l.prefix, l.part)
		l.part = nil
	}
	return l.all.String()
}

// cleanup stops what is still running and removes the state, as the page's
// undo would have, when the test failed before it. Each start registers it:
// the first call stops terminal 1, and removing no state is no error.
func (r *taskRun) cleanup() {
	if r.holder != nil {
		_, _ = r.terminal.Write([]byte{0x03}) // Ctrl-C, as stop presses it
		select {
		case <-r.exited:
		case <-time.After(3 * time.Minute):
			_ = syscall.Kill(-r.holder.Process.Pid, syscall.SIGKILL)
			<-r.exited
		}
		r.holder = nil
	}
	if out, err := exec.Command(filepath.Join(r.repoRoot, "_output", "bin", "local-up"), "-dir", r.dir, "-clean").CombinedOutput(); err != nil {
		r.t.Logf("local-up -clean: %v\n%s", err, out)
	}
}

// The quick start (docs/tasks/quick-start.md): make run, kubectl from a
// second terminal, then make run NODES=1 and a first pod, whose log the
// page quotes; and its undo.
func TestQuickStart(t *testing.T) {
	if os.Getenv("TURNSTILE_NODE_IMAGES") == "" {
		t.Skip("needs the nodes' images (make node-images); `make test-node` runs it")
	}
	r := runTaskPage(t, "../../docs/tasks/quick-start.md", 10*time.Minute)
	logs := fmt.Sprint(r.outputs)
	if !strings.Contains(logs, "hello from Turnstile") {
		t.Errorf("the first pod's log is not the page's \"hello from Turnstile\":\n%s", logs)
	}
}

// Enabling and configuring a controller (docs/tasks/configure-a-controller.md):
// a file checked with --validate-only, make run with it, and a change in
// force without a restart: a root debug container admitted, then, reloaded,
// refused by SecurityContextDeny.
func TestTaskConfigureAController(t *testing.T) {
	t.Parallel() // make run on ports and a state directory of its own
	r := runTaskPage(t, "../../docs/tasks/configure-a-controller.md", 5*time.Minute)
	if len(r.outputs) < 4 {
		t.Fatalf("%d terminal 2 blocks ran, want the page's 5", len(r.outputs))
	}
	admitted, reloaded := r.outputs[2], r.outputs[3]
	if strings.Contains(admitted, "forbidden") {
		t.Errorf("the first debug container was refused before the option was on:\n%s", admitted)
	}
	if !strings.Contains(reloaded, `ephemeral container "root": SecurityContext.RunAsUser is forbidden`) || !strings.Contains(reloaded, "refused, as configured") {
		t.Errorf("after the reload, the debug container was not refused as the page says:\n%s", reloaded)
	}
}

// Leaving PodSecurityPolicy (docs/tasks/leave-podsecuritypolicy.md): the
// report, convert, verify, warn and off steps on make run, each block as
// written: a workload's pods admitted at restricted by PodSecurityPolicy,
// then by the replacement with PodSecurityPolicy warning and then off, and
// a privileged workload's refused by the replacement.
func TestTaskLeavePodSecurityPolicy(t *testing.T) {
	t.Parallel() // make run on ports and a state directory of its own
	r := runTaskPage(t, "../../docs/tasks/leave-podsecuritypolicy.md", 5*time.Minute)
	if len(r.outputs) < 6 {
		t.Fatalf("%d terminal 2 blocks ran, want the page's 7", len(r.outputs))
	}
	for i, want := range map[int]int{3: 2, 5: 1} {
		if got := strings.Count(r.outputs[i], " restricted\n"); got != want {
			t.Errorf("%d pods at restricted, want %d:\n%s", got, want, r.outputs[i])
		}
	}
	if refused := r.outputs[4]; !strings.Contains(refused, "forbidden") || !strings.Contains(refused, "privileged") {
		t.Errorf("the privileged workload's pods were not refused by the replacement:\n%s", refused)
	}
}

// Certifying (docs/tasks/certify.md): upstream's whole conformance suite
// run by hydrophone, the submission's contact address filled in, and the
// folder checked as the CNCF's bot checks it, each block as written; then
// the page's undo. Half an hour of the machine, so only `make test-certify`
// runs it.
func TestTaskCertify(t *testing.T) {
	if os.Getenv("TURNSTILE_CERTIFY") == "" {
		t.Skip("runs the whole conformance suite; `sudo make test-certify` runs it")
	}
	run := filepath.Join("..", "..", "_output", "conformance", "all-compatible-hydrophone")
	runTaskPage(t, "../../docs/tasks/certify.md", 0, taskOptions{bound: 90 * time.Minute, beforeUndo: func(r *taskRun) {
		if len(r.outputs) != 3 {
			t.Fatalf("%d terminal 2 blocks ran before the undo, want the page's 3", len(r.outputs))
		}
		if check := r.outputs[2]; !strings.Contains(check, "passes every check") {
			t.Errorf("make conformance-check did not pass the folder:\n%s", check)
		}
		summary, err := os.ReadFile(filepath.Join(run, "summary.md"))
		if err != nil {
			t.Fatal(err)
		}
		head, _, _ := strings.Cut(string(summary), "\n## ")
		t.Logf("the run's summary.md begins:\n%s", head)
	}})
	if _, err := os.Stat(run); !os.IsNotExist(err) {
		t.Errorf("after the page's undo, %s is still there (%v)", run, err)
	}
}
