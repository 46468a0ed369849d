// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package psp124 is the anchor of make bench-psp: v1.24.17's own
// PodSecurityPolicy admission plugin and RBAC authorizer, the last release
// that shipped them, built from k8s.io/kubernetes v1.24.17 in a module of
// its own (hack/pin-kubernetes.sh -anchor) so that the apiserver's graph
// stays its release's. Its BenchmarkScale decides the scenarios
// test/pspscale writes, as the plugin package's BenchmarkScale decides
// them with ours.
package psp124
