// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command bench is make bench-psp: PodSecurityPolicy at the scale of a large
// multi-tenant cluster, ours side by side with v1.24's own plugin. It writes
// test/pspscale's scenarios, builds both sides' BenchmarkScale (the plugin
// package's, and test/psp124's over v1.24.17), runs them in ABBA order,
// checks that both decided every case alike, and prints per pod create each
// side's time, allocations and authorizer calls with v1.24's time over ours,
// then the two goals: ten times v1.24's speed at 100 policies and 10,000
// bindings, and 1,000 policies within twice the cost of 10 for a requester
// who may use two.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/turnstile-k8s/turnstile/test/pspscale"
)

func main() {
	out := flag.String("out", "_output/bench-psp", "directory for the scenarios, both sides' output and table.md")
	benchtime := flag.String("benchtime", "1s", "go test -benchtime for each case")
	rounds := flag.Int("rounds", 2, "ABBA rounds: each side runs every case twice per round")
	flag.Parse()
	if err := run(*out, *benchtime, *rounds); err != nil {
		fmt.Fprintf(os.Stderr, "bench-psp: %v\n", err)
		os.Exit(1)
	}
}

// side is one plugin's benchmark: its test binary and what it reported.
type side struct {
	name, binary, dir string // dir: where the binary runs (its package's)
	env               []string
	results           map[string][]result // per case, one per run
	decisions         string              // the file its cases' decisions go to
}

// result is one case's line of go test -bench output.
type result struct {
	nsPerOp, bytesPerOp, allocsPerOp, authzPerOp, held float64
}

func run(out, benchtime string, rounds int) error {
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	scenarios := filepath.Join(out, "scenarios")
	fmt.Fprintf(os.Stderr, "bench-psp: writing %d scenarios to %s\n", len(pspscale.Scenarios()), scenarios)
	if err := pspscale.Write(scenarios, pspscale.Scenarios()); err != nil {
		return err
	}
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	ours := &side{name: "Turnstile", binary: abs(filepath.Join(out, "ours.test")), dir: "plugin/pkg/admission/security/podsecuritypolicy",
		decisions: abs(filepath.Join(out, "ours.decisions"))}
	anchor := &side{name: "v1.24.17", binary: abs(filepath.Join(out, "v124.test")), dir: "test/psp124",
		env: []string{"TURNSTILE_PSP_SCALE_DIR=" + abs(scenarios)}, decisions: abs(filepath.Join(out, "v124.decisions"))}
	for _, s := range []*side{ours, anchor} {
		fmt.Fprintf(os.Stderr, "bench-psp: building %s's benchmark (%s)\n", s.name, s.dir)
		cmd := exec.Command("go", "test", "-c", "-o", s.binary, ".")
		cmd.Dir, cmd.Stdout, cmd.Stderr = s.dir, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building %s's benchmark: %w", s.name, err)
		}
		s.results = map[string][]result{}
	}
	for r := range rounds {
		for i, s := range []*side{ours, anchor, anchor, ours} {
			fmt.Fprintf(os.Stderr, "bench-psp: round %d of %d, run %d of 4: %s\n", r+1, rounds, i+1, s.name)
			if err := s.bench(benchtime, filepath.Join(out, fmt.Sprintf("%s-%d-%d.txt", strings.ReplaceAll(s.name, " ", ""), r+1, i+1))); err != nil {
				return err
			}
		}
	}
	if err := sameDecisions(ours.decisions, anchor.decisions); err != nil {
		return err
	}
	table := report(ours, anchor, benchtime, rounds)
	fmt.Print(table)
	return os.WriteFile(filepath.Join(out, "table.md"), []byte(table), 0o644)
}

// benchLine is a case's line: name (without the -GOMAXPROCS suffix),
// iterations, then value-unit pairs.
var benchLine = regexp.MustCompile(`^BenchmarkScale/(\S+?)(-\d+)?\s+\d+\s+(.*)$`)

// bench runs every case once, keeping the output in file.
func (s *side) bench(benchtime, file string) error {
	cmd := exec.Command(s.binary, "-test.run", "^$", "-test.bench", "^BenchmarkScale$", "-test.benchtime", benchtime, "-test.benchmem")
	cmd.Dir = s.dir
	cmd.Env = append(append(os.Environ(), s.env...), "TURNSTILE_PSP_SCALE_DECISIONS="+s.decisions)
	output, err := cmd.CombinedOutput()
	if werr := os.WriteFile(file, output, 0o644); werr != nil {
		return werr
	}
	if err != nil {
		return fmt.Errorf("%s's benchmark: %w (its output: %s)", s.name, err, file)
	}
	sc := bufio.NewScanner(strings.NewReader(string(output)))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		var r result
		fields := strings.Fields(m[3])
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return fmt.Errorf("%s: %q: %w", file, sc.Text(), err)
			}
			switch fields[i+1] {
			case "ns/op":
				r.nsPerOp = v
			case "B/op":
				r.bytesPerOp = v
			case "allocs/op":
				r.allocsPerOp = v
			case "authz/op":
				r.authzPerOp = v
			case "held-B":
				r.held = v
			}
		}
		s.results[m[1]] = append(s.results[m[1]], r)
	}
	if len(s.results) == 0 {
		return fmt.Errorf("%s's benchmark reported no case (its output: %s)", s.name, file)
	}
	return nil
}

// sameDecisions fails unless both files hold the same decision for every
// case, and the same cases.
func sameDecisions(a, b string) error {
	read := func(file string) (map[string]string, error) {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			name, decision, _ := strings.Cut(line, "\t")
			if old, ok := out[name]; ok && old != decision {
				return nil, fmt.Errorf("%s: %s decided %q in one run and %q in another", file, name, old, decision)
			}
			out[name] = decision
		}
		return out, nil
	}
	ours, err := read(a)
	if err != nil {
		return err
	}
	anchor, err := read(b)
	if err != nil {
		return err
	}
	var differ []string
	for name, d := range anchor {
		if ours[name] != d {
			differ = append(differ, fmt.Sprintf("%s: v1.24 %q, Turnstile %q", name, d, ours[name]))
		}
	}
	for name := range ours {
		if _, ok := anchor[name]; !ok {
			differ = append(differ, name+": v1.24 did not decide it")
		}
	}
	if len(differ) > 0 {
		sort.Strings(differ)
		return fmt.Errorf("the two plugins decided differently:\n  %s", strings.Join(differ, "\n  "))
	}
	fmt.Fprintf(os.Stderr, "bench-psp: both sides decided all %d cases alike\n", len(ours))
	return nil
}

// median of a case's runs of one measure.
func median(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// afterChange is the suffix of our cases whose rules cache starts over
// every create, as after an RBAC event.
const afterChange = "/after-rbac-change"

func report(ours, anchor *side, benchtime string, rounds int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "PodSecurityPolicy per pod create (Admit, then Validate), Turnstile against v1.24.17's plugin and RBAC authorizer:\n")
	fmt.Fprintf(&b, "medians of %d runs a side in ABBA order, -benchtime %s. Turnstile steady: its rules cache warm, as between RBAC\n", 2*rounds, benchtime)
	b.WriteString("events; after a change: the cache started over before every create, as right after one. Held: the heap a plugin\n")
	b.WriteString("keeps after its first create. Bindings: besides the policies' grants.\n\n")
	b.WriteString("| policies | bindings | requester | Turnstile steady | after a change | v1.24 | v1.24 / steady | v1.24 / after a change | allocs: steady, after, v1.24 | authorizer calls: steady, after, v1.24 | held by Turnstile |\n")
	b.WriteString("|---:|---:|---|---:|---:|---:|---:|---:|---|---|---:|\n")
	ns := func(r []result) float64 { return median(r, func(x result) float64 { return x.nsPerOp }) }
	allocs := func(r []result) float64 { return median(r, func(x result) float64 { return x.allocsPerOp }) }
	calls := func(r []result) float64 { return median(r, func(x result) float64 { return x.authzPerOp }) }
	var names []string
	for name := range anchor.results {
		names = append(names, name)
	}
	key := regexp.MustCompile(`policies=(\d+)/bindings=(\d+)/requester=(.*)`)
	order := func(name string) (int, int, int) {
		m := key.FindStringSubmatch(name)
		p, _ := strconv.Atoi(m[1])
		bn, _ := strconv.Atoi(m[2])
		return p, bn, slices.Index(pspscale.Requesters, strings.ReplaceAll(m[3], "-", " "))
	}
	sort.Slice(names, func(i, j int) bool {
		pi, bi, ri := order(names[i])
		pj, bj, rj := order(names[j])
		return pi < pj || pi == pj && (bi < bj || bi == bj && ri < rj)
	})
	var goals []string
	for _, name := range names {
		a, o, c := anchor.results[name], ours.results[name], ours.results[name+afterChange]
		if len(o) == 0 || len(c) == 0 {
			continue
		}
		m := key.FindStringSubmatch(name)
		requester := strings.ReplaceAll(m[3], "-", " ")
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %.0f× | %.0f× | %.0f, %.0f, %.0f | %.1f, %.1f, %.1f | %s |\n", m[1], m[2], requester,
			duration(ns(o)), duration(ns(c)), duration(ns(a)), ns(a)/ns(o), ns(a)/ns(c),
			allocs(o), allocs(c), allocs(a), calls(o), calls(c), calls(a),
			bytes(median(o, func(x result) float64 { return x.held })))
		if m[1] == "100" && m[2] == "10000" {
			worst := ns(a) / ns(c)
			goals = append(goals, fmt.Sprintf("at 100 policies and 10,000 bindings, as the %s: %.0f× v1.24's speed steady, %.0f× right after an RBAC change (goal: at least 10×): %s",
				requester, ns(a)/ns(o), worst, met(worst >= 10)))
		}
	}
	for _, bindings := range []string{"100", "10000"} {
		for _, suffix := range []string{"", afterChange} {
			at := func(p string) []result {
				return ours.results["policies="+p+"/bindings="+bindings+"/requester=service-account"+suffix]
			}
			if len(at("10")) == 0 || len(at("1000")) == 0 {
				continue
			}
			state := "steady"
			if suffix != "" {
				state = "right after an RBAC change"
			}
			r := ns(at("1000")) / ns(at("10"))
			goals = append(goals, fmt.Sprintf("Turnstile at 1,000 policies over 10, %s bindings, %s, for a service account that may use two: %.2f (goal: at most 2): %s", bindings, state, r, met(r <= 2)))
		}
	}
	b.WriteString("\n")
	for _, g := range goals {
		b.WriteString("- " + g + "\n")
	}
	return b.String()
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// duration prints ns as a time with three significant digits.
func duration(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3g s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.3g ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.3g µs", ns/1e3)
	}
	return fmt.Sprintf("%.3g ns", ns)
}

func bytes(n float64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", n/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", n/(1<<10))
	}
	return fmt.Sprintf("%.0f B", n)
}
