// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"

	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/psptesting"
)

// The requester's rules path (it lists each identity's rules and asks the
// authorizer only where a rule grants the use) decides exactly as asking the authorizer every time, for
// random RBAC grants of every shape: verbs, API groups, resources and
// resource names with wildcards, bound by Role and ClusterRole, to the
// service account, the user or a group, in the pod's namespace, another,
// or cluster-wide.
func TestRequesterRulesDecideAsTheAuthorizer(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 24))
	pick := func(options ...[]string) []string { return options[rng.IntN(len(options))] }
	names := []string{"a", "b", "c", "d"}
	for cluster := range 300 {
		var objects []interface{}
		for i := range 1 + rng.IntN(5) {
			rule := rbacv1.PolicyRule{
				Verbs:         pick([]string{"use"}, []string{"*"}, []string{"get", "list"}, []string{"use", "get"}),
				APIGroups:     pick([]string{"policy"}, []string{"extensions"}, []string{"*"}, []string{"apps"}, []string{"policy", "extensions"}),
				Resources:     pick([]string{"podsecuritypolicies"}, []string{"*"}, []string{"pods"}, []string{"podsecuritypolicies/status"}),
				ResourceNames: pick(nil, []string{"a"}, []string{"b", "c"}, []string{"d", "a"}),
			}
			subject := pick(
				[]string{rbacv1.ServiceAccountKind, "app", "ns"},
				[]string{rbacv1.ServiceAccountKind, "other", "ns"},
				[]string{rbacv1.UserKind, "alice", ""},
				[]string{rbacv1.GroupKind, "team", ""},
				[]string{rbacv1.GroupKind, "system:serviceaccounts:ns", ""},
			)
			s := rbacv1.Subject{Kind: subject[0], Name: subject[1], Namespace: subject[2]}
			if s.Kind != rbacv1.ServiceAccountKind {
				s.APIGroup = rbacv1.GroupName
			}
			name := fmt.Sprintf("r%d", i)
			switch rng.IntN(3) {
			case 0: // a ClusterRole bound cluster-wide
				objects = append(objects, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{rule}},
					&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: []rbacv1.Subject{s},
						RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}})
			default: // a Role bound in the pod's namespace or another
				ns := pick([]string{"ns"}, []string{"elsewhere"})[0]
				objects = append(objects, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: []rbacv1.PolicyRule{rule}},
					&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Subjects: []rbacv1.Subject{s},
						RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}})
			}
		}
		authz := psptesting.RBACAuthorizer(t, objects...)
		shared := newRulesCache() // across the identities, as across requests
		policies := newPolicyCache()
		for i, name := range append(names, "e") { // e: named by no rule
			policies.set(psptesting.TeamPolicy(name, int64(10000+1000*i)))
		}
		for _, u := range []user.Info{
			&user.DefaultInfo{Name: "alice", Groups: []string{"team"}},
			&user.DefaultInfo{Name: "bob"},
			nil,
		} {
			for _, sa := range []string{"app", ""} {
				// plain's authorizer cannot list rules, so it is asked every time.
				plain := withResolver(&requester{ctx: context.Background(), authz: authorizeOnly{authz}, cache: newRulesCache(), namespace: "ns", user: u, serviceAccount: sa})
				ruled := withResolver(&requester{ctx: context.Background(), authz: authz, cache: newRulesCache(), namespace: "ns", user: u, serviceAccount: sa})
				for _, name := range names {
					want := plain.mayUse(name)
					// A second request reads the rules the first one cached.
					for _, r := range []*requester{
						ruled,
						withResolver(&requester{ctx: context.Background(), authz: authz, cache: shared, namespace: "ns", user: u, serviceAccount: sa}),
						withResolver(&requester{ctx: context.Background(), authz: authz, cache: shared, namespace: "ns", user: u, serviceAccount: sa}),
					} {
						calls := r.calls
						if got := r.mayUse(name); got != want {
							t.Fatalf("cluster %d, user %v, service account %q, policy %s (shared cache %v): rules say %v, the authorizer %v\n%s", cluster, u, sa, name, r.cache == shared, got, want, describe(objects))
						}
						// The point of the rules: a policy nobody may use costs no authorizer call.
						if !want && r.calls != calls {
							t.Fatalf("cluster %d, user %v, service account %q, policy %s (shared cache %v): %d authorizer calls for a policy no rule grants\n%s", cluster, u, sa, name, r.cache == shared, r.calls-calls, describe(objects))
						}
					}
				}
				// choose looks only at the candidates: they must hold every
				// policy the requester may use, in name order.
				candidates := withResolver(&requester{ctx: context.Background(), authz: authz, cache: shared, namespace: "ns", user: u, serviceAccount: sa}).candidates(policies.snapshot())
				var tried []string
				for _, pr := range candidates {
					tried = append(tried, pr.Name())
				}
				if !slices.IsSorted(tried) {
					t.Fatalf("cluster %d: candidates %v are not in name order", cluster, tried)
				}
				for _, name := range append(names, "e") {
					if plain.mayUse(name) && !slices.Contains(tried, name) {
						t.Fatalf("cluster %d, user %v, service account %q: candidates %v leave out %s, which the authorizer allows\n%s", cluster, u, sa, tried, name, describe(objects))
					}
				}
				if listed := slices.ContainsFunc(ruled.identities(), func(id identity) bool { return id.rules != nil && id.rules != unlisted }); !listed && (sa != "" || u != nil) {
					t.Fatalf("cluster %d: the rules were never listed", cluster)
				}
			}
		}
	}
}

func describe(objects []interface{}) string {
	var b strings.Builder
	for _, o := range objects {
		fmt.Fprintf(&b, "%+v\n", o)
	}
	return b.String()
}

// A grant in the rules is confirmed by the authorizer, so an authorizer
// that denies (a webhook, AlwaysDeny first in the chain) still decides;
// rules that cannot be listed completely mean asking the authorizer.
func TestRequesterRulesDoNotOverruleTheAuthorizer(t *testing.T) {
	grants := psptesting.RBACAuthorizer(t,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "use-all"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"policy"}, Resources: []string{"podsecuritypolicies"}, Verbs: []string{"use"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "use-all"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "use-all"}},
	).(*rbac.RBACAuthorizer)
	alice := &user.DefaultInfo{Name: "alice"}
	denying := resolverAuthorizer{RuleResolver: grants, authorize: func(a authorizer.Attributes) authorizer.Decision {
		if a.GetName() == "locked" {
			return authorizer.DecisionDeny
		}
		return authorizer.DecisionAllow
	}}
	r := withResolver(&requester{ctx: context.Background(), authz: denying, cache: newRulesCache(), namespace: "ns", user: alice})
	if r.mayUse("locked") || !r.mayUse("open") {
		t.Error("the rules overruled the authorizer's decision")
	}
	incomplete := resolverAuthorizer{RuleResolver: incompleteRules{}, authorize: func(authorizer.Attributes) authorizer.Decision { return authorizer.DecisionAllow }}
	r = withResolver(&requester{ctx: context.Background(), authz: incomplete, cache: newRulesCache(), namespace: "ns", user: alice})
	if !r.mayUse("anything") || r.ruledOut("anything") {
		t.Error("incomplete rules were taken as complete")
	}
}

// candidates narrows the policies to the ones named in grants, and only
// when both identities' rules are complete and none grants every policy.
func TestCandidates(t *testing.T) {
	useRole := func(name string, policies ...string) []interface{} {
		return []interface{}{
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{"policy"}, Resources: []string{"podsecuritypolicies"}, Verbs: []string{"use"}, ResourceNames: policies}}},
		}
	}
	bind := func(role string, subject rbacv1.Subject) interface{} {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: "ns"}, Subjects: []rbacv1.Subject{subject},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
	}
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "app", Namespace: "ns"}
	alice := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}
	named := append(useRole("sa-uses", "p3", "p1", "gone"), useRole("alice-uses", "p3", "p4")...)
	tests := []struct {
		name    string
		authz   func() authorizer.Authorizer
		wantAll bool
		want    []string
	}{{
		name: "named grants: their union, sorted, without policies that do not exist",
		authz: func() authorizer.Authorizer {
			return psptesting.RBACAuthorizer(t, append(named, bind("sa-uses", sa), bind("alice-uses", alice))...)
		},
		want: []string{"p1", "p3", "p4"},
	}, {
		name:  "no grant: nothing to try",
		authz: func() authorizer.Authorizer { return psptesting.RBACAuthorizer(t, named...) },
		want:  []string{},
	}, {
		name: "a grant of every policy: all",
		authz: func() authorizer.Authorizer {
			return psptesting.RBACAuthorizer(t, append(append(named, useRole("all")...), bind("sa-uses", sa), bind("all", alice))...)
		},
		wantAll: true,
	}, {
		name: "an authorizer that cannot list rules: all",
		authz: func() authorizer.Authorizer {
			return authorizeOnly{psptesting.RBACAuthorizer(t, append(named, bind("sa-uses", sa))...)}
		},
		wantAll: true,
	}, {
		name: "incomplete rules: all",
		authz: func() authorizer.Authorizer {
			return resolverAuthorizer{RuleResolver: incompleteRules{}, authorize: func(authorizer.Attributes) authorizer.Decision { return authorizer.DecisionDeny }}
		},
		wantAll: true,
	}}
	policies := newPolicyCache()
	for i := range 6 {
		policies.set(psptesting.TeamPolicy(fmt.Sprintf("p%d", i), int64(10000+1000*i)))
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := withResolver(&requester{ctx: context.Background(), authz: tc.authz(), cache: newRulesCache(), namespace: "ns", user: &user.DefaultInfo{Name: "alice"}, serviceAccount: "app"})
			got := []string{}
			for _, pr := range r.candidates(policies.snapshot()) {
				got = append(got, pr.Name())
			}
			want := tc.want
			if tc.wantAll {
				want = []string{"p0", "p1", "p2", "p3", "p4", "p5"}
			}
			if !slices.Equal(got, want) {
				t.Errorf("candidates %v, want %v", got, want)
			}
		})
	}
}

// authorizeOnly hides an authorizer's rule resolver.
type authorizeOnly struct{ authorizer.Authorizer }

type resolverAuthorizer struct {
	authorizer.RuleResolver
	authorize func(authorizer.Attributes) authorizer.Decision
}

func (r resolverAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	return r.authorize(a), "", nil
}

// incompleteRules lists nothing and says so, as a webhook authorizer does.
type incompleteRules struct{}

func (incompleteRules) RulesFor(context.Context, user.Info, string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return nil, nil, true, nil
}

// withResolver sets what SetAuthorizer sets in the plugin: the requester's
// authorizer as a rule resolver, when it is one.
func withResolver(r *requester) *requester {
	r.resolver, _ = r.authz.(authorizer.RuleResolver)
	return r
}
