// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package podsecuritypolicy turns a PodSecurityPolicy into a Provider that
// defaults (MutatePod) and checks (ValidatePod) pods, as Kubernetes v1.24's
// PodSecurityPolicy admission did, with the v1.36 changes documented in
// docs/podsecuritypolicy.md. Each strategy family lives in its own package;
// this package orders them.
package podsecuritypolicy
