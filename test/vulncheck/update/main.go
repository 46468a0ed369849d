// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command update writes the vulnerability database that make vulncheck
// reads, test/vulncheck/vulndb, from the OSV entries of the Go
// vulnerability database's own repository (golang.org/x/vulndb, whose
// module the Go module proxy serves, at the version the Makefile pins):
// those that affect a module of one of Turnstile's build graphs (the
// module paths -modules lists), the standard library or the toolchain.
//
// It writes the database's v1 layout, which govulncheck reads with
// -db file://DIR: ID/<id>.json for each entry, index/db.json (when it was
// last modified), index/modules.json (each module's advisories, with the
// newest fixed version) and index/vulns.json (each advisory's aliases).
// x/vulndb's files carry no modified time (its deployment sets it); each
// entry gets -modified, the pinned version's time.
//
//	make vulndb-update VULNDB_VERSION=v0.0.0-...
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/semver"
)

// entry is the part of an OSV entry the indexes need; the entry itself is
// written as it is.
type entry struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Aliases  []string  `json:"aliases,omitempty"`
	Affected []struct {
		Package struct {
			Name string `json:"name"`
		} `json:"package"`
		Ranges []osvRange `json:"ranges"`
	} `json:"affected"`
}

type osvRange struct {
	Type   string `json:"type"`
	Events []struct {
		Introduced string `json:"introduced,omitempty"`
		Fixed      string `json:"fixed,omitempty"`
	} `json:"events"`
}

type moduleVuln struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Fixed    string    `json:"fixed,omitempty"`
}

type moduleMeta struct {
	Path  string       `json:"path"`
	Vulns []moduleVuln `json:"vulns"`
}

type vulnMeta struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Aliases  []string  `json:"aliases,omitempty"`
}

func main() {
	vulndb := flag.String("vulndb", "", "the golang.org/x/vulndb module's directory (go mod download -json golang.org/x/vulndb@VERSION)")
	modulesFile := flag.String("modules", "", "a file of the module paths to keep advisories of, one a line")
	modified := flag.String("modified", "", "the entries' modified time, RFC 3339 (the pinned version's time)")
	out := flag.String("out", "test/vulncheck/vulndb", "the database's directory, replaced")
	flag.Parse()
	if err := run(*vulndb, *modulesFile, *modified, *out); err != nil {
		fmt.Fprintf(os.Stderr, "update: %v\n", err)
		os.Exit(1)
	}
}

func run(vulndb, modulesFile, modified, out string) error {
	if vulndb == "" || modulesFile == "" || modified == "" {
		return errors.New("-vulndb, -modules and -modified are required")
	}
	when, err := time.Parse(time.RFC3339, modified)
	if err != nil {
		return fmt.Errorf("-modified: %w", err)
	}
	data, err := os.ReadFile(modulesFile)
	if err != nil {
		return err
	}
	keep := map[string]bool{"stdlib": true, "toolchain": true}
	for _, m := range strings.Fields(string(data)) {
		keep[m] = true
	}
	files, err := filepath.Glob(filepath.Join(vulndb, "data", "osv", "GO-*.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("%s has no data/osv/GO-*.json: not the golang.org/x/vulndb module", vulndb)
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	for _, dir := range []string{"ID", "index"} {
		if err := os.MkdirAll(filepath.Join(out, dir), 0o755); err != nil {
			return err
		}
	}
	modules := map[string]*moduleMeta{}
	var vulns []vulnMeta
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		var e entry
		if err := json.Unmarshal(raw, &e); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		var affects []int
		for i, a := range e.Affected {
			if keep[a.Package.Name] {
				affects = append(affects, i)
			}
		}
		if len(affects) == 0 {
			continue
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		doc["modified"] = when
		entryJSON, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, "ID", e.ID+".json"), entryJSON, 0o644); err != nil {
			return err
		}
		vulns = append(vulns, vulnMeta{ID: e.ID, Modified: when, Aliases: e.Aliases})
		for _, i := range affects {
			a := e.Affected[i]
			m := modules[a.Package.Name]
			if m == nil {
				m = &moduleMeta{Path: a.Package.Name}
				modules[a.Package.Name] = m
			}
			m.Vulns = append(m.Vulns, moduleVuln{ID: e.ID, Modified: when, Fixed: newestFixed(a.Ranges)})
		}
	}
	var index []*moduleMeta
	for _, m := range modules {
		slices.SortFunc(m.Vulns, func(a, b moduleVuln) int { return strings.Compare(a.ID, b.ID) })
		index = append(index, m)
	}
	slices.SortFunc(index, func(a, b *moduleMeta) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(vulns, func(a, b vulnMeta) int { return strings.Compare(a.ID, b.ID) })
	for name, v := range map[string]any{"db.json": map[string]time.Time{"modified": when}, "modules.json": index, "vulns.json": vulns} {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, "index", name), data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("update: %d advisories of %d modules (of %d in the graphs, with stdlib and toolchain) from %d entries, into %s\n",
		len(vulns), len(modules), len(keep), len(files), out)
	return nil
}

// newestFixed is the highest fixed version of the SEMVER ranges, as the
// index gives it: the version that fixes every range.
func newestFixed(ranges []osvRange) string {
	var newest string
	for _, r := range ranges {
		if r.Type != "SEMVER" {
			continue
		}
		for _, ev := range r.Events {
			if ev.Fixed != "" && (newest == "" || semver.Compare("v"+newest, "v"+ev.Fixed) < 0) {
				newest = ev.Fixed
			}
		}
	}
	return newest
}
