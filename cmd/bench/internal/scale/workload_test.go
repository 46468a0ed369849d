// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install"

	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/policies"
	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/policyserver"
	pspprovider "github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy"
)

// TestSamePodsAsAdmitted checks that -same-pods sends the pods Turnstile
// stores: the workloads' policy validates the pod and has nothing left to
// default, while the plain pod is changed by it (else this test would pass
// with any samePodsFields).
func TestSamePodsAsAdmitted(t *testing.T) {
	// The policy as the policy API serves it, defaulted, in the internal
	// type the providers read.
	v1beta1Policy := policies.PSP(workloadPolicy, nil, workloadPolicySpec())
	policyserver.Scheme.Default(v1beta1Policy)
	internalPolicy := &policy.PodSecurityPolicy{}
	if err := policyserver.Scheme.Convert(v1beta1Policy, internalPolicy, nil); err != nil {
		t.Fatal(err)
	}
	provider, err := pspprovider.NewProvider(internalPolicy)
	if err != nil {
		t.Fatal(err)
	}
	admitted := func(samePods bool) (stored, sent *api.Pod) {
		tmpl := workloadPod("app", samePods)
		v1pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: workloadNamespace(0), Annotations: tmpl.Annotations}, Spec: tmpl.Spec}
		legacyscheme.Scheme.Default(v1pod)
		sent = &api.Pod{}
		if err := legacyscheme.Scheme.Convert(v1pod, sent, nil); err != nil {
			t.Fatal(err)
		}
		if errs := provider.ValidatePod(provider.Mutated(sent)); len(errs) > 0 {
			t.Fatalf("samePods %t: %s refuses the pod: %v", samePods, workloadPolicy, errs)
		}
		return provider.Mutated(sent), sent
	}
	if stored, sent := admitted(false); apiequality.Semantic.DeepEqual(stored, sent) {
		t.Fatalf("%s leaves the plain pod as it is: nothing for -same-pods to match", workloadPolicy)
	}
	stored, sent := admitted(true)
	if !apiequality.Semantic.DeepEqual(stored, sent) {
		t.Errorf("%s still changes the -same-pods pod:\nsent   %+v\nstored %+v", workloadPolicy, sent.Spec.Containers[0].SecurityContext, stored.Spec.Containers[0].SecurityContext)
	}
	if got := sent.Annotations[policies.Annotation]; got != workloadPolicy {
		t.Errorf("annotation %s = %q, want %q (the policy that admits it)", policies.Annotation, got, workloadPolicy)
	}
}
