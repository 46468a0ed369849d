// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"context"
	"slices"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1helpers "k8s.io/kubernetes/pkg/apis/rbac/v1"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// requester answers whether the pod's service account or the requesting
// user may use a policy.
//
// v1.24 asked the authorizer about every policy it tried: up to four calls
// (two identities, two API groups) each, and with the RBAC authorizer each
// call that is not allowed scans every binding. The requester instead
// lists each identity's rules (authorizer.RuleResolver, which upstream's
// authorizer chain implements; kept across requests by rulesCache) and
// asks the authorizer only where a rule grants the use, once per identity,
// namespace and policy until an RBAC event (rulesCache): a grant is
// confirmed by the authorizer, so a denying authorizer still has its say;
// where no rule grants it the authorizer would not allow it either. A
// revoked grant stops counting when the RBAC informers' event reaches the
// cache, a moment after the authorizer's own listers have it. Rules that
// cannot be listed completely (a webhook or a node in the chain) mean
// asking the authorizer every time, as v1.24 did.
type requester struct {
	ctx            context.Context
	authz          authorizer.Authorizer
	resolver       authorizer.RuleResolver // authz, when it can list rules
	namespace      string
	user           user.Info
	serviceAccount string
	// idStore holds the service account and the user, built from the
	// two above on first use; identities slices it to those the request
	// has. No pointer into the requester is kept in it, so that it can
	// live on its caller's stack.
	idStore  [2]identity
	idsBuilt bool
	calls    int         // authorizer calls so far, which the tests count
	cache    *rulesCache // rules listed, and answers given, for earlier requests
}

// identity is the pod's service account or the requesting user, as the
// requester knows it within one request. Its key (requester.key) is all
// the rules cache needs, so the service account's user.Info, which only
// the authorizer and the rule resolver read, is built only when one of
// them is asked: in the steady state the cache answers and a request
// builds none.
type identity struct {
	user  bool           // the requesting user, else the pod's service account
	info  user.Info      // nil for a service account until built
	rules *identityRules // listed or taken from the cache on first use
}

// identityRules are what an identity's rules in the namespace grant, per
// API group: the use of every policy, or of the policies named. When
// complete is false the rules could not all be listed and the authorizer
// must be asked.
type identityRules struct {
	complete bool
	all      [len(policyGroups)]bool
	names    [len(policyGroups)]sets.Set[string]

	// answers are the authorizer's answers about policies that the rules
	// grant, per API group, kept as long as the rules are (rulesCache.keep).
	mu      sync.Mutex
	answers [len(policyGroups)]map[string]bool
}

func (e *Engine) newRequester(ctx context.Context, authz Authorizer, namespace string, u user.Info, pod *api.Pod) requester {
	return requester{ctx: ctx, authz: authz.authz, resolver: authz.resolver, cache: e.rules, namespace: namespace, user: u, serviceAccount: pod.Spec.ServiceAccountName}
}

// mayUse reports whether the service account or the user is allowed the
// verb use on the policy, in API group policy or (for old Roles)
// extensions, in the pod's namespace. v1.24 asked about the service
// account in both groups, then the user; the answer is the same in any
// order, and asking both identities about group policy first saves an
// authorizer call (an RBAC scan of every binding) for the common grants.
func (r *requester) mayUse(name string) bool {
	for group := range policyGroups {
		ids := r.identities()
		for i := range ids {
			if r.allowed(&ids[i], group, name) {
				return true
			}
		}
	}
	return false
}

// ruledOut reports, without asking the authorizer, that neither identity
// may use the policy: only once their rules are listed, completely, and
// none grants the use. choose asks it before copying a pod for a policy.
func (r *requester) ruledOut(name string) bool {
	for group := range policyGroups {
		ids := r.identities()
		for i := range ids {
			if rules := r.rulesFor(&ids[i]); !rules.complete || rules.grant(group, name) {
				return false
			}
		}
	}
	return true
}

// candidates narrows the policies to those that the identities' rules
// grant, when both identities' rules are listed completely and neither
// grants every policy: the authorizer would refuse any other, so choose
// need not look at them, and a cluster with a policy per tenant costs a
// pod creation the few policies its requester may use, not all of them.
// Otherwise every policy is a candidate and mayUse decides, as in v1.24.
func (r *requester) candidates(policies *policySnapshot) []*Provider {
	ids := r.identities()
	for i := range ids {
		rules := r.rulesFor(&ids[i])
		if !rules.complete {
			return policies.sorted
		}
		if slices.Contains(rules.all[:], true) {
			return policies.sorted
		}
	}
	granted := sets.New[string]()
	for i := range ids {
		for _, names := range ids[i].rules.names {
			for name := range names {
				granted.Insert(name)
			}
		}
	}
	if len(granted) >= len(policies.sorted) {
		return policies.sorted
	}
	narrowed := make([]*Provider, 0, len(granted))
	for name := range granted {
		if pr, ok := policies.byName[name]; ok {
			narrowed = append(narrowed, pr)
		}
	}
	sortByName(narrowed)
	return narrowed
}

// identities are the service account, then the user, those of them the
// request has.
func (r *requester) identities() []identity {
	if !r.idsBuilt {
		r.idsBuilt = true
		r.idStore = [2]identity{{}, {user: true, info: r.user}}
	}
	from, to := 0, 2
	if r.serviceAccount == "" {
		from = 1
	}
	if r.user == nil {
		to = 1
	}
	return r.idStore[from:to]
}

// userInfo is the identity as the authorizer and the rule resolver see it.
func (r *requester) userInfo(id *identity) user.Info {
	if id.info == nil {
		id.info = serviceaccount.UserInfo(r.namespace, r.serviceAccount, "")
	}
	return id.info
}

// policyGroups are the API groups in which a grant of use counts.
var policyGroups = [...]string{"policy", "extensions"}

// allowed reports whether the identity may use the policy in
// policyGroups[group].
func (r *requester) allowed(id *identity, group int, name string) bool {
	// Where the rules could all be listed (RBAC and nothing that cannot
	// be), the authorizer's answer is kept with them until an RBAC event
	// (rulesCache); a webhook's answers are never kept here.
	rules := r.rulesFor(id)
	if rules.complete {
		if !rules.grant(group, name) {
			return false
		}
		if allowed, ok := rules.answer(group, name); ok {
			return allowed
		}
	}
	r.calls++
	u := r.userInfo(id)
	decision, reason, err := r.authz.Authorize(r.ctx, authorizer.AttributesRecord{
		User:            u,
		Verb:            "use",
		Namespace:       r.namespace,
		APIGroup:        policyGroups[group],
		APIVersion:      "*",
		Resource:        "podsecuritypolicies",
		Name:            name,
		ResourceRequest: true,
	})
	if err != nil {
		klog.V(5).InfoS("Cannot authorize the use of a PodSecurityPolicy", "policy", name, "user", u.GetName(), "reason", reason, "err", err)
	} else if rules.complete {
		r.cache.keep(rules, group, name, decision == authorizer.DecisionAllow)
	}
	return decision == authorizer.DecisionAllow
}

// grant reports whether the rules grant the use of the policy in
// policyGroups[group].
func (rules *identityRules) grant(group int, name string) bool {
	return rules.all[group] || rules.names[group].Has(name)
}

// answer returns the authorizer's answer kept about the use of the policy
// in policyGroups[group], if it was asked.
func (rules *identityRules) answer(group int, name string) (allowed, ok bool) {
	rules.mu.Lock()
	defer rules.mu.Unlock()
	allowed, ok = rules.answers[group][name]
	return allowed, ok
}

// newIdentityRules sums up rules with RBAC's own matching (the helpers its
// RuleAllows uses): verb use, resource podsecuritypolicies, each policy
// group, and resource names (none means every policy).
func newIdentityRules(resourceRules []authorizer.ResourceRuleInfo, complete bool) *identityRules {
	rules := &identityRules{complete: complete}
	for _, info := range resourceRules {
		rule := &rbacv1.PolicyRule{Verbs: info.GetVerbs(), APIGroups: info.GetAPIGroups(), Resources: info.GetResources(), ResourceNames: info.GetResourceNames()}
		if !rbacv1helpers.VerbMatches(rule, "use") || !rbacv1helpers.ResourceMatches(rule, "podsecuritypolicies", "") {
			continue
		}
		for group, name := range policyGroups {
			switch {
			case !rbacv1helpers.APIGroupMatches(rule, name):
			case len(rule.ResourceNames) == 0:
				rules.all[group] = true
			default:
				if rules.names[group] == nil {
					rules.names[group] = sets.New[string]()
				}
				rules.names[group].Insert(rule.ResourceNames...)
			}
		}
	}
	return rules
}

// rulesFor returns the identity's rules: listed once per identity and
// namespace and kept in the cache until an RBAC object changes, or
// unlisted when the authorizer cannot list rules. A request asks for them
// many times, so the first answer is kept in the identity.
func (r *requester) rulesFor(id *identity) *identityRules {
	if id.rules != nil {
		return id.rules
	}
	if r.resolver == nil {
		id.rules = unlisted
	} else {
		var buf [128]byte // the key, on the stack when it fits
		key := r.key(id, buf[:0])
		if id.rules = r.cache.get(key); id.rules == nil {
			gen := r.cache.current()
			id.rules = listRules(r.ctx, r.resolver, r.userInfo(id), r.namespace)
			r.cache.put(key, gen, id.rules)
		}
	}
	return id.rules
}

// key appends the identity's rules cache key to buf.
func (r *requester) key(id *identity, buf []byte) identityKey {
	if id.user {
		return userKey(buf, r.user, r.namespace)
	}
	return serviceAccountKey(buf, r.namespace, r.serviceAccount)
}

// unlisted stands for the rules of an identity that the authorizer
// cannot list: incomplete, so the authorizer is asked every time.
var unlisted = &identityRules{}

func listRules(ctx context.Context, resolver authorizer.RuleResolver, u user.Info, namespace string) *identityRules {
	resourceRules, _, incomplete, err := resolver.RulesFor(ctx, u, namespace)
	return newIdentityRules(resourceRules, !incomplete && err == nil)
}
