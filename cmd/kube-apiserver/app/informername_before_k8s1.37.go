// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build k8s_before_1.37

package app

import "k8s.io/kubernetes/cmd/kube-apiserver/app/options"

// Before Kubernetes 1.37 the apiserver's informers had no name to set.

// nameInformers does nothing.
func nameInformers(*options.CompletedOptions) error { return nil }
