// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// +k8s:deepcopy-gen=package

// Package v1alpha1 is the configuration of the SecurityContextDeny admission
// plugin, given in its --admission-control-config-file entry:
//
//	apiVersion: securitycontextdeny.admission.turnstile.dev/v1alpha1
//	kind: SecurityContextDenyConfiguration
//	coverEphemeralContainers: true
//
// Without an entry the plugin behaves exactly as upstream's last version.
package v1alpha1
