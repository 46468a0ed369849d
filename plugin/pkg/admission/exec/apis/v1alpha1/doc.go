// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// +k8s:deepcopy-gen=package

// Package v1alpha1 is the configuration of the DenyEscalatingExec and
// DenyExecOnPrivileged admission plugins, given in either plugin's
// --admission-control-config-file entry:
//
//	apiVersion: exec.admission.turnstile.dev/v1alpha1
//	kind: ExecConfiguration
//	perContainer: true
//	treatHostProcessAsPrivileged: true
//	coverPortForward: true
//	coverNodeProxy: true
//	requirePodSecurityLevel: baseline
//
// Without an entry the plugins behave exactly as upstream's last version.
package v1alpha1
