// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
)

// TestMutatedLeavesThePodAlone checks the cheap copy the plugin makes for
// each defaulting policy: it equals MutatePod on a deep copy, and the pod
// it was made from is untouched, whether its security contexts were set,
// empty or absent.
func TestMutatedLeavesThePodAlone(t *testing.T) {
	ranges := []policy.IDRange{{Min: 1000, Max: 2000}}
	psp := &policy.PodSecurityPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults-everything", Annotations: map[string]string{
			policy.SeccompDefaultProfileAnnotationKey:  "runtime/default",
			policy.AppArmorDefaultProfileAnnotationKey: "runtime/default",
		}},
		Spec: policy.PodSecurityPolicySpec{
			DefaultAddCapabilities:   []api.Capability{"CHOWN"},
			RequiredDropCapabilities: []api.Capability{"NET_RAW"},
			RunAsUser:                policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAs, Ranges: ranges},
			RunAsGroup:               &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyMustRunAs, Ranges: ranges},
			SELinux:                  policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyMustRunAs, SELinuxOptions: &api.SELinuxOptions{Level: "s0:c1,c2"}},
			SupplementalGroups:       policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMustRunAs, Ranges: ranges},
			FSGroup:                  policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMustRunAs, Ranges: ranges},
			ReadOnlyRootFilesystem:   true,
			AllowPrivilegeEscalation: ptr.To(false),
			RuntimeClass:             &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"*"}, DefaultRuntimeClassName: ptr.To("gvisor")},
		},
	}
	pr, err := NewProvider(psp)
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string]*api.Pod{
		"no security contexts": {Spec: api.PodSpec{
			InitContainers:      []api.Container{{Name: "init"}},
			Containers:          []api.Container{{Name: "app"}},
			EphemeralContainers: []api.EphemeralContainer{{EphemeralContainerCommon: api.EphemeralContainerCommon{Name: "debug"}}},
		}},
		"empty security contexts": {Spec: api.PodSpec{
			SecurityContext:     &api.PodSecurityContext{},
			InitContainers:      []api.Container{{Name: "init", SecurityContext: &api.SecurityContext{}}},
			Containers:          []api.Container{{Name: "app", SecurityContext: &api.SecurityContext{}}},
			EphemeralContainers: []api.EphemeralContainer{{EphemeralContainerCommon: api.EphemeralContainerCommon{Name: "debug", SecurityContext: &api.SecurityContext{}}}},
		}},
		"partly set": {Spec: api.PodSpec{
			SecurityContext: &api.PodSecurityContext{RunAsUser: ptr.To[int64](1500), SupplementalGroups: []int64{}},
			Containers: []api.Container{{Name: "app", SecurityContext: &api.SecurityContext{
				Capabilities: &api.Capabilities{Add: []api.Capability{"CHOWN"}, Drop: []api.Capability{"ALL"}},
			}}},
		}},
	}
	for name, pod := range pods {
		t.Run(name, func(t *testing.T) {
			before := pod.DeepCopy()
			want := pod.DeepCopy()
			pr.MutatePod(want)
			got := pr.Mutated(pod)
			if !apiequality.Semantic.DeepEqual(got, want) {
				t.Errorf("Mutated differs from MutatePod on a deep copy:\ngot  %+v\nwant %+v", got.Spec, want.Spec)
			}
			if !apiequality.Semantic.DeepEqual(pod, before) {
				t.Errorf("Mutated changed the pod it copied:\nnow    %+v\nbefore %+v", pod.Spec, before.Spec)
			}
			if s := NewSubject(pod); !pr.Mutates(&s) {
				t.Error("Mutates is false for a pod the policy defaults")
			}
		})
	}
}
