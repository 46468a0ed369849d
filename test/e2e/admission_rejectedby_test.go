// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/admission/rejectedby"
)

// The audit event of a request that admission refused names the plugin that
// refused it and the phase, for upstream's plugins and ours; an admitted
// request carries neither annotation.
func TestAdmissionRefusalNamesThePlugin(t *testing.T) {
	t.Parallel() // its own apiserver: see "Running in parallel" in README.md
	ctx := context.Background()
	audit := filepath.Join(t.TempDir(), "audit.log")
	_, c := startServer(t, "rejected-by",
		"--enable-admission-plugins=SecurityContextDeny",
		"--audit-policy-file="+policyTestdata(t, "audit-policy.yaml"), "--audit-log-path="+audit)
	ns := createNamespace(t, c)

	if _, err := c.CoreV1().ConfigMaps("no-such-namespace").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "orphan"}}, metav1.CreateOptions{}); err == nil {
		t.Fatal("a configmap in a namespace that does not exist was admitted")
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, pausePod("ghost-account", "ghost"), metav1.CreateOptions{}); err == nil {
		t.Fatal("a pod of a service account that does not exist was admitted")
	}
	runsAsRoot := pausePod("runs-as-root", "")
	runsAsRoot.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, runsAsRoot, metav1.CreateOptions{}); err == nil {
		t.Fatal("SecurityContextDeny admitted a pod with runAsUser")
	}
	if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fine"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		resource, ns, name string
		plugin, phase      string // "" for an admitted request
	}{
		// The documents call NamespaceLifecycle validating; it implements Admit.
		{"configmaps", "no-such-namespace", "orphan", "NamespaceLifecycle", "mutating"},
		{"pods", ns, "ghost-account", "ServiceAccount", "mutating"},
		{"pods", ns, "runs-as-root", "SecurityContextDeny", "validating"},
		{"configmaps", ns, "fine", "", ""},
	} {
		e := policyAuditEvent(t, audit, "create", tc.resource, tc.ns, tc.name)
		if got := e.Annotations[rejectedby.PluginKey]; got != tc.plugin {
			t.Errorf("%s %s/%s: %s = %q, want %q (status %d)", tc.resource, tc.ns, tc.name, rejectedby.PluginKey, got, tc.plugin, e.ResponseStatus.Code)
		}
		if got := e.Annotations[rejectedby.PhaseKey]; got != tc.phase {
			t.Errorf("%s %s/%s: %s = %q, want %q", tc.resource, tc.ns, tc.name, rejectedby.PhaseKey, got, tc.phase)
		}
	}
}
