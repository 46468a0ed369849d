// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "plot.json")
	out := filepath.Join(dir, "scale.png")
	figure := `{"title": "t", "panels": [
	  {"title": "pod create p99", "x": "pods", "y": "ms", "series": [
	    {"name": "turnstile", "points": [[3000, 10], [10000, 12], [30000, 15]]},
	    {"name": "upstream", "points": [[3000, 9], [10000, 11]]}]},
	  {"title": "memory", "x": "pods", "y": "MiB", "series": [{"name": "turnstile", "points": [[3000, 500]]}]},
	  {"title": "list nodes p99", "x": "pods", "y": "ms", "series": [{"name": "turnstile", "points": [[3000, 5]]}]},
	  {"title": "a fourth panel starts a second row", "x": "pods", "y": "ms", "series": [{"name": "turnstile", "points": [[3000, 5]]}]}]}`
	if err := os.WriteFile(in, []byte(figure), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(in, out); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() <= b.Dy() {
		t.Errorf("a 3-column, 2-row grid should be wider than tall: %v", b)
	}

	for _, tc := range []struct{ figure, err string }{
		{`{"panels": []}`, "no panels"},
		{`{"panels": [{"title": "p", "series": [{"name": "s", "points": [[0, 1]]}]}]}`, `panel "p": series "s": x 0 is not positive`},
		{`not json`, "plot.json: invalid character"},
	} {
		if err := os.WriteFile(in, []byte(tc.figure), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := run(in, out); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: got %v, want an error containing %q", tc.figure, err, tc.err)
		}
	}
}
