package e2e

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// JobValidation (upstream v1.36, not in the documentation; active with the
// alpha GenericWorkload feature gate, which both servers enable along with
// scheduling.k8s.io/v1alpha2): a Job whose pods form a gang-scheduled
// PodGroup may not change its parallelism; with a basic PodGroup it may.
func testSimpleJobValidation(t *testing.T, s simpleServers) {
	ctx := context.Background()
	ns := simpleNamespace(t, s.on, "", nil)
	for name, policy := range map[string]schedulingv1alpha2.PodGroupSchedulingPolicy{
		"gang":  {Gang: &schedulingv1alpha2.GangSchedulingPolicy{MinCount: 2}},
		"basic": {Basic: &schedulingv1alpha2.BasicSchedulingPolicy{}},
	} {
		if _, err := s.on.SchedulingV1alpha2().PodGroups(ns).Create(ctx, &schedulingv1alpha2.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       schedulingv1alpha2.PodGroupSpec{SchedulingPolicy: policy},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating PodGroup %s: %v", name, err)
		}
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: batchv1.JobSpec{
				Parallelism: ptr.To[int32](2),
				Completions: ptr.To[int32](2),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy:   corev1.RestartPolicyNever,
					Containers:      []corev1.Container{{Name: "app", Image: simpleImage}},
					SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: ptr.To(name)},
				}},
			},
		}
		if _, err := s.on.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Job %s: %v", name, err)
		}
	}
	scale := func(c kubernetes.Interface, name string) error {
		_, err := c.BatchV1().Jobs(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"parallelism":3}}`),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	// The plugin reads PodGroups from an informer and admits what it
	// cannot find yet.
	const want = `cannot change parallelism for a Job referencing gang-scheduled PodGroup "gang"`
	simpleEventually(t, "on: changing the parallelism of a gang-scheduled Job is refused", func() (bool, string) {
		err := scale(s.on, "gang")
		return err != nil, simpleErrString(err)
	})
	simpleForbidden(t, "on: changing the parallelism of a gang-scheduled Job", scale(s.on, "gang"), want)
	if err := scale(s.on, "basic"); err != nil {
		t.Errorf("on: changing the parallelism of a Job with a basic PodGroup: %v, want admitted", err)
	}
	if err := scale(s.off, "gang"); err != nil {
		t.Errorf("off: changing the parallelism of a gang-scheduled Job: %v, want admitted", err)
	}
}
