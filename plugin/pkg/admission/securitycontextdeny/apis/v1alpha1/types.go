// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemeGroupVersion is the configuration's group and version.
var SchemeGroupVersion = schema.GroupVersion{Group: "securitycontextdeny.admission.turnstile.dev", Version: "v1alpha1"}

// SecurityContextDenyConfiguration holds opt-in hardening. Every option is
// off by default, because turning one on rejects pods that upstream's
// plugin admitted.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type SecurityContextDenyConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// CoverEphemeralContainers applies the per-container checks to
	// ephemeralContainers too, both in the pod spec and when they are added
	// through the pods/ephemeralcontainers subresource. Upstream never
	// checked them, so `kubectl debug` could run a container as any user
	// (the CVE-2023-2727 class of bypass). Only the ephemeral containers a
	// request adds are judged; those the pod has already are not.
	CoverEphemeralContainers bool `json:"coverEphemeralContainers,omitempty"`
}
