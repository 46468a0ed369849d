// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !k8s_before_1.37

package podsecuritypolicy

import "context"

// Kubernetes 1.37 gave rest.RESTUpdateStrategy's two permissions a context.

// AllowCreateOnUpdate is allowCreateOnUpdate.
func (strategy) AllowCreateOnUpdate(context.Context) bool { return allowCreateOnUpdate }

// AllowUnconditionalUpdate is allowUnconditionalUpdate.
func (strategy) AllowUnconditionalUpdate(context.Context) bool { return allowUnconditionalUpdate }
