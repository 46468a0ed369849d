// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestPassesOf(t *testing.T) {
	for _, tc := range []struct {
		passes string
		want   []string
		err    bool
	}{
		{"parallel,serial", []string{"parallel:8", "serial:1"}, false},
		{"serial", []string{"serial:1"}, false},
		{"parallel", []string{"parallel:8"}, false},
		{"serial, parallel", []string{"serial:1", "parallel:8"}, false},
		{"", nil, true},
		{"disruptive", nil, true},
	} {
		got, err := passesOf(Options{Passes: tc.passes, Procs: 8})
		if (err != nil) != tc.err {
			t.Errorf("-passes %q: error %v", tc.passes, err)
			continue
		}
		var names []string
		for _, p := range got {
			names = append(names, fmt.Sprintf("%s:%d", p.name, p.procs))
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("-passes %q: %v, want %v", tc.passes, names, tc.want)
		}
	}
}

func TestCompareReleases(t *testing.T) {
	for _, c := range []struct {
		suite, server, wantErr string
	}{
		{"v1.36.5\n", "Kubernetes v1.36.5\n", ""},
		{"v1.37.2\n", "Kubernetes v1.37.2\n", ""},
		{"v1.36.5\n", "Kubernetes v1.37.2\n", "e2e.test is v1.36.5 but the control plane's binaries are v1.37.2"},
		{"v1.37.2\n", "Kubernetes v1.37.1\n", "e2e.test is v1.37.2 but the control plane's binaries are v1.37.1"},
		{"", "Kubernetes v1.37.2\n", "no release in e2e.test's"},
	} {
		err := compareReleases(c.suite, c.server, "bin")
		if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("compareReleases(%q, %q) = %v, want %q", c.suite, c.server, err, c.wantErr)
		}
	}
}
