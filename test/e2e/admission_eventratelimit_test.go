// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// testPolicyEventRateLimit spends the buckets of testdata/policy/eventratelimit.yaml
// (qps 1; bursts SourceAndObject 3, User 10, Namespace 20, Server 60) in that
// order. Every request asks each of the four buckets for a token, so a phase
// ends with the smallest bucket still in play running dry: a 429 that names
// that bucket's type and key, while a request with a different key, and
// requests that are not event writes, are still served.
func testPolicyEventRateLimit(t *testing.T, s *policyServers) {
	ctx := context.Background()
	admin := policyClient(t, s.on, "e2e-admin", "system:masters")
	users := map[string]kubernetes.Interface{}
	user := func(name string) kubernetes.Interface {
		if users[name] == nil {
			users[name] = policyClient(t, s.on, name, policyUsersGroup)
		}
		return users[name]
	}
	var namespaces []string
	for range 6 {
		namespaces = append(namespaces, policyNamespace(t, admin, nil))
	}
	n1 := namespaces[0]

	// Without the plugin, one user, namespace, source and object can write
	// more events than the Server bucket holds.
	t.Run("off", func(t *testing.T) {
		off := policyClient(t, s.off, "e2e-erl-u1", policyUsersGroup)
		for i := range 70 {
			if err := policyEvent(ctx, off, n1, "e2e-source", "object", false); err != nil {
				t.Fatalf("event %d without EventRateLimit: %v", i+1, err)
			}
		}
	})

	served := func(c kubernetes.Interface, ns string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-erl-"}}
		if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Errorf("configmap create after the limit: %v, want served", err)
		}
		if _, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			t.Errorf("event list after the limit: %v, want served", err)
		}
	}
	expectEvent := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v, want admitted", what, err)
		}
	}

	// SourceAndObject: one user, namespace, source and object.
	start := time.Now()
	accepted, msg := policyUntilLimited(t, 20, func(int) error {
		return policyEvent(ctx, user("e2e-erl-u1"), n1, "e2e-source", "object", false)
	})
	policyExpectLimit(t, msg, "SourceAndObject", "e2e-source"+"ConfigMap"+n1+"object"+"v1")
	if refill := int(math.Ceil(time.Since(start).Seconds())); accepted < 3 || accepted > 3+refill {
		t.Errorf("SourceAndObject: %d events accepted, want the burst of 3 (+ up to %d refilled)", accepted, refill)
	}
	expectEvent("same source, other object", policyEvent(ctx, user("e2e-erl-u1"), n1, "e2e-source", "other-object", false))
	expectEvent("other source, same object", policyEvent(ctx, user("e2e-erl-u1"), n1, "e2e-other-source", "object", false))
	served(user("e2e-erl-u1"), n1)

	// User: the same user, a new object each time.
	_, msg = policyUntilLimited(t, 30, func(i int) error {
		return policyEvent(ctx, user("e2e-erl-u1"), n1, "e2e-source", fmt.Sprintf("user-%d", i), false)
	})
	policyExpectLimit(t, msg, "User", "e2e-erl-u1")
	expectEvent("other user, same namespace", policyEvent(ctx, user("e2e-erl-u2"), n1, "e2e-source", "u2", false))
	served(user("e2e-erl-u1"), n1)

	// Namespace: n1, users taking turns so that none runs dry.
	_, msg = policyUntilLimited(t, 40, func(i int) error {
		return policyEvent(ctx, user(fmt.Sprintf("e2e-erl-ns-%d", i%5)), n1, "e2e-source", fmt.Sprintf("ns-%d", i), false)
	})
	policyExpectLimit(t, msg, "Namespace", n1)
	expectEvent("same user, other namespace", policyEvent(ctx, user("e2e-erl-ns-0"), namespaces[1], "e2e-source", "ns", false))
	served(user("e2e-erl-ns-0"), n1)
	// Dry-run requests store nothing, and upstream does not count them.
	expectEvent("dry-run in the exhausted namespace", policyEvent(ctx, user("e2e-erl-ns-0"), n1, "e2e-source", "dry", true))

	// Server: namespaces and users taking turns.
	_, msg = policyUntilLimited(t, 200, func(i int) error {
		return policyEvent(ctx, user(fmt.Sprintf("e2e-erl-server-%d", i%10)), namespaces[1+i%5], "e2e-source", fmt.Sprintf("server-%d", i), false)
	})
	policyExpectLimit(t, msg, "Server", "")
	err := policyEvent(ctx, user("e2e-erl-fresh"), namespaces[5], "e2e-fresh-source", "fresh", false)
	if !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "limit reached on type Server") {
		t.Errorf("fresh user, namespace and source after the Server limit: %v, want 429", err)
	}
	// Modifications count as well as creations.
	events, err := admin.CoreV1().Events(n1).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || len(events.Items) != 1 {
		t.Fatalf("listing events: %v", err)
	}
	updated := events.Items[0].DeepCopy()
	updated.Count++
	if _, err := admin.CoreV1().Events(n1).Update(ctx, updated, metav1.UpdateOptions{}); !apierrors.IsTooManyRequests(err) {
		t.Errorf("event update after the Server limit: %v, want 429", err)
	}
	// Upstream checks only the core API group's Event kind: the same events
	// written through events.k8s.io/v1 are not limited.
	now := metav1.NowMicro()
	newEvent := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-erl-"},
		EventTime:  now, ReportingController: "e2e.turnstile.dev/erl", ReportingInstance: "e2e",
		Action: "Test", Reason: "E2ERateLimit", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: n1, Name: "object"},
	}
	if _, err := admin.EventsV1().Events(n1).Create(ctx, newEvent, metav1.CreateOptions{}); err != nil {
		t.Errorf("events.k8s.io/v1 create after the Server limit: %v, want admitted (upstream limits only core/v1 Events)", err)
	}
	served(user("e2e-erl-fresh"), namespaces[5])
	served(admin, n1)
}

// policyUntilLimited calls send until it fails with 429 Too Many Requests
// and returns how many calls succeeded before and the 429's message.
func policyUntilLimited(t *testing.T, max int, send func(i int) error) (accepted int, message string) {
	t.Helper()
	for i := range max {
		err := send(i)
		switch {
		case err == nil:
			accepted++
		case apierrors.IsTooManyRequests(err):
			t.Logf("%d events accepted, then %v", accepted, err)
			return accepted, err.Error()
		default:
			t.Fatalf("event %d: %v, want admitted or 429", i+1, err)
		}
	}
	t.Fatalf("no 429 after %d events", max)
	return 0, ""
}

// policyExpectLimit checks a 429's message: the limit of type kind on key
// ran out, and no other.
func policyExpectLimit(t *testing.T, message, kind, key string) {
	t.Helper()
	want := "Too many requests: limit reached on type " + kind + " for key " + key
	if message != want {
		t.Errorf("429 says %q, want %q", message, want)
	}
}

// policyEvent writes an event from source about a ConfigMap named object.
func policyEvent(ctx context.Context, c kubernetes.Interface, ns, source, object string, dryRun bool) error {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: "e2e-erl-"},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: object},
		Reason:         "E2ERateLimit",
		Message:        "an event for the EventRateLimit test",
		Type:           corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: source},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
	}
	opts := metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err := c.CoreV1().Events(ns).Create(ctx, ev, opts)
	return err
}
