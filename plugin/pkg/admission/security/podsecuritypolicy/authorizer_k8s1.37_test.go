// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !k8s_before_1.37

package podsecuritypolicy

import (
	"context"

	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Kubernetes 1.37's authorizer.Authorizer also decides with conditions. The
// test authorizers have none: they answer as upstream asks an authorizer that
// is not conditions-aware to (interfaces.go). Before 1.37 they need nothing
// more.

func (f *fakeAuthorizer) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(f.Authorize(ctx, a))
}

func (f *fakeAuthorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}
