// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package pspmigration

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"
	psaapi "k8s.io/pod-security-admission/api"

	pspengine "github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy"
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
// granted to (in its namespaces, or, for a grant everywhere, in the
// namespaces of the report where that differs: namespacesToTry), both
// ways, on every core. progress, when not nil, is told every few seconds
// how many of how many creations are decided: a cluster with many
// policies takes minutes (docs/psp-migration.md).
func Verify(ctx context.Context, decider *pspengine.Decider, judge *Judge, rbac *RBAC, workloads []*Workload, namespaces []string, progress func(done, total int)) (*Verification, error) {
	var cases []creation
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
		cases = append(cases, creation{w.Ref(), w.Namespace, requester, w.Creator != "", pod})
	}
	grants := map[string]Grants{}
	for _, p := range decider.Policies() {
		grants[p.Name] = rbac.Grants(ctx, p.Name)
	}
	for _, p := range decider.Policies() {
		granted := grants[p.Name]
		type scope struct {
			namespace string
			principal Principal
		}
		var scopes []scope
		for _, principal := range granted.Cluster {
			for _, ns := range namespacesToTry(principal, grants, namespaces, judge.level) {
				scopes = append(scopes, scope{ns, principal})
			}
		}
		for ns, principals := range granted.Namespaces {
			for _, principal := range principals {
				scopes = append(scopes, scope{ns, principal})
			}
		}
		slices.SortFunc(scopes, func(a, b scope) int {
			return strings.Compare(a.namespace+"/"+string(a.principal), b.namespace+"/"+string(b.principal))
		})
		for _, sample := range Corpus(p) {
			for _, s := range scopes {
				cases = append(cases, creation{fmt.Sprintf("policy %q: %s", p.Name, sample.Name), s.namespace, requesterOf(s.principal), true, sample.Pod})
			}
		}
	}
	return decideAll(ctx, decider, judge, cases, progress)
}

// creation is one pod created, decided both ways: by requester (known:
// PodSecurityPolicy counts its grants; else only the pod's service
// account's, as for a bare pod whose creator nobody recorded).
type creation struct {
	name, namespace string
	requester       user.Info
	known           bool
	pod             *corev1.Pod
}

// decideAll decides the creations on every core, and lists the
// disagreements in the creations' order.
func decideAll(ctx context.Context, decider *pspengine.Decider, judge *Judge, cases []creation, progress func(done, total int)) (*Verification, error) {
	found := make([]*Disagreement, len(cases))
	next, done := atomic.Int64{}, atomic.Int64{}
	if progress != nil {
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for {
				select {
				case <-tick.C:
					progress(int(done.Load()), len(cases))
				case <-stop:
					return
				}
			}
		}()
	}
	g, ctx := errgroup.WithContext(ctx)
	for range runtime.GOMAXPROCS(0) {
		g.Go(func() error {
			for i := int(next.Add(1) - 1); i < len(cases); i = int(next.Add(1) - 1) {
				c := cases[i]
				d, err := compare(ctx, decider, judge, c.name, c.namespace, c.requester, c.known, c.pod)
				if err != nil {
					return err
				}
				found[i] = d
				done.Add(1)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	v := &Verification{Cases: len(cases)}
	for _, d := range found {
		if d != nil {
			v.Disagreements = append(v.Disagreements, *d)
		}
	}
	return v, nil
}

// progressEvery is how often Verify tells its progress.
const progressEvery = 5 * time.Second

// namespacesToTry are where principal, granted a policy everywhere, is
// tried: its own namespace (a service account's), and every namespace
// where a grant counts for it or for the corpus pods' service account
// ("default"), so that another policy may win there; of the others, which
// differ only in their Pod Security Admission level, one per level.
func namespacesToTry(principal Principal, grants map[string]Grants, namespaces []string, level func(string) psaapi.Level) []string {
	own, _ := principalNamespace(principal)
	var out []string
	seenLevel := map[psaapi.Level]bool{}
	for _, ns := range namespaces {
		if ns == own || grantedIn(ns, grants, requesterOf(principal), serviceaccount.UserInfo(ns, "default", "")) {
			out = append(out, ns)
			continue
		}
		if l := level(ns); !seenLevel[l] {
			seenLevel[l] = true
			out = append(out, ns)
		}
	}
	return out
}

// grantedIn reports whether a grant in namespace ns, of any policy, names
// one of who, or a group of theirs.
func grantedIn(ns string, grants map[string]Grants, who ...user.Info) bool {
	for _, g := range grants {
		for _, p := range g.Namespaces[ns] {
			for _, u := range who {
				if p == User(u.GetName()) || slices.ContainsFunc(u.GetGroups(), func(group string) bool { return p == Group(group) }) {
					return true
				}
			}
		}
	}
	return false
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

// compare decides one creation both ways, and returns how they disagree,
// or nil.
func compare(ctx context.Context, decider *pspengine.Decider, judge *Judge, name, namespace string, requester user.Info, known bool, pod *corev1.Pod) (*Disagreement, error) {
	if pod.Spec.ServiceAccountName == "" {
		// As the ServiceAccount admission plugin sets it, before either.
		pod = pod.DeepCopy()
		pod.Spec.ServiceAccountName = "default"
	}
	internal := &api.Pod{}
	if err := corev1conversion.Convert_v1_Pod_To_core_Pod(pod, internal, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	pspRequester := requester
	if !known {
		pspRequester = nil // only the pod's service account counts
	}
	d, err := decider.Decide(ctx, namespace, pspRequester, internal)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r, err := judge.Decide(ctx, namespace, requester, pod)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
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
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		admitted := internal
		if d.Pod != nil {
			admitted = d.Pod
		}
		admitted = admitted.DeepCopy()
		admitted.Namespace = namespace
		// As PodSecurityPolicy's Admit records its choice.
		if admitted.Annotations == nil {
			admitted.Annotations = map[string]string{}
		}
		admitted.Annotations[pspengine.ValidatedPSPAnnotation] = d.Policy
		if got.Fields = pspengine.ChangedFields(admitted, mutated); len(got.Fields) == 0 {
			return nil, nil
		}
		got.Replacement = "admitted, with other values"
	default:
		return nil, nil
	}
	return &got, nil
}
