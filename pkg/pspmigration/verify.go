package pspmigration

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"
	psaapi "k8s.io/pod-security-admission/api"

	pspadmission "github.com/turnstile-k8s/turnstile/plugin/pkg/admission/security/podsecuritypolicy"
)

// Verification compares PodSecurityPolicy's decisions with the
// replacement's.
type Verification struct {
	// Cases is how many pod creations were decided both ways.
	Cases         int            `json:"cases"`
	Disagreements []Disagreement `json:"disagreements,omitempty"`
}

// Avoidable counts the disagreements the replacement should not have.
func (v *Verification) Avoidable() int {
	n := 0
	for _, d := range v.Disagreements {
		if d.Unavoidable == "" {
			n++
		}
	}
	return n
}

// Disagreement is one pod the two decide differently.
type Disagreement struct {
	// Case is the workload (kind/namespace/name) or the corpus sample
	// (policy "NAME": what it tries).
	Case      string `json:"case"`
	Namespace string `json:"namespace"`
	Requester string `json:"requester"`
	// PodSecurityPolicy and Replacement are each one's decision:
	// "admitted by POLICY", "admitted" or the refusal, and where both
	// admit, the fields whose values differ.
	PodSecurityPolicy string   `json:"podSecurityPolicy"`
	Replacement       string   `json:"replacement"`
	Fields            []string `json:"fields,omitempty"`
	// Unavoidable says why no replacement could agree, when none could.
	Unavoidable string `json:"unavoidable,omitempty"`
}

// Verify decides every workload, as its controller creates its pods, and
// every corpus sample of every policy, as each principal the policy is
// granted to (in its namespaces, or in every namespace of the report for
// a grant everywhere), both ways.
func Verify(ctx context.Context, decider *pspadmission.Decider, judge *Judge, rbac *RBAC, workloads []*Workload, namespaces []string) (*Verification, error) {
	v := &Verification{}
	for _, w := range workloads {
		pod := &corev1.Pod{ObjectMeta: w.Template.ObjectMeta, Spec: w.Template.Spec}
		if pod.Name == "" {
			pod.Name = w.Name
		}
		requester := user.Info(&user.DefaultInfo{Name: "kubectl-psp:unknown-creator"})
		if w.Creator != "" {
			ns, name, _ := serviceaccount.SplitUsername(w.Creator)
			sa := serviceaccount.UserInfo(ns, name, "")
			requester = &user.DefaultInfo{Name: sa.GetName(), Groups: append(sa.GetGroups(), user.AllAuthenticated)}
		}
		if err := v.compare(ctx, decider, judge, w.Ref(), w.Namespace, requester, w.Creator != "", pod); err != nil {
			return nil, err
		}
	}
	grants := map[string]Grants{}
	for _, p := range decider.Policies() {
		grants[p.Name] = rbac.Grants(ctx, p.Name)
	}
	everywhere := namespacesToTry(grants, namespaces, judge.levels)
	for _, p := range decider.Policies() {
		grants := grants[p.Name]
		type scope struct {
			namespace string
			principal Principal
		}
		var scopes []scope
		for _, principal := range grants.Cluster {
			for _, ns := range everywhere {
				scopes = append(scopes, scope{ns, principal})
			}
		}
		for ns, principals := range grants.Namespaces {
			for _, principal := range principals {
				scopes = append(scopes, scope{ns, principal})
			}
		}
		slices.SortFunc(scopes, func(a, b scope) int {
			return strings.Compare(a.namespace+"/"+string(a.principal), b.namespace+"/"+string(b.principal))
		})
		for _, sample := range Corpus(p) {
			for _, s := range scopes {
				if err := v.compare(ctx, decider, judge, fmt.Sprintf("policy %q: %s", p.Name, sample.Name), s.namespace, requesterOf(s.principal), true, sample.Pod); err != nil {
					return nil, err
				}
			}
		}
	}
	return v, nil
}

// namespacesToTry are where a principal granted a policy everywhere is
// tried: every namespace where a grant names it (a RoleBinding, or a
// service account of it), and of the others, which differ only in their
// Pod Security Admission level, one per level.
func namespacesToTry(grants map[string]Grants, namespaces []string, levels map[string]psaapi.Level) []string {
	named := map[string]bool{}
	for _, g := range grants {
		for ns := range g.Namespaces {
			named[ns] = true
		}
		for _, p := range g.Cluster {
			if ns, ok := principalNamespace(p); ok {
				named[ns] = true
			}
		}
	}
	var out []string
	seenLevel := map[psaapi.Level]bool{}
	for _, ns := range namespaces {
		if named[ns] {
			out = append(out, ns)
			continue
		}
		if level := levels[ns]; !seenLevel[level] {
			seenLevel[level] = true
			out = append(out, ns)
		}
	}
	return out
}

// principalNamespace is the namespace a service account principal, or
// a namespace's service accounts group, belongs to.
func principalNamespace(p Principal) (string, bool) {
	if name, ok := strings.CutPrefix(string(p), "user:"); ok {
		ns, _, err := serviceaccount.SplitUsername(name)
		return ns, err == nil
	}
	ns, ok := strings.CutPrefix(string(p), "group:"+serviceaccount.ServiceAccountGroupPrefix)
	return ns, ok && ns != ""
}

// requesterOf is a user who is the principal, or a member of it.
func requesterOf(p Principal) user.Info {
	if name, ok := strings.CutPrefix(string(p), "user:"); ok {
		u := &user.DefaultInfo{Name: name, Groups: []string{user.AllAuthenticated}}
		if ns, sa, err := serviceaccount.SplitUsername(name); err == nil {
			u.Groups = append(serviceaccount.UserInfo(ns, sa, "").GetGroups(), user.AllAuthenticated)
		}
		return u
	}
	group := strings.TrimPrefix(string(p), "group:")
	return &user.DefaultInfo{Name: "kubectl-psp:member-of:" + group, Groups: []string{group, user.AllAuthenticated}}
}

// compare decides one creation both ways and records a disagreement.
func (v *Verification) compare(ctx context.Context, decider *pspadmission.Decider, judge *Judge, name, namespace string, requester user.Info, known bool, pod *corev1.Pod) error {
	v.Cases++
	if pod.Spec.ServiceAccountName == "" {
		// As the ServiceAccount admission plugin sets it, before either.
		pod = pod.DeepCopy()
		pod.Spec.ServiceAccountName = "default"
	}
	internal := &api.Pod{}
	if err := corev1conversion.Convert_v1_Pod_To_core_Pod(pod, internal, nil); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	pspRequester := requester
	if !known {
		pspRequester = nil // only the pod's service account counts
	}
	d, err := decider.Decide(ctx, namespace, pspRequester, internal)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	r, err := judge.Decide(ctx, namespace, requester, pod)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	got := Disagreement{Case: name, Namespace: namespace, Requester: requester.GetName(), Replacement: "admitted"}
	if d.Refusal != "" {
		got.PodSecurityPolicy = d.Refusal
	} else {
		got.PodSecurityPolicy = "admitted by " + d.Policy
	}
	if r.Refusal != "" {
		got.Replacement = r.Refusal
	}
	switch {
	case (d.Refusal == "") != (r.Refusal == ""):
		if d.Refusal == "" && strings.HasPrefix(r.Refusal, "PodSecurity ") {
			got.Unavoidable = fmt.Sprintf("Pod Security Admission sets one level per namespace, for everyone, and %s may use %q, which allows more", requester.GetName(), d.Policy)
		}
	case d.Refusal == "":
		// Both admit: the pods must come out the same.
		mutated := &api.Pod{}
		if err := corev1conversion.Convert_v1_Pod_To_core_Pod(r.Pod, mutated, nil); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		admitted := internal
		if d.Pod != nil {
			admitted = d.Pod
		}
		admitted = admitted.DeepCopy()
		admitted.Namespace = namespace
		if got.Fields = pspadmission.ChangedFields(admitted, mutated); len(got.Fields) == 0 {
			return nil
		}
		got.Replacement = "admitted, with other values"
	default:
		return nil
	}
	v.Disagreements = append(v.Disagreements, got)
	return nil
}
