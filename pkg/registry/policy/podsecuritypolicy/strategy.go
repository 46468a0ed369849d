// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package podsecuritypolicy is the REST storage of policy/v1beta1
// PodSecurityPolicy: a generic registry store with v1.24's strategy
// (cluster-scoped, validated by pkg/apis/policy/validation, unconditional
// updates allowed), the short name psp and `kubectl get psp`'s columns.
package podsecuritypolicy

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/apis/policy/validation"
)

// strategy implements create, update and delete behaviour for
// PodSecurityPolicy objects. Defaults are applied by the scheme's
// defaulters when a request body is decoded, before the strategy runs.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

var (
	_ rest.RESTCreateStrategy = strategy{}
	_ rest.RESTUpdateStrategy = strategy{}
	_ rest.RESTDeleteStrategy = strategy{}
)

// NewStrategy returns the strategy for PodSecurityPolicy objects; typer is
// the scheme that holds the policy group's internal and v1beta1 types.
func NewStrategy(typer runtime.ObjectTyper) rest.RESTCreateUpdateStrategy {
	return strategy{typer, names.SimpleNameGenerator}
}

// NamespaceScoped is false: PodSecurityPolicy is cluster-scoped.
func (strategy) NamespaceScoped() bool { return false }

// AllowCreateOnUpdate and AllowUnconditionalUpdate, whose signatures
// differ between lines, are in strategy_k8s1.37.go and
// strategy_before_k8s1.37.go.

// allowCreateOnUpdate is false: a PUT to a missing name is NotFound.
const allowCreateOnUpdate = false

// allowUnconditionalUpdate is true: an update without a resourceVersion
// overwrites, as v1.24 allowed.
const allowUnconditionalUpdate = true

// PrepareForCreate has nothing to clear: PodSecurityPolicy has no status and
// v1.24 gated none of its fields.
func (strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {}

// PrepareForUpdate has nothing to carry over, for the same reason.
func (strategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {}

// Validate checks a new PodSecurityPolicy.
func (strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidatePodSecurityPolicy(obj.(*policy.PodSecurityPolicy))
}

// WarningsOnCreate returns none: the deprecation warning is added for every
// request by the endpoint installer, from the type's lifecycle.
func (strategy) WarningsOnCreate(ctx context.Context, obj runtime.Object) []string { return nil }

// Canonicalize leaves the object as it is.
func (strategy) Canonicalize(obj runtime.Object) {}

// ValidateUpdate checks a changed PodSecurityPolicy against the stored one.
func (strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidatePodSecurityPolicyUpdate(old.(*policy.PodSecurityPolicy), obj.(*policy.PodSecurityPolicy))
}

// WarningsOnUpdate returns none, as WarningsOnCreate.
func (strategy) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string { return nil }
