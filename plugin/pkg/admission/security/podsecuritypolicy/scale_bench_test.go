// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"

	policyv1beta1 "github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/psptesting"
	"github.com/turnstile-k8s/turnstile/test/pspscale"
)

// BenchmarkScale decides make bench-psp's clusters (test/pspscale): 1 to
// 1,000 team policies among 100 or 10,000 bindings, the last team's pod
// created by its service account, by a controller and by an admin, with
// upstream's RBAC authorizer behind the apiserver's system:masters check. test/psp124's BenchmarkScale runs v1.24's
// plugin and authorizer over the same objects, and make bench-psp prints
// both with their ratios. Beside time and allocations per pod create
// (Admit, then Validate on its result), it reports the authorizer calls
// (Authorize and RulesFor) per create and the heap the plugin still holds
// after the first create (the rules cache: what it keeps per identity),
// each in the steady state and right after an RBAC change (the
// after-rbac-change cases, whose rules cache starts over every create),
// and, with TURNSTILE_PSP_SCALE_DECISIONS set, appends each case's
// decision (the policy, or "refused") to that file, for make bench-psp to
// compare with v1.24's.
func BenchmarkScale(b *testing.B) {
	decisions := os.Getenv("TURNSTILE_PSP_SCALE_DECISIONS")
	for _, s := range pspscale.Scenarios() {
		var grants []interface{}
		var policies []*policyv1beta1.PodSecurityPolicy
		for _, o := range s.Objects {
			if p, ok := o.(*policyv1beta1.PodSecurityPolicy); ok {
				policies = append(policies, p)
			} else {
				grants = append(grants, o)
			}
		}
		rbac := psptesting.RBACAuthorizer(b, grants...)
		authz := &countingAuthorizer{Authorizer: mastersFirst{rbac}, resolver: rbac.(authorizer.RuleResolver)}
		for _, c := range s.Creations {
			name := s.Name + "/requester=" + strings.ReplaceAll(c.Requester, " ", "-")
			for _, rbacChanged := range []bool{false, true} {
				caseName := name
				if rbacChanged {
					caseName += "/after-rbac-change"
				}
				b.Run(caseName, func(b *testing.B) {
					benchCreation(b, policies, authz, c, rbacChanged, decisions, name)
				})
			}
		}
	}
}

// benchCreation measures one creation. rbacChanged starts the rules cache
// over before each create, as an RBAC event does: the cost of the first
// create after a grant changed anywhere in the cluster.
func benchCreation(b *testing.B, policies []*policyv1beta1.PodSecurityPolicy, authz *countingAuthorizer, c pspscale.Creation, rbacChanged bool, decisions, name string) {
	pod := &api.Pod{}
	must(b, corev1conversion.Convert_v1_Pod_To_core_Pod(c.Pod, pod, nil))
	requester := &user.DefaultInfo{Name: c.User.Name, Groups: c.User.Groups}
	a := admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("v1"), pod.Namespace, pod.Name,
		api.Resource("pods").WithVersion("v1"), "", admission.Create, &metav1.CreateOptions{}, false, requester)
	ctx := context.Background()
	var pl *Plugin
	create := func() error {
		delete(pod.Annotations, podsecuritypolicy.ValidatedPSPAnnotation)
		if rbacChanged {
			pl.engine.ForgetRules()
		}
		if err := pl.Admit(ctx, a, nil); err != nil {
			return err
		}
		return pl.Validate(ctx, a, nil)
	}
	fresh := heapGrowth(func() { pl = scalePlugin(b, policies, authz) })
	pl = nil
	decided := heapGrowth(func() {
		pl = scalePlugin(b, policies, authz)
		decision := "refused"
		if create() == nil {
			decision = pod.Annotations[podsecuritypolicy.ValidatedPSPAnnotation]
		}
		noteDecision(b, decisions, name, decision)
	})
	authz.calls.Store(0)
	b.ReportAllocs()
	for b.Loop() {
		_ = create()
	}
	b.ReportMetric(float64(authz.calls.Load())/float64(b.N), "authz/op")
	b.ReportMetric(float64(decided-fresh), "held-B")
}

// scalePlugin is a plugin with policies and authz, as the apiserver's
// informers would give them.
func scalePlugin(b *testing.B, policies []*policyv1beta1.PodSecurityPolicy, authz authorizer.Authorizer) *Plugin {
	b.Helper()
	pl := NewPlugin()
	pl.SetAuthorizer(authz)
	for _, external := range policies {
		internal, err := podsecuritypolicy.Convert(external.DeepCopy())
		must(b, err)
		pl.engine.Set(internal)
	}
	return pl
}

// heapGrowth is how much more of the heap, collected, is live after f than
// before it. What a plugin holds once it has decided a pod, over a fresh
// plugin, is what its rules cache keeps.
func heapGrowth(f func()) int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	before := m.HeapAlloc
	f()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc) - int64(before)
}

// noteDecision appends the case's decision to file ("" for none).
func noteDecision(b *testing.B, file, name, decision string) {
	if file == "" {
		return
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	must(b, err)
	defer f.Close()
	_, err = fmt.Fprintf(f, "%s\t%s\n", name, decision)
	must(b, err)
}

// mastersFirst is rbac as the kube-apiserver chains it: members of
// system:masters are allowed before RBAC is asked, and rules are listed by
// RBAC alone (pkg/kubeapiserver/authorizer's reload.go). Written out rather
// than built with k8s.io/apiserver's union, whose constructor changed in
// v1.37, so that every line's tier builds it.
type mastersFirst struct{ authorizer.Authorizer }

func (m mastersFirst) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if slices.Contains(a.GetUser().GetGroups(), user.SystemPrivilegedGroup) {
		return authorizer.DecisionAllow, "", nil
	}
	return m.Authorizer.Authorize(ctx, a)
}

// countingAuthorizer counts the questions the plugin asks: Authorize, and
// RulesFor, which it answers from resolver.
type countingAuthorizer struct {
	authorizer.Authorizer
	resolver authorizer.RuleResolver
	calls    atomic.Int64
}

func (c *countingAuthorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	c.calls.Add(1)
	return c.Authorizer.Authorize(ctx, a)
}

func (c *countingAuthorizer) RulesFor(ctx context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	c.calls.Add(1)
	return c.resolver.RulesFor(ctx, u, namespace)
}
