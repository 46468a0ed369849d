// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build k8s_before_1.37

package podsecuritypolicy

// Before Kubernetes 1.37, rest.RESTUpdateStrategy's two permissions took no
// arguments.

// AllowCreateOnUpdate is allowCreateOnUpdate.
func (strategy) AllowCreateOnUpdate() bool { return allowCreateOnUpdate }

// AllowUnconditionalUpdate is allowUnconditionalUpdate.
func (strategy) AllowUnconditionalUpdate() bool { return allowUnconditionalUpdate }
