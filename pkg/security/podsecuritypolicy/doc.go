// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package podsecuritypolicy is PodSecurityPolicy's decision engine. It turns
// a PodSecurityPolicy into a Provider that defaults (MutatePod) and checks
// (ValidatePod) pods, as Kubernetes v1.24's PodSecurityPolicy admission did,
// with the v1.36 changes documented in docs/podsecuritypolicy.md; each
// strategy family lives in its own package, and this package orders them.
// Its Engine chooses the policy that admits a pod, among those the
// requester may use, over caches of the cluster's policies and RBAC rules:
// the admission plugin (plugin/pkg/admission/security/podsecuritypolicy)
// adapts it to the admission chain, and Decider runs it outside the
// apiserver for kubectl psp and pkg/pspmigration.
package podsecuritypolicy
