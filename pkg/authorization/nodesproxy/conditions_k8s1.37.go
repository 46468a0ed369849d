// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !k8s_before_1.37

package nodesproxy

import (
	"context"

	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Since Kubernetes 1.37 an authorizer may also answer with conditions. A
// conditions-aware caller gets the same rule: a get on nodes/proxy that next
// would allow, with conditions or without, is denied unless next allows
// create without conditions.

func (r *rule) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	d := r.next.ConditionsAwareAuthorize(ctx, a)
	if !getsNodesProxy(a) || d.IsDeny() || d.IsNoOpinion() || r.mayCreate(ctx, a) {
		return d
	}
	return authorizer.ConditionsAwareDecisionDeny(Reason, nil)
}

// EvaluateConditions leaves the conditions to next: the rule has none.
func (r *rule) EvaluateConditions(ctx context.Context, d authorizer.ConditionsAwareDecision, data authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return r.next.EvaluateConditions(ctx, d, data)
}
