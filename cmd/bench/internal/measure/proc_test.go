// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package measure

import "testing"

func TestParseMachineTicks(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	busy, total, err := parseMachineTicks([]byte("cpu  100 5 50 800 20 3 2 10 7 0\ncpu0 50 2 25 400 10 1 1 5 3 0\n"))
	if err != nil || busy != 170 || total != 990 {
		t.Errorf("busy %v, total %v, %v; want 170 of 990 (idle and iowait not busy, guest already in user)", busy, total, err)
	}
	for _, bad := range []string{"", "intr 1 2 3\n", "cpu 1 2 3\n", "cpu 1 2 x 4 5 6 7 8\n"} {
		if _, _, err := parseMachineTicks([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
