// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package v1beta1

import "k8s.io/apimachinery/pkg/runtime"

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_PodSecurityPolicySpec defaults allowPrivilegeEscalation to
// true, as the v1.24 apiserver did.
func SetDefaults_PodSecurityPolicySpec(obj *PodSecurityPolicySpec) {
	if obj.AllowPrivilegeEscalation == nil {
		t := true
		obj.AllowPrivilegeEscalation = &t
	}
}
