package pspmigration

import (
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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
)

// Replacement is what replaces PodSecurityPolicy: Pod Security Admission
// labels for each namespace, one ValidatingAdmissionPolicy that decides as
// PodSecurityPolicy did (each policy's checks, for whom its grants let use
// it), and a MutatingAdmissionPolicy per policy with defaults that sets
// them on the pods PodSecurityPolicy would have given that policy.
type Replacement struct {
	Namespaces []*corev1.Namespace
	Validating *admissionv1.ValidatingAdmissionPolicy
	Binding    *admissionv1.ValidatingAdmissionPolicyBinding
	// Mutating and MutatingBindings are empty when the cluster does not
	// serve MutatingAdmissionPolicies; then FieldsToSet says, per workload,
	// what its manifest must set now that nothing sets it.
	Mutating         []*admissionv1.MutatingAdmissionPolicy
	MutatingBindings []*admissionv1.MutatingAdmissionPolicyBinding
	FieldsToSet      map[string][]string
}

// ReplacementName names the generated policies and their bindings.
const ReplacementName = "podsecuritypolicy-replacement"

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
	ids := variableIDs(policies)
	vars := []admissionv1.Variable{
		{Name: "linux", Expression: "object.spec.?os.?name.orValue('') != 'windows'"},
		{Name: "serviceAccount", Expression: serviceAccountExpression},
	}
	var decide []string
	for i, p := range policies {
		id := ids[i]
		vars = append(vars, grantedVariables(id, p.Name)...)
		vars = append(vars, admissionv1.Variable{Name: id + "_valid", Expression: celValid(p, false)})
		// Checks first: an authorizer call costs CEL far more than
		// every check of a policy (grantedVariables).
		decide = append(decide, fmt.Sprintf("variables.%s_valid && variables.%s_granted", id, id))
	}
	r.Validating = &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: ReplacementName},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{
				podRule(admissionv1.Create, "pods"),
				// kubectl debug: ephemeral containers are judged as
				// PodSecurityPolicy judged them.
				podRule(admissionv1.Update, "pods/ephemeralcontainers"),
			}},
			Variables: vars,
			Validations: []admissionv1.Validation{{
				Expression: or(decide...),
				// A message expression has no authorizer, so it cannot
				// list the policies the requester may use.
				MessageExpression: "'no PodSecurityPolicy that ' + request.userInfo.username + ' or service account ' + object.spec.?serviceAccountName.orValue('default') + ' may use admits the pod'",
				Reason:            ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
	r.Binding = &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: ReplacementName},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        ReplacementName,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	if !mutating {
		r.FieldsToSet = map[string][]string{}
		for _, w := range report.Workloads {
			if len(w.Changes) > 0 {
				r.FieldsToSet[w.Kind+"/"+w.Namespace+"/"+w.Name] = w.Changes
			}
		}
		return r, nil
	}
	// PodSecurityPolicy's choice, as a variable each MutatingAdmissionPolicy
	// reads: a policy that takes the pod as it is wins; else the first, by
	// name, whose defaults make the pod valid.
	mvars := slices.Clone(vars)
	var asIs []string
	for i, p := range policies {
		id := ids[i]
		mvars = append(mvars,
			admissionv1.Variable{Name: id + "_mutates", Expression: celMutates(p)},
			admissionv1.Variable{Name: id + "_defaulted", Expression: celValid(p, true)},
		)
		asIs = append(asIs, fmt.Sprintf("!variables.%s_mutates && variables.%s_valid && variables.%s_granted", id, id, id))
	}
	var earlier []string
	for i, p := range policies {
		id := ids[i]
		wins := fmt.Sprintf("variables.%s_mutates && variables.%s_defaulted && variables.%s_granted", id, id, id)
		chosen := and("!("+or(asIs...)+")", wins, "!("+or(earlier...)+")")
		earlier = append(earlier, wins)
		var mutations []admissionv1.Mutation
		if patch := celPatches(p); patch != "" {
			mutations = append(mutations, admissionv1.Mutation{
				PatchType: admissionv1.PatchTypeJSONPatch,
				JSONPatch: &admissionv1.JSONPatch{Expression: fmt.Sprintf("variables.chosen ? %s : []", patch)},
			})
		}
		if apply := celDefaults(p); apply != "" {
			mutations = append(mutations, admissionv1.Mutation{
				PatchType:          admissionv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionv1.ApplyConfiguration{Expression: fmt.Sprintf("variables.chosen ? %s : Object{}", apply)},
			})
		}
		if len(mutations) == 0 {
			continue
		}
		name := ReplacementName + "-" + strings.ToLower(strings.ReplaceAll(id, "_", "-"))
		r.Mutating = append(r.Mutating, &admissionv1.MutatingAdmissionPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"podsecuritypolicy.turnstile.dev/policy": p.Name}},
			Spec: admissionv1.MutatingAdmissionPolicySpec{
				FailurePolicy:      ptr.To(admissionv1.Fail),
				ReinvocationPolicy: admissionv1.NeverReinvocationPolicy,
				MatchConstraints:   &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{podRule(admissionv1.Create, "pods")}},
				Variables:          append(slices.Clone(mvars), admissionv1.Variable{Name: "chosen", Expression: chosen}),
				Mutations:          mutations,
			},
		})
		r.MutatingBindings = append(r.MutatingBindings, &admissionv1.MutatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicyBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name},
		})
	}
	return r, nil
}

func podRule(op admissionv1.OperationType, resource string) admissionv1.NamedRuleWithOperations {
	return admissionv1.NamedRuleWithOperations{RuleWithOperations: admissionv1.RuleWithOperations{
		Operations: []admissionv1.OperationType{op},
		Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{resource}},
	}}
}

// serviceAccountExpression is the pod's service account, whose grants
// count as the requester's do.
const serviceAccountExpression = "authorizer.serviceAccount(request.namespace, object.spec.?serviceAccountName.orValue('default'))"

// ExactPolicies is how many policies a pod may pass the checks of, none of
// them usable by its principals, before the one that admits it, while the
// replacement's authorizer calls stay within CEL's budget for one request:
// at most 4 calls a policy, each costing 350,000 of the 10,000,000
// (k8s.io/apiserver's cel library and RuntimeCELCostBudget), and 4 left for
// the policy that admits.
const ExactPolicies = (celconfig.RuntimeCELCostBudget/authorizerCallCost - 4) / 4

// authorizerCallCost is what CEL charges for an authorizer's check().
const authorizerCallCost = 350_000

// grantedVariables hold when the requester or the pod's service account
// (with its two groups) may use the policy in the request's namespace, as
// PodSecurityPolicy asks: verb use on podsecuritypolicies in the groups
// policy or extensions. The authorizer answers at every request. An
// authorizer call costs 350,000 of CEL's cost units, and one expression may
// spend 1,000,000, so each principal's two calls are a variable of their
// own; a request may spend 10,000,000 in all (docs/psp-migration.md).
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
// the mutating policies first, so that no pod is judged by the validating
// policy without the defaults it expects, then the validating policy, then
// the namespaces' labels. Where nothing sets the defaults, a comment says
// per workload what its manifest must set.
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
	var objects []any
	for i := range r.Mutating {
		objects = append(objects, r.Mutating[i], r.MutatingBindings[i])
	}
	objects = append(objects, r.Validating, r.Binding)
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
