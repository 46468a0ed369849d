// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package v1beta1_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy/install"
	"github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
)

func TestDefaultAllowPrivilegeEscalation(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	tests := []struct {
		name string
		in   *bool
		want bool
	}{
		{"unset defaults to true", nil, true},
		{"false is kept", ptr.To(false), false},
		{"true is kept", ptr.To(true), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, obj := range []runtime.Object{
				&v1beta1.PodSecurityPolicy{Spec: v1beta1.PodSecurityPolicySpec{AllowPrivilegeEscalation: tc.in}},
				&v1beta1.PodSecurityPolicyList{Items: []v1beta1.PodSecurityPolicy{{Spec: v1beta1.PodSecurityPolicySpec{AllowPrivilegeEscalation: tc.in}}}},
			} {
				scheme.Default(obj)
				var got *bool
				switch o := obj.(type) {
				case *v1beta1.PodSecurityPolicy:
					got = o.Spec.AllowPrivilegeEscalation
				case *v1beta1.PodSecurityPolicyList:
					got = o.Items[0].Spec.AllowPrivilegeEscalation
				}
				if got == nil || *got != tc.want {
					t.Errorf("%T: allowPrivilegeEscalation = %v, want %v", obj, got, tc.want)
				}
			}
			// Other fields get no defaults: the v1.24 server set only this one.
			p := &v1beta1.PodSecurityPolicy{}
			scheme.Default(p)
			p.Spec.AllowPrivilegeEscalation = nil
			if p.Spec.DefaultAllowPrivilegeEscalation != nil || p.Spec.RunAsGroup != nil || p.Spec.RuntimeClass != nil {
				t.Errorf("unexpected defaults: %+v", p.Spec)
			}
		})
	}
}
