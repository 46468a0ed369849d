// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package v1beta1 holds the policy/v1beta1 PodSecurityPolicy API as
// Kubernetes v1.24 served it: the same JSON field names and the same
// protobuf field numbers, so objects a v1.24 apiserver wrote to etcd decode
// unchanged. Only the PodSecurityPolicy kinds live here; upstream's
// policy/v1beta1 PodDisruptionBudget and Eviction are not ours.
//
// The types are written for Turnstile; the generated files next to them come
// from hack/update-codegen.sh.
//
// +k8s:deepcopy-gen=package
// +k8s:protobuf-gen=package
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.k8s.api.policy.v1beta1
// +k8s:conversion-gen=github.com/turnstile-k8s/turnstile/pkg/apis/policy
// +k8s:defaulter-gen=TypeMeta
// +groupName=policy
package v1beta1
