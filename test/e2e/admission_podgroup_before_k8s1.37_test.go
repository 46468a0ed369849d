// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build k8s_before_1.37

package e2e

import "testing"

// Before Kubernetes 1.37 the PodGroup API was scheduling.k8s.io/v1alpha2,
// which main's client no longer has: an older line's tier does not run the
// node and certificate cases (lines/README.md).
func nodecertPodGroupProtection(t *testing.T, _ *nodecertServer) {
	t.Skip("PodGroup is scheduling.k8s.io/v1alpha2 before Kubernetes 1.37; main's client has v1alpha3 only")
}
