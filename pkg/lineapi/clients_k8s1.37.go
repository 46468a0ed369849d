// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !k8s_before_1.37

package lineapi

import (
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/discovery"
)

// Discovery is what kubernetes.Interface's Discovery returns: since
// client-go v0.37 the discovery client with and without contexts.
type Discovery = discovery.DiscoveryInterfaces

// PolicyAuthorizer is the authorizer the admission policy plugins take:
// since v1.37 an unconditional one.
type PolicyAuthorizer = authorizer.UnconditionalAuthorizer

// SetPolicyAuthorizer gives an admission policy plugin its authorizer.
func SetPolicyAuthorizer(p interface {
	SetUnconditionalAuthorizer(authorizer.UnconditionalAuthorizer)
}, a PolicyAuthorizer) {
	p.SetUnconditionalAuthorizer(a)
}
