// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import "testing"

func TestParsePolicyHeapSize(t *testing.T) {
	for in, want := range map[string]policyHeapSize{
		"5000/30000/1000": {5000, 30000, 1000},
		"0/0/1":           {0, 0, 1},
	} {
		if got, err := parsePolicyHeapSize(in); err != nil || got != want {
			t.Errorf("parsePolicyHeapSize(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "5000/30000", "5000/30000/0", "a/1/1", "-1/1/1", "1/1/1/1"} {
		if _, err := parsePolicyHeapSize(bad); err == nil {
			t.Errorf("parsePolicyHeapSize(%q) accepted it", bad)
		}
	}
}
