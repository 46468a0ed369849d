// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// DenyServiceExternalIPs: no new Service may use externalIPs and no
// Service may add one; existing ones may stay or be removed.
func testSimpleDenyServiceExternalIPs(t *testing.T, s simpleServers) {
	ctx := context.Background()
	ns := simpleNamespace(t, s.on, "", nil)
	svc := func(name string, ips ...string) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}, ExternalIPs: ips},
		}
	}
	const denied = "Use of external IPs is denied by admission control"
	_, err := s.on.CoreV1().Services(ns).Create(ctx, svc("new", "192.0.2.10"), metav1.CreateOptions{})
	simpleForbidden(t, "on: new Service with externalIPs", err, `services "new" is forbidden: `+denied)
	if _, err := s.on.CoreV1().Services(ns).Create(ctx, svc("plain"), metav1.CreateOptions{}); err != nil {
		t.Errorf("on: Service without externalIPs: %v", err)
	}
	if _, err := s.off.CoreV1().Services(ns).Create(ctx, svc("legacy", "192.0.2.10"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("off: new Service with externalIPs: %v, want admitted", err)
	}

	setIPs := func(c kubernetes.Interface, ips ...string) error {
		patch := []byte(`{"spec":{"externalIPs":` + toJSON(t, ips) + `}}`)
		_, err := c.CoreV1().Services(ns).Patch(ctx, "legacy", types.MergePatchType, patch, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	if _, err := s.on.CoreV1().Services(ns).Patch(ctx, "legacy", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("on: updating a Service that keeps its externalIPs: %v, want admitted", err)
	}
	simpleForbidden(t, "on: adding an external IP", setIPs(s.on, "192.0.2.10", "192.0.2.11"), denied)
	if err := setIPs(s.on, []string{}...); err != nil {
		t.Errorf("on: removing the external IPs: %v, want admitted", err)
	}
	if err := setIPs(s.off, "192.0.2.10", "192.0.2.11"); err != nil {
		t.Errorf("off: adding an external IP: %v, want admitted", err)
	}
}

// DefaultIngressClass: a new Ingress that requests no class gets the
// default IngressClass. Upstream picks the newest when several are marked
// default; the documentation says it then rejects the Ingress.
func testSimpleDefaultIngressClass(t *testing.T, s simpleServers) {
	ctx := context.Background()
	ns := simpleNamespace(t, s.on, "", nil)
	createClass := func(prefix string) *networkingv1.IngressClass {
		t.Helper()
		ic, err := s.on.NetworkingV1().IngressClasses().Create(ctx, &networkingv1.IngressClass{
			ObjectMeta: metav1.ObjectMeta{GenerateName: prefix,
				Annotations: map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}},
			Spec: networkingv1.IngressClassSpec{Controller: "example.com/ingress-controller"},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = s.on.NetworkingV1().IngressClasses().Delete(context.Background(), ic.Name, metav1.DeleteOptions{})
		})
		return ic
	}
	ingress := func(name string, annotations map[string]string) *networkingv1.Ingress {
		return &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
			Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
				Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}},
		}
	}
	className := func(i *networkingv1.Ingress) string { return ptr.Deref(i.Spec.IngressClassName, "<unset>") }
	defaultedTo := func(want string) {
		t.Helper()
		simpleEventually(t, "on: an Ingress without a class gets "+want, func() (bool, string) {
			got, err := s.on.NetworkingV1().Ingresses(ns).Create(ctx, ingress("probe", nil), simpleDryRun)
			if err != nil {
				return false, err.Error()
			}
			return className(got) == want, className(got)
		})
	}

	// As for StorageClasses: the newer sorts after the older by name.
	older := createClass("e2e-ic-a-")
	defaultedTo(older.Name)
	got, err := s.on.NetworkingV1().Ingresses(ns).Create(ctx, ingress("defaulted", nil), metav1.CreateOptions{})
	if err != nil || className(got) != older.Name {
		t.Errorf("on: Ingress without a class: %v, class %s, want %s", err, className(got), older.Name)
	}
	got, err = s.on.NetworkingV1().Ingresses(ns).Create(ctx,
		ingress("annotated", map[string]string{"kubernetes.io/ingress.class": "legacy"}), metav1.CreateOptions{})
	if err != nil || got.Spec.IngressClassName != nil {
		t.Errorf("on: Ingress with the kubernetes.io/ingress.class annotation: %v, class %s, want unset", err, className(got))
	}
	got, err = s.off.NetworkingV1().Ingresses(ns).Create(ctx, ingress("as-asked", nil), metav1.CreateOptions{})
	if err != nil || got.Spec.IngressClassName != nil {
		t.Errorf("off: Ingress without a class: %v, class %s, want unset", err, className(got))
	}

	simpleAfterSecond(t, older.CreationTimestamp)
	newer := createClass("e2e-ic-b-")
	if !newer.CreationTimestamp.After(older.CreationTimestamp.Time) {
		t.Fatalf("%s created at %v, not after %s at %v", newer.Name, newer.CreationTimestamp, older.Name, older.CreationTimestamp)
	}
	defaultedTo(newer.Name)
}
