// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command gate runs govulncheck over binaries and decides what fails the
// build: a vulnerable function that the binary holds (govulncheck's
// symbol-level finding, its reachability analysis) in a module older than
// the advisory's fixed version. For each it names the binary, the
// advisory, the module at the version found and the fixed version. An
// advisory with no fixed version (upstream's "fixed in: N/A", where the fix
// is a configuration or there is none yet) cannot be acted on by a bump: it
// is listed, and does not fail.
//
//	gate -govulncheck _output/bin/govulncheck -db file://... BINARY...
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// finding is what the gate reads of govulncheck's JSON stream: its osv
// and finding messages (golang.org/x/vuln/internal/govulncheck).
type message struct {
	OSV *struct {
		ID      string `json:"id"`
		Summary string `json:"summary"`
	} `json:"osv"`
	Finding *struct {
		OSV          string `json:"osv"`
		FixedVersion string `json:"fixed_version"`
		Trace        []struct {
			Module   string `json:"module"`
			Version  string `json:"version"`
			Package  string `json:"package"`
			Function string `json:"function"`
			Receiver string `json:"receiver"`
		} `json:"trace"`
	} `json:"finding"`
}

// advisory is one reachable advisory in one binary.
type advisory struct {
	id, summary, module, found, fixed string
	symbols                           []string
}

func main() {
	tool := flag.String("govulncheck", "govulncheck", "the govulncheck binary")
	db := flag.String("db", "https://vuln.go.dev", "the vulnerability database, as govulncheck's -db")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "gate: name the binaries to scan")
		os.Exit(2)
	}
	failed := false
	for _, bin := range flag.Args() {
		fixable, unfixable, err := scan(*tool, *db, bin)
		if err != nil {
			fmt.Fprintf(os.Stderr, "gate: %s: %v\n", bin, err)
			os.Exit(1)
		}
		report(os.Stdout, bin, fixable, unfixable)
		failed = failed || len(fixable) > 0
	}
	if failed {
		os.Exit(1)
	}
}

// scan runs govulncheck over one binary and sorts its reachable advisories
// into those a newer module fixes and those none does.
func scan(tool, db, bin string) (fixable, unfixable []advisory, err error) {
	cmd := exec.Command(tool, "-mode", "binary", "-format", "json", "-db", db, bin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		// With -format json, govulncheck exits 0 whatever it finds.
		return nil, nil, fmt.Errorf("govulncheck: %v\n%s", err, stderr.Bytes())
	}
	return classify(out)
}

// classify reads govulncheck's JSON stream.
func classify(stream []byte) (fixable, unfixable []advisory, err error) {
	summaries := map[string]string{}
	byID := map[string]*advisory{} // by advisory and module
	var order []string
	dec := json.NewDecoder(bytes.NewReader(stream))
	for {
		var m message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("reading govulncheck's output: %w", err)
		}
		if m.OSV != nil {
			summaries[m.OSV.ID] = m.OSV.Summary
		}
		f := m.Finding
		if f == nil || len(f.Trace) == 0 || f.Trace[0].Function == "" {
			continue // a module or package the binary has, no vulnerable function in it
		}
		// One advisory may name several modules (the standard library and
		// golang.org/x/net's copy of HTTP/2, say): one line each.
		key := f.OSV + " " + f.Trace[0].Module
		a := byID[key]
		if a == nil {
			a = &advisory{id: f.OSV, module: f.Trace[0].Module, found: f.Trace[0].Version, fixed: f.FixedVersion}
			byID[key] = a
			order = append(order, key)
		}
		symbol := f.Trace[0].Package + "." + f.Trace[0].Function
		if f.Trace[0].Receiver != "" {
			symbol = f.Trace[0].Package + "." + strings.TrimPrefix(f.Trace[0].Receiver, "*") + "." + f.Trace[0].Function
		}
		if !slices.Contains(a.symbols, symbol) {
			a.symbols = append(a.symbols, symbol)
		}
	}
	slices.Sort(order)
	for _, key := range order {
		a := byID[key]
		a.summary = summaries[a.id]
		if a.fixed != "" {
			fixable = append(fixable, *a)
		} else {
			unfixable = append(unfixable, *a)
		}
	}
	return fixable, unfixable, nil
}

func report(w io.Writer, bin string, fixable, unfixable []advisory) {
	if len(fixable) == 0 {
		fmt.Fprintf(w, "gate: %s: no reachable vulnerability that a newer module fixes\n", bin)
	} else {
		fmt.Fprintf(w, "gate: %s: FAIL: %d reachable vulnerabilities in modules older than their fix:\n", bin, len(fixable))
		for _, a := range fixable {
			fmt.Fprintf(w, "  %s  %s@%s, fixed in %s: %s\n      reached: %s\n", a.id, a.module, a.found, a.fixed, a.summary, reached(a.symbols))
		}
	}
	if len(unfixable) > 0 {
		fmt.Fprintf(w, "gate: %s: %d reachable advisories with no fixed version (listed, not failed: no module version fixes them):\n", bin, len(unfixable))
		for _, a := range unfixable {
			fmt.Fprintf(w, "  %s  %s@%s: %s\n      reached: %s\n", a.id, a.module, a.found, a.summary, reached(a.symbols))
		}
	}
}

// reached names the first vulnerable functions the binary holds, sorted,
// and how many more (govulncheck -show traces gives the rest).
func reached(symbols []string) string {
	const shown = 4
	sorted := slices.Sorted(slices.Values(symbols))
	if len(sorted) <= shown {
		return strings.Join(sorted, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(sorted[:shown], ", "), len(sorted)-shown)
}
