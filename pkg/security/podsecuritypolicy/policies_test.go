// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1beta1 "github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
)

// TestWatchedPolicyIsDefaulted checks that a watched object is defaulted as
// the API serves it: allowPrivilegeEscalation nil means true.
func TestWatchedPolicyIsDefaulted(t *testing.T) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&policyv1beta1.PodSecurityPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	psp, err := toInternal(&unstructured.Unstructured{Object: content})
	if err != nil {
		t.Fatal(err)
	}
	if ape := psp.Spec.AllowPrivilegeEscalation; ape == nil || !*ape {
		t.Errorf("allowPrivilegeEscalation = %v, want true", ape)
	}
	if _, err := toInternal("not a policy"); err == nil {
		t.Error("toInternal accepted a string")
	}
}
