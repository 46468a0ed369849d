// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
)

// REST is the podsecuritypolicies resource: every verb of a generic
// registry store (get, list, watch, create, update, patch, delete,
// deletecollection).
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.StandardStorage    = &REST{}
)

// NewREST returns the storage of PodSecurityPolicy objects. typer is the
// scheme holding the policy group's types.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*REST, error) {
	s := NewStrategy(typer)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &policy.PodSecurityPolicy{} },
		NewListFunc:               func() runtime.Object { return &policy.PodSecurityPolicyList{} },
		DefaultQualifiedResource:  policy.Resource("podsecuritypolicies"),
		SingularQualifiedResource: policy.Resource("podsecuritypolicy"),

		CreateStrategy: s,
		UpdateStrategy: s,
		DeleteStrategy: s,

		TableConvertor: NewTableConvertor(),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter}); err != nil {
		return nil, err
	}
	return &REST{store}, nil
}

// ShortNames is what `kubectl get psp` resolves.
func (*REST) ShortNames() []string { return []string{"psp"} }
