// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package policy holds the internal (hub) version of the PodSecurityPolicy
// API that Turnstile serves as policy/v1beta1. Validation and the admission
// plugin work on these types; pkg/apis/policy/v1beta1 is the wire version.
//
// +k8s:deepcopy-gen=package
// +groupName=policy
package policy
