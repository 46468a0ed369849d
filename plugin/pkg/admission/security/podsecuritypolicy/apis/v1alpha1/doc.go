// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// +k8s:deepcopy-gen=package

// Package v1alpha1 is the configuration of the PodSecurityPolicy admission
// plugin, given in its --admission-control-config-file entry:
//
//	apiVersion: podsecuritypolicy.admission.turnstile.dev/v1alpha1
//	kind: PodSecurityPolicyConfiguration
//	mode: warn
//
// Without an entry the plugin enforces, exactly as v1.24's did.
package v1alpha1
