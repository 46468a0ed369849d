// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"context"
	"fmt"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"

	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/psptesting"
)

func TestRulesCache(t *testing.T) {
	c := newRulesCache()
	rules := &identityRules{complete: true}

	alice, bob := userKey(nil, &user.DefaultInfo{Name: "alice"}, ""), userKey(nil, &user.DefaultInfo{Name: "bob"}, "")
	gen := c.current()
	c.put(alice, gen, rules)
	if c.get(alice) != rules || c.get(bob) != nil {
		t.Fatal("a stored entry is not found, or another key finds it")
	}
	c.generation.Add(1) // an RBAC event
	if c.get(alice) != nil {
		t.Error("an RBAC event left the entry in place")
	}
	c.put(alice, gen, rules) // listed before the event
	if c.get(alice) != nil {
		t.Error("rules listed before an RBAC event were stored after it")
	}

	for i := range maxCachedIdentities + 1 {
		c.put(userKey(nil, &user.DefaultInfo{Name: "u", Groups: []string{fmt.Sprint(i)}}, "ns"), c.current(), rules)
	}
	if len(c.entries) > maxCachedIdentities {
		t.Errorf("%d entries, more than %d", len(c.entries), maxCachedIdentities)
	}

	// Answers live with the rules they were asked under.
	c.put(alice, c.current(), rules)
	c.keep(c.get(alice), 0, "a", true)
	if allowed, ok := c.get(alice).answer(0, "a"); !ok || !allowed {
		t.Fatal("a kept answer is not found")
	}
	if _, ok := c.get(alice).answer(1, "a"); ok {
		t.Error("an answer was found for another group")
	}
	c.keep(c.get(alice), 1, "a", false)
	if allowed, ok := c.get(alice).answer(1, "a"); !ok || allowed {
		t.Error("a denial is not kept")
	}
	held := c.get(alice)
	c.generation.Add(1)
	c.keep(held, 0, "b", true) // asked before the event, kept after it
	if c.get(alice) != nil {
		t.Error("an RBAC event left the rules, and their answers, in place")
	}
	c.put(alice, c.current(), &identityRules{complete: true})
	if _, ok := c.get(alice).answer(0, "a"); ok {
		t.Error("rules listed after an RBAC event carry an answer given before it")
	}
	for i := range maxCachedAnswers + 1 {
		if r := c.get(alice); r != nil {
			c.keep(r, 0, fmt.Sprint(i), true)
		}
	}
	if r := c.get(alice); r != nil && len(r.answers[0]) > maxCachedAnswers {
		t.Errorf("%d answers, more than %d", len(r.answers[0]), maxCachedAnswers)
	}
	if c.get(alice) != nil {
		t.Errorf("the cache did not start over after %d answers", maxCachedAnswers+1)
	}

	key := func(k identityKey) string { return string(k) }
	distinct := [][2]identityKey{
		{userKey(nil, &user.DefaultInfo{Name: "u", Groups: []string{"g"}}, "ns"), userKey(nil, &user.DefaultInfo{Name: "u"}, "ns")},
		{userKey(nil, &user.DefaultInfo{Name: "u"}, "a"), userKey(nil, &user.DefaultInfo{Name: "u"}, "b")},
		{userKey(nil, &user.DefaultInfo{Name: "app"}, "ns"), serviceAccountKey(nil, "ns", "app")},
		// Names holding what a separator would be.
		{userKey(nil, &user.DefaultInfo{Name: "u", Groups: []string{"a\x00b"}}, "ns"), userKey(nil, &user.DefaultInfo{Name: "u", Groups: []string{"a", "b"}}, "ns")},
		{userKey(nil, &user.DefaultInfo{Name: "u\x01a"}, "ns"), userKey(nil, &user.DefaultInfo{Name: "u", Groups: []string{"a"}}, "ns")},
		{serviceAccountKey(nil, "n", "s\x01x"), serviceAccountKey(nil, "n\x01s", "x")},
	}
	for _, pair := range distinct {
		if key(pair[0]) == key(pair[1]) {
			t.Errorf("two identities share the key %q", pair[0])
		}
	}
	if key(userKey(nil, &user.DefaultInfo{Name: "u", Groups: []string{"g"}}, "ns")) != key(userKey(make([]byte, 0, 4), &user.DefaultInfo{Name: "u", Groups: []string{"g"}}, "ns")) {
		t.Error("one identity has two keys")
	}
}

// The timer empties the cache every maxAge (here 50 ms), as an RBAC event
// does, and keeps doing so: an authorization configuration reload, which
// no RBAC event announces, is seen within that time.
func TestRulesCacheExpires(t *testing.T) {
	c := &rulesCache{entries: map[string]*identityRules{}}
	alice := userKey(nil, &user.DefaultInfo{Name: "alice"}, "")
	rules := &identityRules{complete: true}
	c.put(alice, c.current(), rules)
	if c.get(alice) != rules {
		t.Fatal("a stored entry is not found")
	}
	c.expireEvery(50 * time.Millisecond)
	for round := range 2 {
		gen := c.current()
		deadline := time.Now().Add(5 * time.Second)
		for c.current() == gen && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if c.current() == gen {
			t.Fatalf("round %d: the generation did not move in 5 s", round)
		}
		if c.get(alice) != nil {
			t.Fatalf("round %d: the entry outlived the timer", round)
		}
		c.put(alice, c.current(), rules)
	}
}

// Cached rules and answers count until an RBAC event reaches the cache: a
// revoked grant is refused, and a new grant allowed, from then on; until
// then the authorizer is not asked again.
func TestRulesCacheAndRevocation(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice"}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "use"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"policy"}, Resources: []string{"podsecuritypolicies"}, Verbs: []string{"use"}, ResourceNames: []string{"a"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "use"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "use"}}
	granted := psptesting.RBACAuthorizer(t, role, binding).(*rbac.RBACAuthorizer)
	revoked := psptesting.RBACAuthorizer(t).(*rbac.RBACAuthorizer)
	current := authorizer.Authorizer(granted)
	calls := 0
	authz := &resolverAuthorizer{RuleResolver: granted, authorize: func(a authorizer.Attributes) authorizer.Decision {
		calls++
		d, _, _ := current.Authorize(context.Background(), a)
		return d
	}}
	c := newRulesCache()
	request := func() *requester {
		return withResolver(&requester{ctx: context.Background(), authz: authz, cache: c, namespace: "ns", user: alice})
	}
	if !request().mayUse("a") || request().mayUse("b") {
		t.Fatal("the grant of a alone is not seen")
	}
	if before := calls; !request().mayUse("a") || calls != before {
		t.Errorf("a second request asked the authorizer again (%d calls)", calls-before)
	}
	current = revoked // the authorizer's listers see the revocation; the event follows
	authz.RuleResolver = revoked
	c.generation.Add(1)
	if request().mayUse("a") {
		t.Error("a revoked grant was allowed after the RBAC event")
	}

	// A grant of every policy: b counts after the event.
	current = psptesting.RBACAuthorizer(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "use"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"policy"}, Resources: []string{"podsecuritypolicies"}, Verbs: []string{"use"}}}}, binding)
	authz.RuleResolver = current.(authorizer.RuleResolver)
	if request().mayUse("b") {
		t.Error("a new grant counted before the RBAC event reached the cache (the cache was not used)")
	}
	c.generation.Add(1)
	if !request().mayUse("b") {
		t.Error("a new grant does not count after the RBAC event")
	}
}

// A chain whose rules cannot all be listed (a webhook) is asked every
// time: its answers are not kept.
func TestRulesCacheKeepsNoWebhookAnswers(t *testing.T) {
	calls := 0
	webhook := resolverAuthorizer{RuleResolver: incompleteRules{}, authorize: func(authorizer.Attributes) authorizer.Decision {
		calls++
		return authorizer.DecisionAllow
	}}
	c := newRulesCache()
	for range 3 {
		r := withResolver(&requester{ctx: context.Background(), authz: webhook, cache: c, namespace: "ns", user: &user.DefaultInfo{Name: "alice"}})
		if !r.mayUse("a") {
			t.Fatal("the webhook's allow was not followed")
		}
	}
	if calls != 3 {
		t.Errorf("%d webhook calls for three requests, want 3", calls)
	}
}

// A resync (the same object again) keeps the cache; a change empties it.
func TestRulesCacheIgnoresResyncs(t *testing.T) {
	c := newRulesCache()
	h := c.handler()
	v1 := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", ResourceVersion: "1"}}
	v2 := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", ResourceVersion: "2"}}
	before := c.current()
	h.OnUpdate(v1, v1)
	if c.current() != before {
		t.Error("a resync emptied the cache")
	}
	h.OnUpdate(v1, v2)
	h.OnDelete(v2)
	h.OnAdd(v1, false)
	if c.current() != before+3 {
		t.Errorf("generation %d after an update, a delete and an add, want %d", c.current(), before+3)
	}
}

// The cache empties on every event of the four RBAC informers.
func TestRulesCacheWatchesRBAC(t *testing.T) {
	client := fake.NewSimpleClientset()
	f := informers.NewSharedInformerFactory(client, 0)
	c := newRulesCache()
	if err := c.watch(f); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	f.Start(stop)
	f.WaitForCacheSync(stop)
	ctx := context.Background()
	for _, create := range []func() error{
		func() error {
			_, err := client.RbacV1().Roles("ns").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.RbacV1().RoleBindings("ns").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "r"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "r"}}, metav1.CreateOptions{})
			return err
		},
	} {
		before := c.current()
		if err := create(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for c.current() == before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if c.current() == before {
			t.Fatal("an RBAC object's creation did not reach the cache")
		}
	}
}
