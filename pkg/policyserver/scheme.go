// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package policyserver is the apiserver that serves policy/v1beta1
// PodSecurityPolicy. It is a generic apiserver of its own, placed in the
// delegation chain between upstream's aggregator and upstream's
// kube-apiserver, and registered with the aggregator as the local
// APIService v1beta1.policy. Its configuration is derived from the
// kube-apiserver's, so authentication, authorization, admission, audit and
// the etcd options are the same; it has its own scheme, storage factory and
// OpenAPI definitions. See docs/design/podsecuritypolicy-api.md.
package policyserver

import (
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy/install"
)

var (
	// Scheme holds the policy group's internal and v1beta1 types and the
	// meta types a generic apiserver needs. It is separate from upstream's
	// legacyscheme, whose policy group holds PodDisruptionBudget.
	Scheme = runtime.NewScheme()
	// Codecs serializes Scheme's types.
	Codecs = serializer.NewCodecFactory(Scheme)
)

func init() {
	install.Install(Scheme)
	unversioned := schema.GroupVersion{Version: "v1"}
	metav1.AddToGroupVersion(Scheme, unversioned)
	utilruntime.Must(metainternalversion.AddToScheme(Scheme))
	Scheme.AddUnversionedTypes(unversioned,
		&metav1.Status{},
		&metav1.APIVersions{},
		&metav1.APIGroupList{},
		&metav1.APIGroup{},
		&metav1.APIResourceList{},
	)
}
