// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package ha

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestClassify(t *testing.T) {
	cm := schema.GroupResource{Resource: "configmaps"}
	refused := &url.Error{Op: "Post", URL: "https://198.18.0.11:6443", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	for _, tc := range []struct {
		name string
		err  error
		want Outcome
	}{
		{"success", nil, Acked},
		{"conflict", apierrors.NewConflict(cm, "a", errors.New("modified")), Refused},
		{"already exists", apierrors.NewAlreadyExists(cm, "a"), Refused},
		{"too many requests", apierrors.NewTooManyRequests("later", 1), Refused},
		{"forbidden", apierrors.NewForbidden(cm, "a", errors.New("no")), Refused},
		{"connection refused by every server", fmt.Errorf("every apiserver refused the connection: %w", refused), Refused},
		{"timeout", apierrors.NewTimeoutError("etcd", 1), Unknown},
		{"internal error", apierrors.NewInternalError(errors.New("etcdserver: request timed out")), Unknown},
		{"service unavailable", apierrors.NewServiceUnavailable("shutting down"), Unknown},
		{"connection reset", &url.Error{Op: "Post", Err: syscall.ECONNRESET}, Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.err); got != tc.want {
				t.Errorf("Classify(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func acked(id, key string, rv int64) Attempt {
	return Attempt{ID: id, Key: key, Op: "update", Outcome: Acked, RV: rv}
}

func refusedAttempt(id, key string) Attempt {
	return Attempt{ID: id, Key: key, Op: "update", Outcome: Refused, Err: "conflict"}
}

func TestCheckHistory(t *testing.T) {
	history := []Version{{Key: "k", ID: "a1", Rev: 10}, {Key: "k", ID: "a2", Rev: 11}, {Key: "j", ID: "a3", Rev: 12}}
	for _, tc := range []struct {
		name     string
		attempts []Attempt
		want     []string // substrings, one per error
	}{
		{"every acknowledged write at its revision", []Attempt{acked("a1", "k", 10), acked("a2", "k", 11), acked("a3", "j", 12)}, nil},
		{"unknown outcomes need nothing", []Attempt{{ID: "a9", Key: "k", Outcome: Unknown}}, nil},
		{"acknowledged revision missing", []Attempt{acked("a4", "k", 13)}, []string{"LOST: update of k (attempt a4) acknowledged at revision 13, which etcd's history does not hold"}},
		{"another write at the acknowledged revision", []Attempt{acked("a4", "k", 11)}, []string{"where etcd holds k from attempt a2"}},
		{"another key at the acknowledged revision", []Attempt{acked("a3", "k", 12)}, []string{"where etcd holds j from attempt a3"}},
		{"a refused write stored", []Attempt{refusedAttempt("a2", "k")}, []string{"REFUSED BUT STORED: update of k (attempt a2)"}},
		{"a refused write not stored", []Attempt{refusedAttempt("a5", "k")}, nil},
		{"a stale update acknowledged", []Attempt{{ID: "a2", Key: "k", Op: "update", Outcome: Acked, RV: 11, Deliberate: true}}, []string{"STALE UPDATE ACCEPTED"}},
		{"a write a restore rolled back", []Attempt{{ID: "a4", Key: "k", Op: "update", Outcome: Acked, RV: 13, RolledBack: true}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, CheckHistory(tc.attempts, history), tc.want)
		})
	}
}

func TestUnknownApplied(t *testing.T) {
	history := []Version{{Key: "k", ID: "a1", Rev: 10}, {Key: "k", ID: "a2", Rev: 11}}
	attempts := []Attempt{
		{ID: "a1", Key: "k", Outcome: Unknown},
		{ID: "a2", Key: "k", Outcome: Acked, RV: 11},
		{ID: "a3", Key: "k", Outcome: Unknown},
	}
	if applied, unknown := UnknownApplied(attempts, history); applied != 1 || unknown != 2 {
		t.Errorf("UnknownApplied = %d of %d, want 1 of 2", applied, unknown)
	}
}

func TestCheckState(t *testing.T) {
	attempts := []Attempt{
		acked("a1", "k", 10),
		acked("a2", "k", 11),
		{ID: "a3", Key: "k", Op: "update", Outcome: Unknown},
		refusedAttempt("a4", "k"),
		acked("a5", "j", 12),
	}
	for _, tc := range []struct {
		name  string
		state map[string]Version
		want  []string
	}{
		{"the last acknowledged writes", map[string]Version{"k": {"k", "a2", 11}, "j": {"j", "a5", 12}}, nil},
		{"a later write whose outcome was unknown", map[string]Version{"k": {"k", "a3", 14}, "j": {"j", "a5", 12}}, nil},
		{"a key gone", map[string]Version{"k": {"k", "a2", 11}}, []string{"LOST: j is gone"}},
		{"an older write", map[string]Version{"k": {"k", "a1", 10}, "j": {"j", "a5", 12}}, []string{"STALE: k is at revision 10 (attempt a1)"}},
		{"another write at the acknowledged revision", map[string]Version{"k": {"k", "a3", 11}, "j": {"j", "a5", 12}}, []string{"LOST: k at revision 11 holds attempt a3, not the acknowledged a2"}},
		{"a refused write", map[string]Version{"k": {"k", "a4", 15}, "j": {"j", "a5", 12}}, []string{"REFUSED BUT STORED: k holds attempt a4"}},
		{"a write of another key", map[string]Version{"k": {"k", "a5", 15}, "j": {"j", "a5", 12}}, []string{`k holds "a5", which no attempt on it wrote`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, CheckState(attempts, tc.state), tc.want)
		})
	}
}

// After a restore from a snapshot, the key holds the last write before
// the snapshot: the writes the restore rolled back are not asked for, the
// ones before it still are.
func TestCheckStateAfterRestore(t *testing.T) {
	l := &Ledger{}
	for _, a := range []Attempt{acked("a1", "k", 10), acked("a2", "k", 20), acked("a3", "j", 21)} {
		l.record(a)
	}
	if n := l.Restored(15, 1_000_000_015); n != 2 {
		t.Errorf("Restored rolled back %d writes, want 2 (a2 and a3)", n)
	}
	if pending, from := l.Pending(); len(pending) != 0 || from != 1_000_000_016 {
		t.Errorf("after Restored, Pending = %v from %d; want none, from the restored revision on", pending, from)
	}
	expectErrors(t, CheckState(l.All(), map[string]Version{"k": {"k", "a1", 10}}), nil)
	expectErrors(t, CheckState(l.All(), map[string]Version{}), []string{"LOST: k is gone; attempt a1 was acknowledged at revision 10"})
}

func expectErrors(t *testing.T, errs []error, want []string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors %v, want %d: %q", len(errs), errs, len(want), want)
	}
	for i, e := range errs {
		if !strings.Contains(e.Error(), want[i]) {
			t.Errorf("error %d: %q, want it to contain %q", i, e, want[i])
		}
	}
}

func TestWindow(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	l := &Ledger{}
	for _, a := range []Attempt{
		{ID: "a1", When: at(0), Done: at(0.1), Outcome: Acked, RV: 1},
		{ID: "a2", When: at(1), Done: at(4), Outcome: Unknown, Err: "timeout"},
		{ID: "a3", When: at(2), Done: at(2.1), Outcome: Refused, Deliberate: true, Conflict: true, Err: "conflict"},
		{ID: "a4", When: at(5), Done: at(5.5), Outcome: Refused, Err: "refused"},
		{ID: "a5", When: at(6), Done: at(6.2), Outcome: Acked, RV: 2},
		{ID: "a6", When: at(20), Done: at(20.1), Outcome: Acked, RV: 3}, // after the window
	} {
		l.record(a)
	}
	l.readFailed(at(3), at(3.5))
	w := l.Window(at(0), at(10))
	if w.Writes != 5 || w.Acked != 2 || w.Refused != 2 || w.Deliberate != 1 || w.Unknown != 1 {
		t.Errorf("counts %+v", w)
	}
	if w.Failed != 3 { // a2, a4 and the read; a3's conflict was the point
		t.Errorf("failed %d, want 3", w.Failed)
	}
	if w.ErrorSeconds != 4.5 { // from a2 sent at 1 s to a4 answered at 5.5 s
		t.Errorf("error window %.2f s, want 4.5", w.ErrorSeconds)
	}
	if w.OutageSeconds != 3 { // a2 from 1 s to 4 s holds the read inside it; a4 is apart
		t.Errorf("longest outage %.2f s, want 3", w.OutageSeconds)
	}
	if d := w.StallSeconds - 6.1; d > 1e-9 || d < -1e-9 { // from a1 at 0.1 s to a5 at 6.2 s
		t.Errorf("longest stall %.2f s, want 6.1", w.StallSeconds)
	}
	if quiet := l.Window(at(7), at(10)); quiet.Failed != 0 || quiet.ErrorSeconds != 0 || quiet.StallSeconds != 3 {
		t.Errorf("a window without requests: %+v", quiet)
	}
}

func TestLongestOverlap(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	for _, tc := range []struct {
		spans [][2]float64
		want  float64
	}{
		{nil, 0},
		{[][2]float64{{1, 2}}, 1},
		{[][2]float64{{5, 6}, {1, 3}, {2, 4}}, 3},    // 1-3 and 2-4 overlap, unsorted
		{[][2]float64{{1, 10}, {2, 3}, {11, 12}}, 9}, // one inside another
		{[][2]float64{{1, 2}, {2, 3}, {3.5, 4}}, 2},  // touching spans join
		{[][2]float64{{0, 1}, {4, 9}, {5, 6}, {8, 9.5}}, 5.5},
	} {
		var spans []span
		for _, s := range tc.spans {
			spans = append(spans, span{at(s[0]), at(s[1])})
		}
		if got := longestOverlap(spans); got != tc.want {
			t.Errorf("longestOverlap(%v) = %.2f, want %.2f", tc.spans, got, tc.want)
		}
	}
}

func TestPending(t *testing.T) {
	l := &Ledger{}
	l.record(acked("a1", "k", 10))
	l.record(acked("a2", "k", 20))
	pending, from := l.Pending()
	if len(pending) != 2 || from != 10 {
		t.Fatalf("pending %d from %d, want 2 from 10", len(pending), from)
	}
	l.MarkChecked(len(pending))
	l.record(Attempt{ID: "a3", Key: "k", Outcome: Refused, Floor: 20})
	l.record(acked("a4", "k", 25))
	if pending, from = l.Pending(); len(pending) != 2 || from != 21 {
		t.Errorf("pending %d from %d, want 2 from 21 (after the refused write's floor)", len(pending), from)
	}
	l.MarkChecked(len(pending))
	if pending, from = l.Pending(); len(pending) != 0 || from != 26 {
		t.Errorf("nothing pending: got %d from %d, want 0 from 26", len(pending), from)
	}
}
