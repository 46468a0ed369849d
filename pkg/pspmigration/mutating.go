// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package pspmigration

import (
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
)

// The mutating half of the replacement: PodSecurityPolicy's choice, made by
// one chooser per group and recorded by the appliers.
//
// MutatingAdmissionPolicies run in no fixed order (the apiserver keeps
// them in a map), once each, and again only when the object changed after
// them and they ask to be reinvoked (IfNeeded). So the choosers change
// nothing but an annotation of their own, and judge the pod as it came;
// the appliers wait until every chooser has written its annotation, which
// happens in the first pass or, for an applier that ran before the last
// chooser, in the reinvocation that the choosers' change brings about.
// Each mutation has CEL's whole budget, and a chooser asks the authorizer
// about at most GroupPolicies policies.

// chooser writes, for its group, the first policy (in name order) that
// admits the pod unchanged, and, when there is none and the request may
// change the pod (a creation), the first whose defaults make it valid; each
// only if the requester or the pod's service account may use it. The
// annotation's value is "ASIS/DEFAULTED", each a policy's name or empty.
func (g *group) chooser() *admissionv1.MutatingAdmissionPolicy {
	names := g.names()
	checks := newAtoms()
	var decide []admissionv1.Variable
	for i, p := range g.policies {
		id := g.ids[i]
		decide = append(decide,
			admissionv1.Variable{Name: id + "_mutates", Expression: celMutates(p, checks)},
			admissionv1.Variable{Name: id + "_valid", Expression: celValid(p, false, checks)},
			admissionv1.Variable{Name: id + "_defaulted", Expression: celValid(p, true, checks)},
		)
		// Checks first: an authorizer call costs CEL far more than every
		// check of a policy.
		decide = append(decide, grantedVariables(id, p.Name)...)
	}
	vars := append(append(commonVariables(), checks.vars...), decide...)
	asIs := firstOf(g.ids, names, func(id string) string {
		return fmt.Sprintf("!variables.%s_mutates && variables.%s_valid && variables.%s_granted", id, id, id)
	})
	defaulted := firstOf(g.ids, names, func(id string) string {
		return fmt.Sprintf("variables.%s_mutates && variables.%s_defaulted && variables.%s_granted", id, id, id)
	})
	vars = append(vars,
		admissionv1.Variable{Name: "asIs", Expression: asIs},
		// A policy that takes the pod as it is wins over any whose defaults
		// it needs, in every group: this group's are not needed then.
		admissionv1.Variable{Name: "defaulted", Expression: fmt.Sprintf("variables.create && variables.asIs == '' ? %s : ''", defaulted)},
	)
	name := g.name("choose")
	return &admissionv1.MutatingAdmissionPolicy{
		ObjectMeta: objectMeta(name, names),
		Spec: admissionv1.MutatingAdmissionPolicySpec{
			FailurePolicy:      ptr.To(admissionv1.Fail),
			ReinvocationPolicy: admissionv1.NeverReinvocationPolicy,
			MatchConstraints:   podRequests(),
			Variables:          vars,
			Mutations: []admissionv1.Mutation{{
				PatchType: admissionv1.PatchTypeJSONPatch,
				JSONPatch: &admissionv1.JSONPatch{Expression: fmt.Sprintf(
					"has(object.metadata.annotations) ? [JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey(%[1]s), value: %[2]s}] : "+
						"[JSONPatch{op: 'add', path: '/metadata/annotations', value: {%[1]s: %[2]s}}]",
					quote(choiceKey(g.width, g.index)), "variables.asIs + '/' + variables.defaulted")},
			}},
		},
	}
}

// applier, once every chooser has written its annotation, works out
// PodSecurityPolicy's choice: the first group's policy that admits the pod
// unchanged, else the first group's whose defaults make it valid. If that
// policy is one of its group, it applies the policy's defaults, records
// its name in kubernetes.io/psp as v1.24 did, and removes the choosers'
// annotations. If none is chosen, whichever applier runs first removes
// them (and a kubernetes.io/psp the client sent), and on a
// pods/ephemeralcontainers update marks the new ephemeral containers, so
// that the gate refuses. It is one mutation, whatever its group's size: a
// mutation costs the apiserver a conversion of the whole pod, even when it
// changes nothing.
func (g *group) applier(choosers []*group) *admissionv1.MutatingAdmissionPolicy {
	names := g.names()
	keys := make([]string, len(choosers))
	for i, c := range choosers {
		keys[i] = choiceKey(c.width, c.index)
	}
	vars := append(sharedVariables(), []admissionv1.Variable{
		{Name: "create", Expression: "request.operation == 'CREATE'"},
		{Name: "complete", Expression: fmt.Sprintf("has(object.metadata.annotations) && %s.all(k, k in object.metadata.annotations)", list(keys))},
		{Name: "choices", Expression: fmt.Sprintf("variables.complete ? %s.map(k, object.metadata.annotations[k].split('/')) : []", list(keys))},
		{Name: "chosen", Expression: "variables.choices.exists(c, c[0] != '') ? variables.choices.filter(c, c[0] != '')[0][0] : " +
			"variables.choices.exists(c, c[1] != '') ? variables.choices.filter(c, c[1] != '')[0][1] : ''"},
		{Name: "mine", Expression: fmt.Sprintf("variables.chosen in %s", list(names))},
	}...)
	for i, p := range g.policies {
		vars = append(vars, admissionv1.Variable{Name: g.ids[i] + "_ops", Expression: celDefaultOps(p)})
	}
	vars = append(vars, admissionv1.Variable{Name: "ops", Expression: byChoice("variables.chosen", g.ids, names, func(_ int, id string) string { return "variables." + id + "_ops" }, "[]")})
	name := g.name("apply")
	return &admissionv1.MutatingAdmissionPolicy{
		ObjectMeta: objectMeta(name, names),
		Spec: admissionv1.MutatingAdmissionPolicySpec{
			FailurePolicy:      ptr.To(admissionv1.Fail),
			ReinvocationPolicy: admissionv1.IfNeededReinvocationPolicy,
			MatchConstraints:   podRequests(),
			Variables:          vars,
			Mutations: []admissionv1.Mutation{{
				PatchType: admissionv1.PatchTypeJSONPatch,
				JSONPatch: &admissionv1.JSONPatch{Expression: applyChoice},
			}},
		},
	}
}

// applyChoice is the applier's patch: on a creation, the chosen policy's
// defaults and its name in kubernetes.io/psp (or a kubernetes.io/psp the
// client sent removed, when nothing was chosen); on an ephemeral
// containers update that nothing admits, the new ephemeral containers
// marked; and the choosers' annotations removed.
var applyChoice = fmt.Sprintf(`variables.complete && (variables.chosen == '' || variables.mine) ?
  (variables.create ? variables.ops.map(o, JSONPatch{op: o.op, path: o.path, value: o.value}) : []) +
  object.metadata.annotations.filter(k, k.startsWith(%[1]s)).map(k, JSONPatch{op: 'remove', path: '/metadata/annotations/' + jsonpatch.escapeKey(k)}) +
  (variables.create && variables.chosen != '' ? [JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey(%[2]s), value: variables.chosen}] : []) +
  (variables.create && variables.chosen == '' && %[2]s in object.metadata.annotations ? [JSONPatch{op: 'remove', path: '/metadata/annotations/' + jsonpatch.escapeKey(%[2]s)}] : []) +
  (!variables.create && variables.chosen == '' ?
    lists.range(size(object.spec.?ephemeralContainers.orValue([])))
      .filter(i, !(object.spec.ephemeralContainers[i].name in oldObject.spec.?ephemeralContainers.orValue([]).map(c, c.name)))
      .map(i, has(object.spec.ephemeralContainers[i].env) ?
        JSONPatch{op: 'add', path: '/spec/ephemeralContainers/' + string(i) + '/env/-', value: {'name': %[3]s, 'value': 'true'}} :
        JSONPatch{op: 'add', path: '/spec/ephemeralContainers/' + string(i) + '/env', value: [{'name': %[3]s, 'value': 'true'}]}) : [])
  : []`, quote(choicePrefix), quote(pspAnnotation), quote(refusedEnv))
