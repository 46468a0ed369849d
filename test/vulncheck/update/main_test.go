// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUpdate(t *testing.T) {
	vulndb, out := t.TempDir(), filepath.Join(t.TempDir(), "db")
	osv := filepath.Join(vulndb, "data", "osv")
	if err := os.MkdirAll(osv, 0o755); err != nil {
		t.Fatal(err)
	}
	entries := map[string]string{
		// Two ranges: the index gives the newest fix.
		"GO-2023-0001": `{"id":"GO-2023-0001","modified":"0001-01-01T00:00:00Z","aliases":["CVE-2023-1"],"affected":[{"package":{"name":"golang.org/x/net"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"0.9.0"},{"introduced":"0.10.0"},{"fixed":"0.17.0"}]}]}]}`,
		"GO-2023-0002": `{"id":"GO-2023-0002","modified":"0001-01-01T00:00:00Z","affected":[{"package":{"name":"stdlib"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"1.21.3"}]}]}]}`,
		// No module of ours: left out.
		"GO-2023-0003": `{"id":"GO-2023-0003","modified":"0001-01-01T00:00:00Z","affected":[{"package":{"name":"github.com/example/other"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"}]}]}]}`,
	}
	for id, e := range entries {
		if err := os.WriteFile(filepath.Join(osv, id+".json"), []byte(e), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	modules := filepath.Join(vulndb, "modules.txt")
	if err := os.WriteFile(modules, []byte("golang.org/x/net\nk8s.io/api\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(vulndb, modules, "2026-11-05T23:49:57Z", out); err != nil {
		t.Fatal(err)
	}
	ids, _ := filepath.Glob(filepath.Join(out, "ID", "*.json"))
	if len(ids) != 2 {
		t.Errorf("entries %q, want GO-2023-0001 and GO-2023-0002", ids)
	}
	data, err := os.ReadFile(filepath.Join(out, "index", "modules.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"path":"golang.org/x/net","vulns":[{"id":"GO-2023-0001","modified":"2026-11-05T23:49:57Z","fixed":"0.17.0"}]},{"path":"stdlib","vulns":[{"id":"GO-2023-0002","modified":"2026-11-05T23:49:57Z","fixed":"1.21.3"}]}]`
	if string(data) != want {
		t.Errorf("modules.json\n%s\nwant\n%s", data, want)
	}
	entry, err := os.ReadFile(filepath.Join(out, "ID", "GO-2023-0001.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e map[string]any
	if err := json.Unmarshal(entry, &e); err != nil || e["modified"] != "2026-11-05T23:49:57Z" || e["aliases"] == nil {
		t.Errorf("the entry, with its modified time set and the rest kept: %s (%v)", entry, err)
	}
	if err := run(t.TempDir(), modules, "2026-11-05T23:49:57Z", out); err == nil || !strings.Contains(err.Error(), "not the golang.org/x/vulndb module") {
		t.Errorf("from a directory without entries: %v", err)
	}
}
