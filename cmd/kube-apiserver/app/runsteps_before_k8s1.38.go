// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !k8s_next_1.38

package app

import (
	"context"
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/featuregate"
	utilversion "k8s.io/component-base/version"
	"k8s.io/klog/v2"
)

// signalContext is the context that SIGTERM or SIGINT cancels.
func signalContext() context.Context { return genericapiserver.SetupSignalContext() }

// addFeatureMetrics exposes the feature gates as metrics; before
// Kubernetes v1.38 the gate records them itself.
func addFeatureMetrics(g featuregate.MutableFeatureGate) { g.AddMetrics() }

// logBuild logs the version and Go's settings first, as upstream's Run does.
func logBuild(context.Context) {
	klog.Infof("Version: %+v", utilversion.Get())
	klog.InfoS("Golang settings", "GOGC", os.Getenv("GOGC"), "GOMAXPROCS", os.Getenv("GOMAXPROCS"), "GOTRACEBACK", os.Getenv("GOTRACEBACK"))
}
