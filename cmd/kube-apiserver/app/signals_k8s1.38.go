// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build k8s_next_1.38

package app

import (
	"context"

	"k8s.io/apiserver/pkg/server/signals"
	"k8s.io/component-base/featuregate"
	featuremetrics "k8s.io/component-base/metrics/prometheus/feature"
)

// signalContext is the context that SIGTERM or SIGINT cancels (Kubernetes
// v1.38 moved it to k8s.io/apiserver/pkg/server/signals).
func signalContext() context.Context { return signals.SetupSignalContext() }

// addFeatureMetrics exposes the feature gates as metrics, recorded by
// component-base's recorder as upstream's kube-apiserver does from v1.38.
func addFeatureMetrics(g featuregate.MutableFeatureGate) {
	g.AddMetrics(featuremetrics.RecordFeatureInfo)
}
