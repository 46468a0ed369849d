// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build k8s_before_1.37

package lineapi

import (
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/discovery"
)

// Discovery is what kubernetes.Interface's Discovery returns: before
// client-go v0.37 the discovery client without contexts.
type Discovery = discovery.DiscoveryInterface

// PolicyAuthorizer is the authorizer the admission policy plugins take:
// before v1.37 a plain one.
type PolicyAuthorizer = authorizer.Authorizer

// SetPolicyAuthorizer gives an admission policy plugin its authorizer.
func SetPolicyAuthorizer(p interface{ SetAuthorizer(authorizer.Authorizer) }, a PolicyAuthorizer) {
	p.SetAuthorizer(a)
}
