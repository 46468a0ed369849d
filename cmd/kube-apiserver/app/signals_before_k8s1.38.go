// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !k8s_next_1.38

package app

import (
	"context"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/featuregate"
)

// signalContext is the context that SIGTERM or SIGINT cancels.
func signalContext() context.Context { return genericapiserver.SetupSignalContext() }

// addFeatureMetrics exposes the feature gates as metrics; before
// Kubernetes v1.38 the gate records them itself.
func addFeatureMetrics(g featuregate.MutableFeatureGate) { g.AddMetrics() }
