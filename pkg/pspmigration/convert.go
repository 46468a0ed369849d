// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package pspmigration

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	psaapi "k8s.io/pod-security-admission/api"
	"sigs.k8s.io/yaml"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
)

// Replacement is what replaces PodSecurityPolicy: Pod Security Admission
// labels for each namespace, and admission policies that decide as
// PodSecurityPolicy did, at the same policy and with the same defaults,
// asking RBAC for the grants at every request.
//
// The policies are split into groups of at most GroupPolicies, in the
// order PodSecurityPolicy tries them. For each group, a MutatingAdmissionPolicy
// chooses (the first of its policies that admits the pod, for whom its
// grants let use it), a MutatingAdmissionPolicy applies (once every group
// has chosen: the defaults of the policy PodSecurityPolicy would take, and
// its name in the pod's kubernetes.io/psp annotation, as v1.24 recorded
// it), and a ValidatingAdmissionPolicy checks the recorded policy again,
// live. A gate refuses a pod for which no policy was recorded. Each
// admission policy has a budget of its own, so no request runs out of CEL's
// budget however many policies there are, and each object holds only its
// group's policies, so the output grows with the number of policies
// (docs/psp-migration.md).
type Replacement struct {
	Namespaces []*corev1.Namespace
	// Mutating are the choosers and the appliers, each with its binding
	// in MutatingBindings; empty when the cluster serves no
	// MutatingAdmissionPolicies, and then FieldsToSet says, per workload,
	// what its manifest must set now that nothing sets it.
	Mutating         []*admissionv1.MutatingAdmissionPolicy
	MutatingBindings []*admissionv1.MutatingAdmissionPolicyBinding
	// Validating are each group's check, then the gate, each with its
	// binding in ValidatingBindings.
	Validating         []*admissionv1.ValidatingAdmissionPolicy
	ValidatingBindings []*admissionv1.ValidatingAdmissionPolicyBinding
	FieldsToSet        map[string][]string
}

const (
	// ReplacementName names the gate; each group's objects are named
	// after it (podsecuritypolicy-replacement-choose-01, -apply-01,
	// -check-01).
	ReplacementName = "podsecuritypolicy-replacement"

	// GroupPolicies is how many policies one chooser tries. CEL charges
	// an authorizer call 350,000 of the 10,000,000 that one mutation may
	// spend (k8s.io/apiserver's cel library and RuntimeCELCostBudget); a
	// policy's grant takes up to four calls (the requester and the pod's
	// service account, each in the groups policy and extensions), and
	// checksReserve is left for the checks themselves.
	GroupPolicies = (celconfig.RuntimeCELCostBudget - checksReserve) / (callsPerGrant * authorizerCallCost)

	// ExactWithoutMutating is how many policies the replacement decides
	// exactly on a cluster that serves no MutatingAdmissionPolicies, where
	// one ValidatingAdmissionPolicy tries them all within one budget: a
	// pod may pass the checks of this many that none of its principals may
	// use before the one that admits it. Convert refuses more.
	ExactWithoutMutating = (celconfig.RuntimeCELCostBudget/authorizerCallCost - callsPerGrant) / callsPerGrant

	// MaxObjectBytes is the most one generated object may take as JSON: a
	// tenth of etcd's default request limit (1.5 MiB), and under the
	// 262,144 bytes of client-side apply's last-applied annotation.
	MaxObjectBytes = 1536 * 1024 / 10

	authorizerCallCost = 350_000
	callsPerGrant      = 4
	checksReserve      = 1_000_000
)

// Annotations the replacement writes. choicePrefix's keys live only while
// a request is admitted: each chooser writes one, and the applier that
// records the choice removes them all.
const (
	pspAnnotation = "kubernetes.io/psp"
	choicePrefix  = "podsecuritypolicy-replacement.turnstile.dev/"
	// refusedEnv marks the new ephemeral containers of a pods/ephemeralcontainers
	// update that no policy admits: storage keeps only the ephemeral
	// containers of such an update, so the gate reads the verdict there.
	refusedEnv = "PODSECURITYPOLICY_REPLACEMENT_REFUSED"
	// policiesAnnotation names the PodSecurityPolicies a generated object
	// decides for.
	policiesAnnotation = "podsecuritypolicy.turnstile.dev/policies"
	// replacementLabel marks every generated admission policy and binding,
	// for kubectl apply --prune and kubectl delete -l.
	replacementLabel = "podsecuritypolicy.turnstile.dev/replacement"
)

// Convert builds the replacement of policies (in the order PodSecurityPolicy
// tries them, as Decider.Policies gives them), setting each namespace of
// the report to the level its workloads meet. Who may use a policy is
// asked of the apiserver's authorizer at every request, as
// PodSecurityPolicy asked it, so that RBAC changed after the conversion
// (a grant revoked or made, a namespace made again) counts.
func Convert(policies []*policy.PodSecurityPolicy, report *Report, mutating bool) (*Replacement, error) {
	if len(policies) == 0 {
		return nil, fmt.Errorf("no PodSecurityPolicy can be applied: there is nothing to convert")
	}
	r := &Replacement{}
	for _, ns := range report.Namespaces {
		r.Namespaces = append(r.Namespaces, &corev1.Namespace{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: ns.Name, Labels: map[string]string{
				psaapi.EnforceLevelLabel:   string(ns.Enforce),
				psaapi.EnforceVersionLabel: psaapi.VersionLatest,
				psaapi.WarnLevelLabel:      string(ns.Enforce),
				psaapi.AuditLevelLabel:     string(ns.Enforce),
			}},
		})
	}
	if !mutating {
		if len(policies) > ExactWithoutMutating {
			return nil, fmt.Errorf("the cluster has %d PodSecurityPolicies and serves no admissionregistration.k8s.io/v1 mutatingadmissionpolicies: without them one ValidatingAdmissionPolicy must try every policy within one CEL budget, which is exact for at most %d; serve MutatingAdmissionPolicies (kube-apiserver --runtime-config=admissionregistration.k8s.io/v1/mutatingadmissionpolicies=true) and convert again", len(policies), ExactWithoutMutating)
		}
		r.addValidating(scanGate(policies))
		r.FieldsToSet = map[string][]string{}
		for _, w := range report.Workloads {
			if len(w.Changes) > 0 {
				r.FieldsToSet[w.Kind+"/"+w.Namespace+"/"+w.Name] = w.Changes
			}
		}
		return r, r.checkSizes()
	}
	ids := variableIDs(policies)
	choosers := groupPolicies(policies, ids, GroupPolicies, func(p *policy.PodSecurityPolicy) int {
		return len(celMutates(p, nil)) + len(celValid(p, false, nil)) + len(celValid(p, true, nil))
	})
	appliers := groupPolicies(policies, ids, len(policies), func(p *policy.PodSecurityPolicy) int { return len(celDefaultOps(p)) })
	checks := groupPolicies(policies, ids, len(policies), func(p *policy.PodSecurityPolicy) int { return len(celValid(p, false, nil)) })
	width := max(2, len(fmt.Sprint(max(len(choosers), len(appliers), len(checks)))))
	for _, groups := range [][]*group{choosers, appliers, checks} {
		for _, g := range groups {
			g.width = width
		}
	}
	for _, g := range choosers {
		r.addMutating(g.chooser())
	}
	for _, g := range appliers {
		r.addMutating(g.applier(choosers))
	}
	for _, g := range checks {
		r.addValidating(g.check())
	}
	names := make([]string, len(policies))
	for i, p := range policies {
		names[i] = p.Name
	}
	r.addValidating(gate(names))
	return r, r.checkSizes()
}

// group is a run of policies, in PodSecurityPolicy's order, that one
// chooser, one applier and one check decide for.
type group struct {
	index    int // from 1
	width    int // digits in the names
	policies []*policy.PodSecurityPolicy
	ids      []string // variableIDs of policies
}

// groupPolicies splits policies, in order, into groups of at most most
// policies whose CEL (size gives each one's bytes) fits objectBudget; a
// policy larger than that alone is a group, which checkSizes may refuse.
func groupPolicies(policies []*policy.PodSecurityPolicy, ids []string, most int, size func(*policy.PodSecurityPolicy) int) []*group {
	var groups []*group
	var g *group
	bytes := 0
	for i, p := range policies {
		n := size(p)
		if g == nil || len(g.policies) == most || bytes+n > objectBudget {
			g = &group{index: len(groups) + 1}
			groups = append(groups, g)
			bytes = 0
		}
		g.policies = append(g.policies, p)
		g.ids = append(g.ids, ids[i])
		bytes += n
	}
	return groups
}

// objectBudget is the CEL one object holds for its policies, with room
// left under MaxObjectBytes for JSON's escapes and the rest of the object.
const objectBudget = 64 * 1024

// name is the group's object of a kind: podsecuritypolicy-replacement-choose-01.
func (g *group) name(kind string) string {
	return fmt.Sprintf("%s-%s-%0*d", ReplacementName, kind, g.width, g.index)
}

// choiceKey is the annotation the group's chooser writes.
func choiceKey(width, index int) string {
	return fmt.Sprintf("%schoice-%0*d", choicePrefix, width, index)
}

func (g *group) names() []string {
	out := make([]string, len(g.policies))
	for i, p := range g.policies {
		out[i] = p.Name
	}
	return out
}

// objectMeta is a generated object's metadata: its name, the mark every
// generated object carries, and the PodSecurityPolicies it decides for.
func objectMeta(name string, policies []string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Labels: map[string]string{replacementLabel: "true"}}
	if len(policies) > 0 {
		m.Annotations = map[string]string{policiesAnnotation: strings.Join(policies, ",")}
	}
	return m
}

func (r *Replacement) addMutating(p *admissionv1.MutatingAdmissionPolicy) {
	p.TypeMeta = metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicy"}
	r.Mutating = append(r.Mutating, p)
	r.MutatingBindings = append(r.MutatingBindings, &admissionv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: objectMeta(p.Name, nil),
		Spec:       admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: p.Name},
	})
}

func (r *Replacement) addValidating(p *admissionv1.ValidatingAdmissionPolicy) {
	p.TypeMeta = metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"}
	r.Validating = append(r.Validating, p)
	r.ValidatingBindings = append(r.ValidatingBindings, &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: objectMeta(p.Name, nil),
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        p.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	})
}

// objects are the generated admission policies and bindings, in the order
// WriteYAML writes them: the mutating policies first, so that no pod is
// judged without the choice they record; the gate last, so that it does
// not refuse pods before the rest is in place.
func (r *Replacement) objects() []any {
	var out []any
	for i := range r.Mutating {
		out = append(out, r.Mutating[i], r.MutatingBindings[i])
	}
	for i := range r.Validating {
		out = append(out, r.Validating[i], r.ValidatingBindings[i])
	}
	return out
}

// checkSizes refuses a replacement with an object over MaxObjectBytes,
// naming it and its policies: one policy whose checks alone are that large.
func (r *Replacement) checkSizes() error {
	for _, o := range r.objects() {
		data, err := json.Marshal(o)
		if err != nil {
			return err
		}
		if len(data) > MaxObjectBytes {
			m := o.(metav1.Object)
			return fmt.Errorf("%s would take %d bytes, over the %d a generated object may (a tenth of etcd's request limit); it decides for the PodSecurityPolicies %s", m.GetName(), len(data), MaxObjectBytes, m.GetAnnotations()[policiesAnnotation])
		}
	}
	return nil
}

func podRule(op admissionv1.OperationType, resource string) admissionv1.NamedRuleWithOperations {
	return admissionv1.NamedRuleWithOperations{RuleWithOperations: admissionv1.RuleWithOperations{
		Operations: []admissionv1.OperationType{op},
		Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{resource}},
	}}
}

// podRequests are what the replacement judges: pod creations, and updates
// of pods/ephemeralcontainers (kubectl debug), judged as PodSecurityPolicy
// judged them.
func podRequests() *admissionv1.MatchResources {
	return &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{
		podRule(admissionv1.Create, "pods"),
		podRule(admissionv1.Update, "pods/ephemeralcontainers"),
	}}
}

// commonVariables are read by the checks (sharedVariables) and the
// grants (serviceAccount) of every policy, and by the choice (create).
func commonVariables() []admissionv1.Variable {
	return append(sharedVariables(),
		admissionv1.Variable{Name: "serviceAccount", Expression: serviceAccountExpression},
		admissionv1.Variable{Name: "create", Expression: "request.operation == 'CREATE'"},
	)
}

// serviceAccountExpression is the pod's service account, whose grants
// count as the requester's do.
const serviceAccountExpression = "authorizer.serviceAccount(request.namespace, object.spec.?serviceAccountName.orValue('default'))"

// grantedVariables hold when the requester or the pod's service account
// (with its two groups) may use the policy in the request's namespace, as
// PodSecurityPolicy asks: verb use on podsecuritypolicies in the groups
// policy or extensions. The authorizer answers at every request. An
// expression may spend 1,000,000 of CEL's cost units, so each principal's
// two calls are a variable of their own.
func grantedVariables(id, policy string) []admissionv1.Variable {
	check := func(who, group string) string {
		return fmt.Sprintf("%s.group(%s).resource('podsecuritypolicies').namespace(request.namespace).name(%s).check('use').allowed()", who, quote(group), quote(policy))
	}
	return []admissionv1.Variable{
		{Name: id + "_requester", Expression: or(check("authorizer", "policy"), check("authorizer", "extensions"))},
		{Name: id + "_sa", Expression: or(check("variables.serviceAccount", "policy"), check("variables.serviceAccount", "extensions"))},
		{Name: id + "_granted", Expression: fmt.Sprintf("variables.%s_requester || variables.%s_sa", id, id)},
	}
}

// firstOf is the name of the first policy for which holds(id) is true, or
// ” (CEL's conditional evaluates only the branch it takes).
func firstOf(ids, names []string, holds func(id string) string) string {
	expr := "''"
	for i := len(ids) - 1; i >= 0; i-- {
		expr = fmt.Sprintf("(%s ? %s : %s)", holds(ids[i]), quote(names[i]), expr)
	}
	return expr
}

// byChoice is, for the policy named by the CEL string choice, what value
// gives for its variable ID, and otherwise: one conditional per policy.
func byChoice(choice string, ids, names []string, value func(i int, id string) string, otherwise string) string {
	expr := otherwise
	for i := len(ids) - 1; i >= 0; i-- {
		v := value(i, ids[i])
		if v == "" {
			continue
		}
		expr = fmt.Sprintf("(%s == %s ? %s : %s)", choice, quote(names[i]), v, expr)
	}
	return expr
}

var notIdentifier = regexp.MustCompile(`[^a-zA-Z0-9]+`)

// variableIDs name each policy's variables: psp_ and its name in
// identifier characters, numbered where two names would meet.
func variableIDs(policies []*policy.PodSecurityPolicy) []string {
	ids := make([]string, len(policies))
	seen := map[string]bool{}
	for i, p := range policies {
		id := "psp_" + notIdentifier.ReplaceAllString(p.Name, "_")
		for n := 2; seen[id]; n++ {
			id = fmt.Sprintf("psp_%s_%d", notIdentifier.ReplaceAllString(p.Name, "_"), n)
		}
		seen[id] = true
		ids[i] = id
	}
	return ids
}

// WriteYAML writes the replacement as YAML documents for kubectl apply:
// the admission policies in the order of objects, then the namespaces'
// labels. Where nothing sets the defaults, a comment says per workload what
// its manifest must set.
func WriteYAML(w io.Writer, r *Replacement) error {
	fmt.Fprintln(w, "# Generated by kubectl psp convert: the replacement of the cluster's PodSecurityPolicies.")
	if len(r.FieldsToSet) > 0 {
		fmt.Fprintln(w, "# The cluster serves no MutatingAdmissionPolicies, so nothing sets the policies' defaults.")
		fmt.Fprintln(w, "# These workloads relied on them; set these fields in their manifests before applying:")
		refs := slices.Sorted(maps.Keys(r.FieldsToSet))
		for _, ref := range refs {
			fmt.Fprintf(w, "#   %s: %s\n", ref, strings.Join(r.FieldsToSet[ref], ", "))
		}
	}
	objects := r.objects()
	for _, ns := range r.Namespaces {
		objects = append(objects, ns)
	}
	for _, o := range objects {
		data, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "---\n%s", data); err != nil {
			return err
		}
	}
	return nil
}
