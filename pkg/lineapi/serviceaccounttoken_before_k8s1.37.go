// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build k8s_before_1.37

package lineapi

import api "k8s.io/kubernetes/pkg/apis/core"

// Before Kubernetes 1.37 the internal API's
// ServiceAccountTokenProjection.ExpirationSeconds was a plain int64.

// ServiceAccountTokenProjection is a projected service account token at
// path that expires after the given seconds.
func ServiceAccountTokenProjection(path string, expirationSeconds int64) *api.ServiceAccountTokenProjection {
	return &api.ServiceAccountTokenProjection{Path: path, ExpirationSeconds: expirationSeconds}
}
