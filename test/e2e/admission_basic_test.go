// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// testPolicyNamespaceLifecycle: no new objects in a Terminating namespace (one
// stays Terminating here, with its "kubernetes" finalizer, because no
// namespace controller runs), none in a namespace that does not exist, and
// default, kube-system and kube-public cannot be deleted. Without the plugin
// all of these go through.
func testPolicyNamespaceLifecycle(t *testing.T, s *policyServers) {
	ctx := context.Background()
	on := policyClient(t, s.on, "e2e-admin", "system:masters")
	off := policyClient(t, s.off, "e2e-admin", "system:masters")
	configMap := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}
	}

	t.Run("terminating", func(t *testing.T) {
		ns := policyNamespace(t, on, nil)
		if _, err := on.CoreV1().ConfigMaps(ns).Create(ctx, configMap("before"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := on.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := on.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase != corev1.NamespaceTerminating || !slices.Contains(got.Spec.Finalizers, corev1.FinalizerKubernetes) {
			t.Fatalf("namespace after delete: phase %s, finalizers %v; want Terminating with the kubernetes finalizer", got.Status.Phase, got.Spec.Finalizers)
		}

		_, err = on.CoreV1().ConfigMaps(ns).Create(ctx, configMap("after"), metav1.CreateOptions{})
		var status apierrors.APIStatus
		if !apierrors.IsForbidden(err) ||
			!strings.Contains(err.Error(), `configmaps "after" is forbidden: unable to create new content in namespace `+ns+` because it is being terminated`) {
			t.Errorf("create in a terminating namespace: %v, want 403", err)
		} else if status, _ = err.(apierrors.APIStatus); !slices.ContainsFunc(status.Status().Details.Causes, func(c metav1.StatusCause) bool {
			return c.Type == corev1.NamespaceTerminatingCause
		}) {
			t.Errorf("create in a terminating namespace: causes %+v, want %s", status.Status().Details.Causes, corev1.NamespaceTerminatingCause)
		}
		// Only creation is refused: what is there may still change.
		if _, err := on.CoreV1().ConfigMaps(ns).Patch(ctx, "before", types.MergePatchType, []byte(`{"data":{"k":"changed"}}`), metav1.PatchOptions{}); err != nil {
			t.Errorf("update in a terminating namespace: %v, want admitted", err)
		}
		if _, err := off.CoreV1().ConfigMaps(ns).Create(ctx, configMap("after"), metav1.CreateOptions{}); err != nil {
			t.Errorf("create in a terminating namespace without NamespaceLifecycle: %v, want admitted", err)
		}
	})

	t.Run("missing", func(t *testing.T) {
		const ns = "e2e-policy-no-such-namespace"
		_, err := on.CoreV1().ConfigMaps(ns).Create(ctx, configMap("orphan"), metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `namespaces "`+ns+`" not found`) {
			t.Errorf("create in a missing namespace: %v, want 404 for the namespace", err)
		}
		if _, err := off.CoreV1().ConfigMaps(ns).Create(ctx, configMap("orphan"), metav1.CreateOptions{}); err != nil {
			t.Errorf("create in a missing namespace without NamespaceLifecycle: %v, want admitted", err)
		}
		if _, err := on.CoreV1().ConfigMaps(ns).Get(ctx, "orphan", metav1.GetOptions{}); err != nil {
			t.Errorf("reading the orphan back: %v", err)
		}
	})

	t.Run("immortal", func(t *testing.T) {
		dryRun := metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
		for _, ns := range []string{"default", "kube-system", "kube-public"} {
			for _, opts := range []metav1.DeleteOptions{dryRun, {}} {
				err := on.CoreV1().Namespaces().Delete(ctx, ns, opts)
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `namespaces "`+ns+`" is forbidden: this namespace may not be deleted`) {
					t.Errorf("delete %s (dryRun %v): %v, want 403", ns, opts.DryRun, err)
				}
			}
			// Dry run: admission runs, nothing is deleted.
			if err := off.CoreV1().Namespaces().Delete(ctx, ns, dryRun); err != nil {
				t.Errorf("dry-run delete %s without NamespaceLifecycle: %v, want admitted", ns, err)
			}
			if got, err := on.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
				t.Errorf("%s after the deletes: %v", ns, err)
			} else if got.DeletionTimestamp != nil {
				t.Errorf("%s after the deletes: deletionTimestamp %v, want it untouched", ns, got.DeletionTimestamp)
			}
		}
		// Only those three: kube-node-lease may go.
		if err := on.CoreV1().Namespaces().Delete(ctx, "kube-node-lease", dryRun); err != nil {
			t.Errorf("dry-run delete kube-node-lease: %v, want admitted", err)
		}
	})
}

// testPolicyAlwaysAdmit: the plugin runs (its admission metrics count the
// requests, never a rejection) and changes nothing: objects are stored as
// sent, and what other plugins refuse stays refused.
func testPolicyAlwaysAdmit(t *testing.T, s *policyServers) {
	ctx := context.Background()
	on := policyClient(t, s.on, "e2e-admin", "system:masters")
	off := policyClient(t, s.off, "e2e-admin", "system:masters")
	ns := policyNamespace(t, on, nil)
	series := func(typ, rejected string) map[string]string {
		return map[string]string{"name": "AlwaysAdmit", "operation": "CREATE", "type": typ, "rejected": rejected}
	}
	admitBefore := policyAdmissionCount(t, s.on, series("admit", "false"))
	validateBefore := policyAdmissionCount(t, s.on, series("validate", "false"))

	sent := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "as-sent", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}},
		Data:       map[string]string{"k": "v"},
	}
	if _, err := on.CoreV1().ConfigMaps(ns).Create(ctx, sent, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	stored, err := off.CoreV1().ConfigMaps(ns).Get(ctx, sent.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(stored.Labels, sent.Labels) || !maps.Equal(stored.Annotations, sent.Annotations) || !maps.Equal(stored.Data, sent.Data) {
		t.Errorf("stored %+v, want it as sent %+v", stored, sent)
	}
	// AlwaysAdmit runs first, and does not outvote NamespaceLifecycle.
	if _, err := on.CoreV1().ConfigMaps("e2e-policy-no-such-namespace").Create(ctx, sent, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("create in a missing namespace: %v, want 404", err)
	}

	if got := policyAdmissionCount(t, s.on, series("admit", "false")); got < admitBefore+2 {
		t.Errorf("AlwaysAdmit admitted %v creates in the mutating phase, want 2 or more", got-admitBefore)
	}
	if got := policyAdmissionCount(t, s.on, series("validate", "false")); got < validateBefore+1 {
		t.Errorf("AlwaysAdmit admitted %v creates in the validating phase, want 1 or more", got-validateBefore)
	}
	if got := policyAdmissionCount(t, s.on, map[string]string{"name": "AlwaysAdmit", "rejected": "true"}); got != 0 {
		t.Errorf("AlwaysAdmit rejected %v requests, want 0", got)
	}
	if got := policyAdmissionCount(t, s.off, map[string]string{"name": "AlwaysAdmit"}); got != 0 {
		t.Errorf("the server without AlwaysAdmit counts %v requests through it", got)
	}
}

// testPolicyAlwaysDeny starts a third member of the control plane with AlwaysDeny:
// every write is refused, even a system:masters one; reads, which admission
// does not see, are served. The same writes through the other servers go
// through.
func testPolicyAlwaysDeny(t *testing.T, s *policyServers) {
	ctx := context.Background()
	on := policyClient(t, s.on, "e2e-admin", "system:masters")
	ns := policyNamespace(t, on, nil)
	existing := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "existing"}, Data: map[string]string{"k": "v"}}
	if _, err := on.CoreV1().ConfigMaps(ns).Create(ctx, existing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	denyServer := policyStartServer(t, s, "deny", "--enable-admission-plugins=AlwaysDeny")
	deny := policyClient(t, denyServer, "e2e-admin", "system:masters")
	const denied = "admission control is denying all modifications"

	writes := map[string]func() error{
		"create": func() error {
			_, err := deny.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{})
			return err
		},
		"update": func() error {
			_, err := deny.CoreV1().ConfigMaps(ns).Patch(ctx, "existing", types.MergePatchType, []byte(`{"data":{"k":"changed"}}`), metav1.PatchOptions{})
			return err
		},
		"delete": func() error { return deny.CoreV1().ConfigMaps(ns).Delete(ctx, "existing", metav1.DeleteOptions{}) },
		"create namespace": func() error {
			_, err := deny.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e-policy-denied"}}, metav1.CreateOptions{})
			return err
		},
	}
	for _, what := range slices.Sorted(maps.Keys(writes)) {
		if err := writes[what](); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), denied) {
			t.Errorf("%s: %v, want 403 %q", what, err, denied)
		}
	}
	got, err := deny.CoreV1().ConfigMaps(ns).Get(ctx, "existing", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" {
		t.Errorf("read: %v %v, want the unchanged configmap", err, got)
	}
	if n := policyAdmissionCount(t, denyServer, map[string]string{"name": "AlwaysDeny", "rejected": "true"}); n < float64(len(writes)) {
		t.Errorf("AlwaysDeny counts %v rejections, want %d or more", n, len(writes))
	}

	// The same create, update and delete through a server without AlwaysDeny.
	off := policyClient(t, s.off, "e2e-admin", "system:masters")
	if _, err := off.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("create without AlwaysDeny: %v", err)
	}
	if _, err := off.CoreV1().ConfigMaps(ns).Patch(ctx, "existing", types.MergePatchType, []byte(`{"data":{"k":"changed"}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("update without AlwaysDeny: %v", err)
	}
	if err := off.CoreV1().ConfigMaps(ns).Delete(ctx, "existing", metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete without AlwaysDeny: %v", err)
	}
}
