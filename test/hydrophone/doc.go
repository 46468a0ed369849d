// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package hydrophone pins sigs.k8s.io/hydrophone, the conformance runner
// cncf/k8s-conformance lists, in a module of its own: make conformance
// RUNNER=hydrophone builds it from this go.mod's tool line, and its
// dependency graph (its own client-go) stays out of the apiserver's.
package hydrophone
