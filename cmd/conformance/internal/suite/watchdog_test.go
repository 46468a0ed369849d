// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The watchdog stops a hydrophone run whose conformance pod was evicted or
// deleted, after the grace; it leaves a running pod, and a run that ends by
// itself, alone.
func TestWatchdog(t *testing.T) {
	podPoll = 5 * time.Millisecond
	pod := func(phase corev1.PodPhase, reason string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: conformancePod, Namespace: conformanceNamespace},
			Status: corev1.PodStatus{Phase: phase, Reason: reason, Message: "The node was low on resource: ephemeral-storage."}}
	}
	tests := []struct {
		name   string
		pod    *corev1.Pod
		delete bool // the pod is deleted once the watchdog has seen it
		want   string
	}{
		{name: "evicted", pod: pod(corev1.PodFailed, "Evicted"), want: "the conformance pod conformance/e2e-conformance-test failed: Evicted The node was low on resource"},
		{name: "deleted", pod: pod(corev1.PodRunning, ""), delete: true, want: "the conformance pod conformance/e2e-conformance-test is gone"},
		{name: "running", pod: pod(corev1.PodRunning, "")},
		{name: "not yet created"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			if tt.pod != nil {
				if _, err := client.CoreV1().Pods(conformanceNamespace).Create(context.Background(), tt.pod, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			run, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			done := make(chan struct{})
			go func() { watchdog(run, cancel, client, 20*time.Millisecond); close(done) }()
			if tt.delete {
				time.Sleep(50 * time.Millisecond)
				if err := client.CoreV1().Pods(conformanceNamespace).Delete(context.Background(), conformancePod, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			// A watchdog that must stop the run gets all the time a loaded
			// machine needs (make test runs this beside other tiers, where
			// half a second was once too little); one that must not is
			// given half a second to prove it.
			wait := 500 * time.Millisecond
			if tt.want != "" {
				wait = 30 * time.Second
			}
			select {
			case <-done:
			case <-time.After(wait):
				cancel(nil) // what runHydrophone does when hydrophone ends
				<-done
			}
			cause := context.Cause(run)
			switch {
			case tt.want == "" && !errors.Is(cause, context.Canceled):
				t.Errorf("stopped the run: %v", cause)
			case tt.want != "" && (cause == nil || !strings.HasPrefix(cause.Error(), tt.want)):
				t.Errorf("cause %v, want %q", cause, tt.want)
			}
		})
	}
}
