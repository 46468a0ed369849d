package e2e

import (
	"context"
	"slices"
	"testing"

	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The PodGroup plugins are upstream v1.36's, undocumented; they act only
// with the alpha feature gate GenericWorkload and need
// scheduling.k8s.io/v1alpha2 served.

const nodecertPodGroupFinalizer = "scheduling.k8s.io/podgroup-protection"

// createWorkload creates a Workload with one PodGroupTemplate per name.
func (s *nodecertServer) createWorkload(t *testing.T, ns, name string, templates ...string) {
	t.Helper()
	w := &schedulingv1alpha2.Workload{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, tmpl := range templates {
		w.Spec.PodGroupTemplates = append(w.Spec.PodGroupTemplates, schedulingv1alpha2.PodGroupTemplate{
			Name: tmpl, SchedulingPolicy: schedulingv1alpha2.PodGroupSchedulingPolicy{Basic: &schedulingv1alpha2.BasicSchedulingPolicy{}},
		})
	}
	if _, err := s.admin.SchedulingV1alpha2().Workloads(ns).Create(context.Background(), w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Workload %s: %v", name, err)
	}
}

// createPodGroup creates a PodGroup from the workload's template (none if
// workload is empty) and, at the end of the test, removes the protection
// finalizer (there is no controller to do it) and deletes it.
func (s *nodecertServer) createPodGroup(t *testing.T, ns, name, workload, template string) (*schedulingv1alpha2.PodGroup, error) {
	t.Helper()
	pg := &schedulingv1alpha2.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: schedulingv1alpha2.PodGroupSpec{
			SchedulingPolicy: schedulingv1alpha2.PodGroupSchedulingPolicy{Basic: &schedulingv1alpha2.BasicSchedulingPolicy{}},
		},
	}
	if workload != "" {
		pg.Spec.PodGroupTemplateRef = &schedulingv1alpha2.PodGroupTemplateReference{
			Workload: &schedulingv1alpha2.WorkloadPodGroupTemplateReference{WorkloadName: workload, PodGroupTemplateName: template},
		}
	}
	podGroups := s.admin.SchedulingV1alpha2().PodGroups(ns)
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

// PodGroupWorkloadExists: a PodGroup that refers to a Workload's template is
// refused unless that Workload exists and has that template.
func nodecertPodGroupWorkloadExists(t *testing.T, s *nodecertServer) {
	ns := createNamespace(t, s.admin)
	s.createWorkload(t, ns, "nc-workload", "workers")
	_, err := s.createPodGroup(t, ns, "no-workload", "nc-missing", "workers")
	s.judged(t, "PodGroup from a missing Workload", err, `PodGroup rejected: Workload "nc-missing" not found`)
	_, err = s.createPodGroup(t, ns, "no-template", "nc-workload", "ghosts")
	s.judged(t, "PodGroup from a missing template", err, `PodGroup rejected: PodGroupTemplate "ghosts" not found in Workload "nc-workload"`)
	_, err = s.createPodGroup(t, ns, "good", "nc-workload", "workers")
	admittedNodecert(t, "PodGroup from an existing Workload's template", err)
	_, err = s.createPodGroup(t, ns, "standalone", "", "")
	admittedNodecert(t, "PodGroup without a template reference", err)
}
