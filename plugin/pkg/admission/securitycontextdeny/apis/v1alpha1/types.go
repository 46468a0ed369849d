// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package v1alpha1 is the configuration of the SecurityContextDeny admission
// plugin, given in its --admission-control-config-file entry:
//
//	apiVersion: securitycontextdeny.admission.turnstile.dev/v1alpha1
//	kind: SecurityContextDenyConfiguration
//	coverEphemeralContainers: true
//
// Without an entry the plugin behaves exactly as upstream's last version.
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the configuration's API group.
const GroupName = "securitycontextdeny.admission.turnstile.dev"

// SchemeGroupVersion is the configuration's group and version.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// SecurityContextDenyConfiguration holds opt-in hardening. Every option is
// off by default, because turning one on rejects pods that upstream's
// plugin admitted.
type SecurityContextDenyConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// CoverEphemeralContainers applies the per-container checks to
	// ephemeralContainers too, both in the pod spec and when they are added
	// through the pods/ephemeralcontainers subresource. Upstream never
	// checked them, so `kubectl debug` could run a container as any user
	// (the CVE-2023-2727 class of bypass).
	CoverEphemeralContainers bool `json:"coverEphemeralContainers,omitempty"`
}

// DeepCopyObject implements runtime.Object.
func (c *SecurityContextDenyConfiguration) DeepCopyObject() runtime.Object {
	out := *c
	return &out
}

// AddToScheme registers the configuration kind.
func AddToScheme(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &SecurityContextDenyConfiguration{})
	return nil
}
