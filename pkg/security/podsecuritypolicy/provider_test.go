// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/psptesting"
)

// TestValidateInheritedFields covers the fields a container inherits from
// the pod (runAsUser, runAsGroup, seLinuxOptions), which the conformance
// cases reach only through defaults: after the restrictive policy's
// defaults, a value the pod or the container sets is judged as the
// container's, at the container's path (runAsGroup at the security context
// itself, as in v1.24).
func TestValidateInheritedFields(t *testing.T) {
	pr, err := NewProvider(psptesting.Restrictive())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*api.Pod)
		want []string
	}{
		{name: "defaults only"},
		{
			name: "pod runAsGroup",
			edit: func(p *api.Pod) { p.Spec.SecurityContext.RunAsGroup = ptr.To[int64](1) },
			want: []string{"spec.containers[0].securityContext: Invalid value: [1]: group 1 must be in the ranges: [{999 999}]"},
		},
		{
			name: "container runAsGroup overrides the pod's",
			edit: func(p *api.Pod) {
				p.Spec.SecurityContext.RunAsGroup = ptr.To[int64](999)
				p.Spec.InitContainers = []api.Container{{Name: "init", SecurityContext: &api.SecurityContext{RunAsGroup: ptr.To[int64](0)}}}
			},
			want: []string{"spec.initContainers[0].securityContext: Invalid value: [0]: group 0 must be in the ranges: [{999 999}]"},
		},
		{
			// Set on the pod, so not defaulted on the container.
			name: "pod runAsUser",
			edit: func(p *api.Pod) { p.Spec.SecurityContext.RunAsUser = ptr.To[int64](0) },
			want: []string{"spec.containers[0].securityContext.runAsUser: Invalid value: 0: must be in the ranges: [{999 999}]"},
		},
		{
			name: "container seLinux level, categories in another order",
			edit: func(p *api.Pod) {
				p.Spec.Containers[0].SecurityContext = &api.SecurityContext{SELinuxOptions: &api.SELinuxOptions{Level: "s9:z1,z0"}}
			},
		},
		{
			name: "container seLinux type",
			edit: func(p *api.Pod) {
				p.Spec.EphemeralContainers = []api.EphemeralContainer{{EphemeralContainerCommon: api.EphemeralContainerCommon{
					Name: "debug", SecurityContext: &api.SecurityContext{SELinuxOptions: &api.SELinuxOptions{Level: "s9:z0,z1", Type: "spc_t"}},
				}}}
			},
			want: []string{`spec.ephemeralContainers[0].securityContext.seLinuxOptions.type: Invalid value: "spc_t": must be `},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := psptesting.GoodPod()
			if tc.edit != nil {
				tc.edit(pod)
			}
			pr.MutatePod(pod)
			var got []string
			for _, err := range pr.ValidatePod(pod) {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}

	// Without defaults (Validate of an update), a container that sets
	// nothing is told what it lacks.
	pod := psptesting.GoodPod()
	pod.Spec.SecurityContext = &api.PodSecurityContext{SupplementalGroups: []int64{999}, FSGroup: ptr.To[int64](999), SELinuxOptions: &api.SELinuxOptions{Level: "s9:z0,z1"}}
	var got []string
	for _, err := range pr.ValidatePod(pod) {
		got = append(got, err.Error())
	}
	want := []string{
		"spec.containers[0].securityContext.runAsUser: Required value",
		"spec.containers[0].securityContext: Invalid value: []: unable to validate empty groups against required ranges",
		"spec.containers[0].securityContext.allowPrivilegeEscalation: Invalid value: null: Allowing privilege escalation for containers is not allowed",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("undefaulted container (-want +got):\n%s", diff)
	}
}
