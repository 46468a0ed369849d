// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import "testing"

func TestParsePolicyHeapSize(t *testing.T) {
	for in, want := range map[string]PolicyHeapSize{
		"5000/30000/1000": {5000, 30000, 1000},
		"0/0/1":           {0, 0, 1},
	} {
		if got, err := ParsePolicyHeapSize(in); err != nil || got != want {
			t.Errorf("ParsePolicyHeapSize(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "5000/30000", "5000/30000/0", "a/1/1", "-1/1/1", "1/1/1/1"} {
		if _, err := ParsePolicyHeapSize(bad); err == nil {
			t.Errorf("ParsePolicyHeapSize(%q) accepted it", bad)
		}
	}
}
