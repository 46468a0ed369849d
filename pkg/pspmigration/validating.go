// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package pspmigration

import (
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
)

// The validating half of the replacement: each group's check of the
// policy recorded in kubernetes.io/psp, and the gate.

// recorded is the policy a pod's kubernetes.io/psp names.
var recorded = fmt.Sprintf("object.metadata.?annotations[?%s].orValue('')", quote(pspAnnotation))

// noPolicy is the refusal when no policy admits the pod. A message
// expression has no authorizer, so it cannot list the policies the
// requester may use.
const noPolicy = "'no PodSecurityPolicy that ' + request.userInfo.username + ' or service account ' + object.spec.?serviceAccountName.orValue('default') + ' may use admits the pod'"

// check judges a pod created with one of its group's policies recorded, as
// PodSecurityPolicy's Validate judges the policy Admit chose: the pod as
// the admission chain left it must meet the policy without changes, and
// the requester or the pod's service account must still be allowed to use
// it. It reads only the recorded policy's variables, so it asks the
// authorizer at most four times.
func (g *group) check() *admissionv1.ValidatingAdmissionPolicy {
	names := g.names()
	vars := append(sharedVariables(),
		admissionv1.Variable{Name: "serviceAccount", Expression: serviceAccountExpression},
		admissionv1.Variable{Name: "chosen", Expression: recorded},
	)
	checks := newAtoms()
	var decide []admissionv1.Variable
	for i, p := range g.policies {
		decide = append(decide, admissionv1.Variable{Name: g.ids[i] + "_valid", Expression: celValid(p, false, checks)})
		decide = append(decide, grantedVariables(g.ids[i], p.Name)...)
	}
	vars = append(append(vars, checks.vars...), decide...)
	name := g.name("check")
	return &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: objectMeta(name, names),
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{
				podRule(admissionv1.Create, "pods"),
			}},
			MatchConditions: []admissionv1.MatchCondition{{
				Name:       "recorded-in-this-group",
				Expression: fmt.Sprintf("%s in %s", recorded, list(names)),
			}},
			Variables: vars,
			Validations: []admissionv1.Validation{
				{
					Expression:        byChoice("variables.chosen", g.ids, names, func(_ int, id string) string { return "variables." + id + "_valid" }, "false"),
					MessageExpression: "'the pod, as the admission chain left it, does not meet PodSecurityPolicy ' + variables.chosen + ', which was chosen for it'",
					Reason:            ptr.To(metav1.StatusReasonForbidden),
				},
				{
					Expression:        byChoice("variables.chosen", g.ids, names, func(_ int, id string) string { return "variables." + id + "_granted" }, "false"),
					MessageExpression: "'neither ' + request.userInfo.username + ' nor service account ' + object.spec.?serviceAccountName.orValue('default') + ' may use PodSecurityPolicy ' + variables.chosen + ', which the pod names'",
					Reason:            ptr.To(metav1.StatusReasonForbidden),
				},
			},
		},
	}
}

// gate refuses a created pod whose kubernetes.io/psp names none of the
// policies (no policy admitted it), or that still carries a chooser's
// annotation (the mutating policies did not all run), and an ephemeral
// containers update whose new containers an applier marked.
func gate(policies []string) *admissionv1.ValidatingAdmissionPolicy {
	return &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: objectMeta(ReplacementName, nil),
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionv1.Fail),
			MatchConstraints: podRequests(),
			Variables:        []admissionv1.Variable{{Name: "create", Expression: "request.operation == 'CREATE'"}},
			Validations: []admissionv1.Validation{
				{
					Expression:        fmt.Sprintf("!variables.create || %s in %s", recorded, list(policies)),
					MessageExpression: noPolicy,
					Reason:            ptr.To(metav1.StatusReasonForbidden),
				},
				{
					Expression: fmt.Sprintf("!variables.create || !object.metadata.?annotations.orValue({}).exists(k, k.startsWith(%s))", quote(choicePrefix)),
					Message:    "the PodSecurityPolicy replacement's MutatingAdmissionPolicies did not all run on the pod: check that the cluster serves MutatingAdmissionPolicies and that every podsecuritypolicy-replacement binding is in place",
					Reason:     ptr.To(metav1.StatusReasonForbidden),
				},
				{
					Expression:        fmt.Sprintf("variables.create || !object.spec.?ephemeralContainers.orValue([]).exists(c, c.?env.orValue([]).exists(e, e.name == %s))", quote(refusedEnv)),
					MessageExpression: noPolicy + " + ' with its new ephemeral containers'",
					Reason:            ptr.To(metav1.StatusReasonForbidden),
				},
			},
		},
	}
}

// scanGate is the whole replacement's validating side on a cluster without
// MutatingAdmissionPolicies: one ValidatingAdmissionPolicy that admits a
// pod when some policy admits it unchanged for whom its grants let use it.
// It tries them all within one budget, so Convert gives it at most
// ExactWithoutMutating policies.
func scanGate(policies []*policy.PodSecurityPolicy) *admissionv1.ValidatingAdmissionPolicy {
	ids := variableIDs(policies)
	vars := append(sharedVariables(), admissionv1.Variable{Name: "serviceAccount", Expression: serviceAccountExpression})
	var admits []string
	checks := newAtoms()
	var decide []admissionv1.Variable
	for i, p := range policies {
		decide = append(decide, admissionv1.Variable{Name: ids[i] + "_valid", Expression: celValid(p, false, checks)})
		decide = append(decide, grantedVariables(ids[i], p.Name)...)
		admits = append(admits, fmt.Sprintf("variables.%s_valid && variables.%s_granted", ids[i], ids[i]))
	}
	vars = append(append(vars, checks.vars...), decide...)
	names := make([]string, len(policies))
	for i, p := range policies {
		names[i] = p.Name
	}
	return &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: objectMeta(ReplacementName, names),
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionv1.Fail),
			MatchConstraints: podRequests(),
			Variables:        vars,
			Validations: []admissionv1.Validation{{
				Expression:        or(admits...),
				MessageExpression: noPolicy,
				Reason:            ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
}
