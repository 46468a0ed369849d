// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !k8s_before_1.37

package app

import (
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// Kubernetes 1.37's Run names the apiserver's informers before building its
// configuration (cache.InformerName, which the informers' metrics carry).

// nameInformers does what upstream's Run does with opts.InformerName.
func nameInformers(opts *options.CompletedOptions) error {
	if opts.InformerName == nil {
		informerName, err := cache.NewInformerName("kube-apiserver")
		if err != nil {
			return err
		}
		opts.InformerName = informerName
	}
	return nil
}
