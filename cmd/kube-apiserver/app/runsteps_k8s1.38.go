// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build k8s_next_1.38

package app

import (
	"context"
	"os"

	"k8s.io/apiserver/pkg/server/signals"
	"k8s.io/component-base/featuregate"
	featuremetrics "k8s.io/component-base/metrics/prometheus/feature"
	utilversion "k8s.io/component-base/version"
	"k8s.io/klog/v2"
)

// signalContext is the context that SIGTERM or SIGINT cancels (Kubernetes
// v1.38 moved it to k8s.io/apiserver/pkg/server/signals).
func signalContext() context.Context { return signals.SetupSignalContext() }

// addFeatureMetrics exposes the feature gates as metrics, recorded by
// component-base's recorder as upstream's kube-apiserver does from v1.38.
func addFeatureMetrics(g featuregate.MutableFeatureGate) {
	g.AddMetrics(featuremetrics.RecordFeatureInfo)
}

// logBuild logs the version and Go's settings first, as upstream's Run does
// (through the context's logger from v1.38).
func logBuild(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.Info("Build information", "version", utilversion.Get())
	logger.Info("Golang settings", "GOGC", os.Getenv("GOGC"), "GOMAXPROCS", os.Getenv("GOMAXPROCS"), "GOTRACEBACK", os.Getenv("GOTRACEBACK"))
}
