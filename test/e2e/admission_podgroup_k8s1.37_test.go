// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !k8s_before_1.37

package e2e

import (
	"context"
	"slices"
	"testing"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodGroupProtection is upstream's, undocumented; it acts only with the
// feature gate GenericWorkload (beta, off by default) and needs
// scheduling.k8s.io/v1alpha3 served, as from Kubernetes 1.37
// (admission_podgroup_before_k8s1.37_test.go before).

const nodecertPodGroupFinalizer = "scheduling.k8s.io/podgroup-protection"

// createWorkload creates a Workload with one PodGroupTemplate per name.
func (s *nodecertServer) createWorkload(t *testing.T, ns, name string, templates ...string) {
	t.Helper()
	w := &schedulingv1alpha3.Workload{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, tmpl := range templates {
		w.Spec.PodGroupTemplates = append(w.Spec.PodGroupTemplates, schedulingv1alpha3.PodGroupTemplate{
			Name: tmpl, SchedulingPolicy: schedulingv1alpha3.PodGroupSchedulingPolicy{Basic: &schedulingv1alpha3.BasicSchedulingPolicy{}},
		})
	}
	if _, err := s.admin.SchedulingV1alpha3().Workloads(ns).Create(context.Background(), w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Workload %s: %v", name, err)
	}
}

// createPodGroup creates a PodGroup from the workload's template (none if
// workload is empty) and, at the end of the test, removes the protection
// finalizer (there is no controller to do it) and deletes it.
func (s *nodecertServer) createPodGroup(t *testing.T, ns, name, workload, template string) (*schedulingv1alpha3.PodGroup, error) {
	t.Helper()
	pg := &schedulingv1alpha3.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: schedulingv1alpha3.PodGroupSpec{
			SchedulingPolicy: schedulingv1alpha3.PodGroupSchedulingPolicy{Basic: &schedulingv1alpha3.BasicSchedulingPolicy{}},
		},
	}
	if workload != "" {
		pg.Spec.WorkloadRef = &schedulingv1alpha3.WorkloadReference{WorkloadName: workload, TemplateName: template}
	}
	podGroups := s.admin.SchedulingV1alpha3().PodGroups(ns)
	created, err := podGroups.Create(context.Background(), pg, metav1.CreateOptions{})
	if err == nil {
		t.Cleanup(func() {
			ctx := context.Background()
			_, _ = podGroups.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			_ = podGroups.Delete(ctx, name, metav1.DeleteOptions{})
		})
	}
	return created, err
}

// PodGroupProtection: every new PodGroup gets the
// scheduling.k8s.io/podgroup-protection finalizer.
func nodecertPodGroupProtection(t *testing.T, s *nodecertServer) {
	ns := createNamespace(t, s.admin)
	s.createWorkload(t, ns, "nc-workload", "workers")
	for _, tc := range []struct{ name, workload, template string }{
		{name: "standalone"},
		{name: "from-template", workload: "nc-workload", template: "workers"},
	} {
		pg, err := s.createPodGroup(t, ns, tc.name, tc.workload, tc.template)
		if err != nil {
			t.Fatalf("creating PodGroup %s: %v", tc.name, err)
		}
		if got := slices.Contains(pg.Finalizers, nodecertPodGroupFinalizer); got != s.on {
			t.Errorf("PodGroup %s finalizers %v: has %s = %v, want %v", tc.name, pg.Finalizers, nodecertPodGroupFinalizer, got, s.on)
		}
	}
}
