// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

// A mutation that runs after PodSecurityPolicy admitted a pod cannot sneak
// privilege past it: a MutatingAdmissionPolicy (a mutating webhook is the
// same to the chain) makes a pod privileged after PodSecurityPolicy's
// mutating pass chose restricted for it. Because the object changed, the
// chain runs every in-tree mutating plugin again (apiserver's
// reinvocation), and PodSecurityPolicy's mutating pass refuses the pod as
// it now is ("unable to admit"); were that pass skipped, its validating
// pass, which runs after every mutation, would ("unable to validate").
// Without the mutation the same pod is admitted.
func TestPodSecurityPolicyRefusesALaterMutation(t *testing.T) {
	t.Parallel() // its own apiserver: see "Running in parallel" in README.md
	s, admin := startServer(t, "psp-mutated", "--enable-admission-plugins=PodSecurityPolicy")
	ctx := context.Background()
	applyExamplePolicies(t, s)
	ns := createNamespace(t, admin)
	labels := map[string]string{"turnstile.test/escalate": "true"}
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "escalate"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ObjectSelector: &metav1.LabelSelector{MatchLabels: labels},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}}},
			},
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[JSONPatch{op: "add", path: "/spec/containers/0/securityContext/privileged", value: true}]`},
			}},
		},
	}
	if _, err := admin.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "escalate"},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "escalate"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// dev may create pods in ns, and use restricted (the examples grant it
	// to every authenticated user).
	grantPods(t, admin, ns, "dev", "create")
	dev, _ := policyWarnClient(t, s, "dev")
	pod := func(escalate bool) *corev1.Pod {
		p := pausePod("p-"+utilrand.String(5), "")
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000)}
		if escalate {
			p.Labels = labels
		}
		return p
	}
	// The policy takes effect once the apiserver's informer has it.
	policyEventually(t, "the mutating policy made the pod privileged, and PodSecurityPolicy's validating pass refused it", func() (bool, error) {
		_, err := dev.CoreV1().Pods(ns).Create(ctx, pod(true), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "PodSecurityPolicy: unable to ") &&
			strings.Contains(err.Error(), "Privileged containers are not allowed"), err
	})
	admitted, err := dev.CoreV1().Pods(ns).Create(ctx, pod(false), metav1.CreateOptions{})
	if err != nil || admitted.Annotations["kubernetes.io/psp"] != "restricted" {
		t.Errorf("the same pod without the mutation: %v, admitted by %q; want restricted", err, admitted.GetAnnotations()["kubernetes.io/psp"])
	}
}
