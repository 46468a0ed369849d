// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// simpleMissingNamespace is a namespace name that does not exist yet; it is
// deleted afterwards in case the test made it exist.
func simpleMissingNamespace(t *testing.T, c kubernetes.Interface, prefix string) string {
	name := prefix + utilrand.String(6)
	t.Cleanup(func() { _ = c.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

func simpleConfigMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}
}

// NamespaceAutoProvision: creating an object in a namespace that does not
// exist creates the namespace. (NamespaceExists, also on the "on" server,
// runs in the validating phase, after this mutating plugin has made the
// namespace exist.)
func testSimpleNamespaceAutoProvision(t *testing.T, s simpleServers) {
	ctx := context.Background()
	ns := simpleMissingNamespace(t, s.on, "e2e-auto-")
	if _, err := s.on.CoreV1().ConfigMaps(ns).Create(ctx, simpleConfigMap("first"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("on: object in a missing namespace: %v, want admitted", err)
	}
	if _, err := s.on.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Errorf("on: namespace %s after the create: %v, want it provisioned", ns, err)
	}

	// Without it (and without NamespaceLifecycle and NamespaceExists) the
	// object is stored in a namespace that still does not exist.
	orphans := simpleMissingNamespace(t, s.off, "e2e-orphans-")
	if _, err := s.off.CoreV1().ConfigMaps(orphans).Create(ctx, simpleConfigMap("orphan"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("off: object in a missing namespace: %v, want admitted", err)
	}
	t.Cleanup(func() {
		_ = s.off.CoreV1().ConfigMaps(orphans).Delete(context.Background(), "orphan", metav1.DeleteOptions{})
	})
	if _, err := s.off.CoreV1().Namespaces().Get(ctx, orphans, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("off: namespace %s after the create: %v, want NotFound", orphans, err)
	}
}

// NamespaceExists: a request in a namespace that does not exist is
// rejected, here by NamespaceExists alone (NamespaceLifecycle is off on both
// servers). NamespaceAutoProvision, which runs first, skips dry-run
// requests, so a dry-run create shows NamespaceExists at work.
func testSimpleNamespaceExists(t *testing.T, s simpleServers) {
	ctx := context.Background()
	ns := simpleMissingNamespace(t, s.on, "e2e-missing-")
	_, err := s.on.CoreV1().ConfigMaps(ns).Create(ctx, simpleConfigMap("dry"), simpleDryRun)
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `namespaces "`+ns+`" not found`) {
		t.Errorf("on: dry-run create in a missing namespace: got %v, want 404 namespaces %q not found", err, ns)
	}
	if _, err := s.on.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("on: namespace %s after a dry run: %v, want NotFound", ns, err)
	}
	if _, err := s.off.CoreV1().ConfigMaps(ns).Create(ctx, simpleConfigMap("dry"), simpleDryRun); err != nil {
		t.Errorf("off: dry-run create in a missing namespace: %v, want admitted", err)
	}
}

// simpleQuota creates a ResourceQuota and writes the status that
// kube-controller-manager's quota controller would (hard, and zero used), which
// the plugin needs before it admits anything the quota covers.
func simpleQuota(t *testing.T, c kubernetes.Interface, ns, name string, hard corev1.ResourceList) {
	t.Helper()
	ctx := context.Background()
	q, err := c.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: hard},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	used := corev1.ResourceList{}
	for k := range hard {
		used[k] = resource.MustParse("0")
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
	if _, err := c.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// ResourceQuota: a create beyond a namespace's quota is rejected and the
// quota's usage is charged; with limitedResources (the "on" server's
// configuration), a claim of storage class e2e-limited needs a covering
// quota.
func testSimpleResourceQuota(t *testing.T, s simpleServers) {
	ctx := context.Background()
	ns := simpleNamespace(t, s.on, "", nil)
	simpleQuota(t, s.on, ns, "e2e-quota", corev1.ResourceList{
		corev1.ResourceConfigMaps: resource.MustParse("2"),
		corev1.ResourceSecrets:    resource.MustParse("0"),
	})
	// The plugin reads quotas from an informer and admits freely until the
	// quota reaches it; a Secret, over the quota from the start, shows when
	// it has.
	simpleEventually(t, "on: a Secret over the quota is refused", func() (bool, string) {
		_, err := s.on.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, simpleDryRun)
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota: e2e-quota"), simpleErrString(err)
	})
	for _, name := range []string{"cm-1", "cm-2"} {
		if _, err := s.on.CoreV1().ConfigMaps(ns).Create(ctx, simpleConfigMap(name), metav1.CreateOptions{}); err != nil {
			t.Errorf("on: %s within the quota: %v", name, err)
		}
	}
	_, err := s.on.CoreV1().ConfigMaps(ns).Create(ctx, simpleConfigMap("cm-3"), metav1.CreateOptions{})
	simpleForbidden(t, "on: a ConfigMap over the quota", err,
		`configmaps "cm-3" is forbidden: exceeded quota: e2e-quota, requested: configmaps=1, used: configmaps=2, limited: configmaps=2`)
	q, err := s.on.CoreV1().ResourceQuotas(ns).Get(ctx, "e2e-quota", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if used := q.Status.Used[corev1.ResourceConfigMaps]; used.Value() != 2 {
		t.Errorf("on: quota used configmaps = %s, want 2 charged by admission", used.String())
	}
	if _, err := s.off.CoreV1().ConfigMaps(ns).Create(ctx, simpleConfigMap("off-cm-3"), metav1.CreateOptions{}); err != nil {
		t.Errorf("off: a ConfigMap over the quota: %v, want admitted", err)
	}

	// limitedResources.
	limited := simpleNamespace(t, s.on, "", nil)
	_, err = s.on.CoreV1().PersistentVolumeClaims(limited).Create(ctx, simpleClaim("no-quota", ptr.To("e2e-limited")), metav1.CreateOptions{})
	simpleForbidden(t, "on: a limited claim without a covering quota", err,
		"insufficient quota to consume: e2e-limited.storageclass.storage.k8s.io/requests.storage")
	if _, err := s.on.CoreV1().PersistentVolumeClaims(limited).Create(ctx, simpleClaim("other-class", ptr.To("e2e-unlimited")), metav1.CreateOptions{}); err != nil {
		t.Errorf("on: a claim of a class that is not limited: %v, want admitted", err)
	}
	if _, err := s.off.CoreV1().PersistentVolumeClaims(limited).Create(ctx, simpleClaim("off-no-quota", ptr.To("e2e-limited")), metav1.CreateOptions{}); err != nil {
		t.Errorf("off: a limited claim without a covering quota: %v, want admitted", err)
	}
	simpleQuota(t, s.on, limited, "e2e-limited", corev1.ResourceList{"e2e-limited.storageclass.storage.k8s.io/requests.storage": resource.MustParse("10Gi")})
	simpleEventually(t, "on: a limited claim with a covering quota", func() (bool, string) {
		_, err := s.on.CoreV1().PersistentVolumeClaims(limited).Create(ctx, simpleClaim("covered", ptr.To("e2e-limited")), metav1.CreateOptions{})
		return err == nil, simpleErrString(err)
	})
}
