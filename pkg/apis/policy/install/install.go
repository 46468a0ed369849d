// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package install registers the policy API group (the internal version and
// policy/v1beta1) in a scheme. It is meant for a scheme of our own: upstream's
// legacyscheme already holds a policy group (PodDisruptionBudget and
// Eviction) whose Go types are not ours.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
)

// Install adds the policy group's internal and v1beta1 types, defaults and
// conversions to scheme, with v1beta1 as the preferred version. It panics if
// registration fails, which only a programming error can cause.
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(policy.AddToScheme(scheme))
	utilruntime.Must(v1beta1.AddToScheme(scheme))
	utilruntime.Must(scheme.SetVersionPriority(v1beta1.SchemeGroupVersion))
}
