// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package ha

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Outcome is what the server told the client about a write.
type Outcome int

const (
	// Acked: the server answered 2xx with the object it stored.
	Acked Outcome = iota
	// Refused: the server answered that it did not apply the write (a
	// conflict, an invalid object, too many requests), or no server took
	// the connection. The write must never appear.
	Refused
	// Unknown: a timeout, a 5xx, a connection lost mid-request. The write
	// may or may not have been applied; either is correct.
	Unknown
)

func (o Outcome) String() string {
	return [...]string{"acknowledged", "refused", "unknown"}[o]
}

// Attempt is one write the load sent, with what it learnt.
type Attempt struct {
	// ID is written into the object, so that the object's content names the
	// attempt that wrote it.
	ID  string
	Key string // the ConfigMap's name
	Op  string // create or update
	// When the request was sent and when its answer (or error) came.
	When, Done time.Time
	// Outcome, and for Acked the resourceVersion the server returned.
	Outcome Outcome
	RV      int64
	// Floor is the highest acknowledged revision when the attempt started:
	// anything the attempt wrote is stored after it.
	Floor int64
	// Deliberate marks an update sent with a stale resourceVersion on
	// purpose, which the server must refuse.
	Deliberate bool
	// Conflict: the server refused the write with 409 Conflict.
	Conflict bool
	Err      string
	// RolledBack marks an acknowledged write that a restore of etcd from
	// an earlier snapshot took back (Ledger.Restored): gone, as expected,
	// and no longer checked.
	RolledBack bool
}

// Failed reports whether the attempt counts against the error window: a
// write that did not succeed, unless refusing it was the point.
func (a Attempt) Failed() bool {
	return a.Outcome != Acked && !(a.Deliberate && a.Conflict)
}

// Classify sorts a client-go error into an outcome.
func Classify(err error) Outcome {
	switch {
	case err == nil:
		return Acked
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err), apierrors.IsInvalid(err),
		apierrors.IsBadRequest(err), apierrors.IsForbidden(err), apierrors.IsNotFound(err),
		apierrors.IsTooManyRequests(err), apierrors.IsUnauthorized(err):
		return Refused
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused
	default:
		return Unknown
	}
}

// Ledger records every write attempt and every read error of a load, and
// what has been checked against etcd's history.
type Ledger struct {
	mu       sync.Mutex
	attempts []Attempt
	reads    []span // failed reads the load needed
	checked  int    // attempts[:checked] have been checked
	maxAcked atomic.Int64
}

func (l *Ledger) record(a Attempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts = append(l.attempts, a)
	if a.Outcome == Acked {
		for {
			cur := l.maxAcked.Load()
			if a.RV <= cur || l.maxAcked.CompareAndSwap(cur, a.RV) {
				break
			}
		}
	}
}

// span is when a request was sent and when it ended.
type span struct{ from, to time.Time }

func (l *Ledger) readFailed(from, to time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads = append(l.reads, span{from, to})
}

// Window summarises the load between two instants.
type Window struct {
	Writes, Acked, Refused, Unknown int
	// Deliberate counts the refusals of deliberately stale updates.
	Deliberate int
	// Failed counts writes and reads that did not succeed (deliberate
	// refusals excepted); ErrorSeconds is the time from the sending of the
	// first of them to the end of the last, zero when none failed.
	Failed       int
	ErrorSeconds float64
	// OutageSeconds is the longest stretch in which failing requests
	// overlap: one incident, where the error window spans them all.
	OutageSeconds float64
	// StallSeconds is the longest time in the window in which no write was
	// acknowledged: requests that hang fail nothing until they time out,
	// but the load sees them.
	StallSeconds float64
	// FirstErrors are the first failures, each with when it was sent
	// (from the window's start) and how long it took to fail.
	FirstErrors []string
}

// Window summarises the requests sent in [from, to).
func (l *Ledger) Window(from, to time.Time) Window {
	l.mu.Lock()
	defer l.mu.Unlock()
	var w Window
	var first, last time.Time
	var failures []span
	fail := func(s span, msg string) {
		w.Failed++
		failures = append(failures, s)
		if first.IsZero() || s.from.Before(first) {
			first = s.from
		}
		if s.to.After(last) {
			last = s.to
		}
		if len(w.FirstErrors) < 10 && msg != "" {
			w.FirstErrors = append(w.FirstErrors, fmt.Sprintf("at +%.1f s, for %.1f s: %s", s.from.Sub(from).Seconds(), s.to.Sub(s.from).Seconds(), msg))
		}
	}
	var acked []time.Time
	for _, a := range l.attempts {
		if a.Outcome == Acked && !a.Done.Before(from) && a.Done.Before(to) {
			acked = append(acked, a.Done)
		}
		if a.When.Before(from) || !a.When.Before(to) {
			continue
		}
		w.Writes++
		switch a.Outcome {
		case Acked:
			w.Acked++
		case Refused:
			w.Refused++
			if !a.Failed() {
				w.Deliberate++
			}
		case Unknown:
			w.Unknown++
		}
		if a.Failed() {
			fail(span{a.When, a.Done}, fmt.Sprintf("%s %s: %s", a.Op, a.Key, a.Err))
		}
	}
	for _, r := range l.reads {
		if !r.from.Before(from) && r.from.Before(to) {
			fail(r, "")
		}
	}
	if w.Failed > 0 {
		w.ErrorSeconds = last.Sub(first).Seconds()
		w.OutageSeconds = longestOverlap(failures)
	}
	slices.SortFunc(acked, time.Time.Compare)
	prev := from
	for _, t := range append(acked, to) {
		w.StallSeconds = max(w.StallSeconds, t.Sub(prev).Seconds())
		prev = t
	}
	return w
}

// longestOverlap is the longest stretch of time that overlapping spans
// cover.
func longestOverlap(spans []span) float64 {
	slices.SortFunc(spans, func(a, b span) int { return a.from.Compare(b.from) })
	var longest float64
	var cur span
	for i, s := range spans {
		if i == 0 || s.from.After(cur.to) {
			cur = s
		} else if s.to.After(cur.to) {
			cur.to = s.to
		}
		longest = max(longest, cur.to.Sub(cur.from).Seconds())
	}
	return longest
}

// Version is one stored version of an object, from etcd's history.
type Version struct {
	Key, ID string
	Rev     int64
}

// Pending returns the attempts not yet checked and the lowest revision
// their checks need from etcd's history.
func (l *Ledger) Pending() (attempts []Attempt, from int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	attempts = slices.Clone(l.attempts[l.checked:])
	from = l.maxAcked.Load() + 1
	for _, a := range attempts {
		switch a.Outcome {
		case Acked:
			from = min(from, a.RV)
		case Refused:
			from = min(from, a.Floor+1)
		}
	}
	return attempts, from
}

// Restored records that etcd was restored from a snapshot of revision
// snapshot and stands at revision now (etcdutl's --bump-revision above
// it). The acknowledged writes after the snapshot are gone, as a restore
// means: they are marked RolledBack and counted, not lost. Every attempt so
// far counts as checked, since etcd's history before now is compacted.
// Call it while the load is held, after a Checkpoint that checked every
// write up to the snapshot. It returns how many writes were rolled back.
func (l *Ledger) Restored(snapshot, now int64) (rolledBack int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.attempts {
		if a := &l.attempts[i]; a.Outcome == Acked && a.RV > snapshot {
			a.RolledBack = true
			rolledBack++
		}
	}
	l.checked = len(l.attempts)
	l.maxAcked.Store(now)
	return rolledBack
}

// All returns every attempt recorded so far.
func (l *Ledger) All() []Attempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.attempts)
}

// MarkChecked records that the first n pending attempts were checked.
func (l *Ledger) MarkChecked(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checked += n
}

// CheckHistory checks attempts against history, every version stored
// since the revision Pending returned: each acknowledged write is stored at
// its revision with its content, and no refused write appears at all.
func CheckHistory(attempts []Attempt, history []Version) []error {
	at := map[int64]Version{}
	written := map[string]bool{}
	for _, v := range history {
		at[v.Rev] = v
		written[v.ID] = true
	}
	var errs []error
	for _, a := range attempts {
		switch {
		case a.RolledBack:
		case a.Outcome == Acked:
			v, ok := at[a.RV]
			switch {
			case a.Deliberate:
				errs = append(errs, fmt.Errorf("STALE UPDATE ACCEPTED: update of %s (attempt %s) carried an old resourceVersion and was acknowledged at revision %d", a.Key, a.ID, a.RV))
			case !ok:
				errs = append(errs, fmt.Errorf("LOST: %s of %s (attempt %s) acknowledged at revision %d, which etcd's history does not hold", a.Op, a.Key, a.ID, a.RV))
			case v.Key != a.Key || v.ID != a.ID:
				errs = append(errs, fmt.Errorf("LOST: %s of %s (attempt %s) acknowledged at revision %d, where etcd holds %s from attempt %s", a.Op, a.Key, a.ID, a.RV, v.Key, v.ID))
			}
		case a.Outcome == Refused:
			if written[a.ID] {
				errs = append(errs, fmt.Errorf("REFUSED BUT STORED: %s of %s (attempt %s), refused with %q, is in etcd's history", a.Op, a.Key, a.ID, a.Err))
			}
		}
	}
	return errs
}

// UnknownApplied counts the attempts with an unknown outcome and those of
// them that history holds: a timeout does not say whether the write
// happened, etcd's history does.
func UnknownApplied(attempts []Attempt, history []Version) (applied, unknown int) {
	written := map[string]bool{}
	for _, v := range history {
		written[v.ID] = true
	}
	for _, a := range attempts {
		if a.Outcome == Unknown {
			unknown++
			if written[a.ID] {
				applied++
			}
		}
	}
	return applied, unknown
}

// CheckState checks objects read back through one apiserver: each key the
// load acknowledged a write for holds that write or a later attempt on the
// same key, never an older one.
func CheckState(attempts []Attempt, objects map[string]Version) []error {
	lastAcked := map[string]Attempt{}
	byID := map[string]Attempt{}
	for _, a := range attempts {
		byID[a.ID] = a
		if a.Outcome == Acked && !a.RolledBack && a.RV > lastAcked[a.Key].RV {
			lastAcked[a.Key] = a
		}
	}
	var errs []error
	for key, a := range lastAcked {
		got, ok := objects[key]
		if !ok {
			errs = append(errs, fmt.Errorf("LOST: %s is gone; attempt %s was acknowledged at revision %d", key, a.ID, a.RV))
			continue
		}
		writer, known := byID[got.ID]
		switch {
		case !known || writer.Key != key:
			errs = append(errs, fmt.Errorf("%s holds %q, which no attempt on it wrote", key, got.ID))
		case got.Rev < a.RV:
			errs = append(errs, fmt.Errorf("STALE: %s is at revision %d (attempt %s), older than acknowledged revision %d (attempt %s)", key, got.Rev, got.ID, a.RV, a.ID))
		case got.Rev == a.RV && got.ID != a.ID:
			errs = append(errs, fmt.Errorf("LOST: %s at revision %d holds attempt %s, not the acknowledged %s", key, got.Rev, got.ID, a.ID))
		case writer.Outcome == Refused:
			errs = append(errs, fmt.Errorf("REFUSED BUT STORED: %s holds attempt %s, which was refused with %q", key, got.ID, writer.Err))
		}
	}
	return errs
}

// Load writes ConfigMaps in one namespace through its clients from
// several workers, each owning its keys, and records every
// attempt in a Ledger. Workers create keys, update them with the
// resourceVersion they last saw, and now and then send an update with a
// stale resourceVersion that the server must refuse.
type Load struct {
	// Clients are the load's clients; worker w sends through
	// Clients[w % len(Clients)].
	Clients   []kubernetes.Interface
	Namespace string
	Workers   int
	// Pause is each worker's pause between writes.
	Pause  time.Duration
	Ledger *Ledger

	ids atomic.Int64
	// gate is held for reading by every request the workers send, so
	// that Hold can stop the load between requests.
	gate sync.RWMutex
	// restores counts Restored's calls: a worker that sees it change
	// forgets what it knew of its keys.
	restores atomic.Int64
}

// Hold runs f while no write is in flight and none starts: the ledger then
// holds the outcome of every write, and the stored state is still.
func (l *Load) Hold(f func()) {
	l.gate.Lock()
	defer l.gate.Unlock()
	f()
}

// Restored records in the ledger that etcd was restored from a snapshot
// (Ledger.Restored), with the load held, and makes every worker read its
// keys again before it writes them: a resourceVersion it took for stale
// may be the current one again, and one it took for current may be gone.
func (l *Load) Restored(snapshot, now int64) (rolledBack int) {
	l.Hold(func() {
		rolledBack = l.Ledger.Restored(snapshot, now)
		l.restores.Add(1)
	})
	return rolledBack
}

// AttemptKey is the data key that holds an attempt's ID.
const AttemptKey = "attempt"

// Run writes until ctx ends.
func (l *Load) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for w := range l.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.worker(ctx, w)
		}()
	}
	wg.Wait()
}

type key struct {
	name string
	rv   string // the resourceVersion last seen; empty when unknown
	old  string // an earlier resourceVersion, for deliberate conflicts
}

func (l *Load) client(w int) kubernetes.Interface { return l.Clients[w%len(l.Clients)] }

// worker is one worker's state: its keys, how many it created, and the
// restores it has seen.
type worker struct {
	w        int
	rng      *rand.Rand
	keys     []*key
	created  int
	restores int64
}

func (l *Load) worker(ctx context.Context, w int) {
	s := &worker{w: w, rng: rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))}
	for ctx.Err() == nil {
		l.gate.RLock()
		l.step(ctx, s)
		l.gate.RUnlock()
		pause(ctx, l.Pause)
	}
}

// step sends one write (and, when needed, the read before it). A write
// cut short by ctx is recorded too, as unknown: it may have been applied.
func (l *Load) step(ctx context.Context, s *worker) {
	if n := l.restores.Load(); n != s.restores {
		s.restores = n
		for _, k := range s.keys {
			k.rv, k.old = "", ""
		}
	}
	w, rng := s.w, s.rng
	if len(s.keys) < 8 || rng.IntN(10) == 0 {
		k := &key{name: fmt.Sprintf("w%d-%d", w, s.created)}
		s.created++
		a := l.attempt(k.name, "create")
		obj, err := l.client(w).CoreV1().ConfigMaps(l.Namespace).Create(ctx, l.configMap(k.name, a.ID, ""), metav1.CreateOptions{})
		l.finish(a, obj, err)
		switch a.Outcome {
		case Acked:
			k.rv = obj.ResourceVersion
			s.keys = append(s.keys, k)
		case Unknown:
			s.keys = append(s.keys, k) // read it back later to learn
		}
		return
	}
	i := rng.IntN(len(s.keys))
	k := s.keys[i]
	if k.rv == "" {
		switch l.refresh(ctx, w, k) {
		case gone:
			s.keys = slices.Delete(s.keys, i, i+1)
			return
		case unread:
			return
		}
	}
	a := l.attempt(k.name, "update")
	rv := k.rv
	if k.old != "" && rng.IntN(10) == 0 {
		a.Deliberate, rv = true, k.old
	}
	obj, err := l.client(w).CoreV1().ConfigMaps(l.Namespace).Update(ctx, l.configMap(k.name, a.ID, rv), metav1.UpdateOptions{})
	l.finish(a, obj, err)
	switch {
	case a.Outcome == Acked:
		k.old, k.rv = k.rv, obj.ResourceVersion
	case a.Outcome == Unknown, a.Outcome == Refused && !a.Deliberate:
		// A worker owns its keys, so only a restore of etcd moves one
		// under it (or removes it): read it again.
		k.rv = ""
	}
}

type refreshed int

const (
	read refreshed = iota
	unread
	gone // the create whose outcome was unknown did not happen
)

// refresh reads a key whose last write had an unknown outcome.
func (l *Load) refresh(ctx context.Context, w int, k *key) refreshed {
	began := time.Now()
	obj, err := l.client(w).CoreV1().ConfigMaps(l.Namespace).Get(ctx, k.name, metav1.GetOptions{})
	switch {
	case ctx.Err() != nil:
		return unread
	case apierrors.IsNotFound(err):
		return gone
	case err != nil:
		l.Ledger.readFailed(began, time.Now())
		return unread
	}
	k.old, k.rv = "", obj.ResourceVersion
	return read
}

func (l *Load) attempt(key, op string) *Attempt {
	return &Attempt{
		ID:    "a" + strconv.FormatInt(l.ids.Add(1), 10),
		Key:   key,
		Op:    op,
		When:  time.Now(),
		Floor: l.Ledger.maxAcked.Load(),
	}
}

func (l *Load) finish(a *Attempt, obj *corev1.ConfigMap, err error) {
	a.Done = time.Now()
	a.Outcome, a.Conflict = Classify(err), apierrors.IsConflict(err)
	if err != nil {
		a.Err = err.Error()
	}
	if a.Outcome == Acked {
		rv, perr := strconv.ParseInt(obj.ResourceVersion, 10, 64)
		if perr != nil {
			a.Outcome, a.Err = Unknown, fmt.Sprintf("acknowledged with resourceVersion %q: %v", obj.ResourceVersion, perr)
		}
		a.RV = rv
	}
	l.Ledger.record(*a)
}

func (l *Load) configMap(name, id, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l.Namespace, ResourceVersion: rv},
		Data:       map[string]string{AttemptKey: id},
	}
}

func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
