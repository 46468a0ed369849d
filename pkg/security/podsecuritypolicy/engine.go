// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
)

// Name is the admission plugin's name, with which its refusals start.
const Name = "PodSecurityPolicy"

// ValidatedPSPAnnotation is the pod annotation that names the policy that
// admitted it, as v1.24 wrote it.
const ValidatedPSPAnnotation = "kubernetes.io/psp"

// Engine is PodSecurityPolicy's decision, as v1.24's admission plugin made
// it, over the cluster's policies and RBAC rules, which it keeps in caches.
// The admission plugin (plugin/pkg/admission/security/podsecuritypolicy)
// is an adapter over it, its instances of one registration sharing one
// Engine; kubectl psp and pkg/pspmigration decide with it outside the
// apiserver (Decider).
type Engine struct {
	policies  *policyCache
	rules     *rulesCache
	once      sync.Once
	hasSynced func() bool
	watchErr  error
}

// NewEngine returns an engine with empty caches: Watch fills them.
func NewEngine() *Engine {
	return &Engine{policies: newPolicyCache(), rules: newRulesCache()}
}

// Watch starts the caches' informers once, with the first caller's
// informer factory and client (every plugin instance gets the same ones),
// and returns whether the policy cache has synced.
func (e *Engine) Watch(f informers.SharedInformerFactory, client dynamic.Interface) (func() bool, error) {
	e.once.Do(func() {
		if e.hasSynced, e.watchErr = e.policies.watch(f, client); e.watchErr != nil {
			return
		}
		if err := e.rules.watch(f); err != nil {
			e.watchErr = fmt.Errorf("watching RBAC objects: %w", err)
		}
	})
	return e.hasSynced, e.watchErr
}

// Authorizer answers whether an identity may use a policy: the
// apiserver's authorizer, and its rule resolver when it can list rules
// (asked once here: an interface assertion on every request was a tenth of
// the rules cache's cost).
type Authorizer struct {
	authz    authorizer.Authorizer
	resolver authorizer.RuleResolver
}

// NewAuthorizer wraps the authorizer that answers `use`.
func NewAuthorizer(authz authorizer.Authorizer) Authorizer {
	resolver, _ := authz.(authorizer.RuleResolver)
	return Authorizer{authz: authz, resolver: resolver}
}

// Set puts a policy in the policy cache, as the informer's events do;
// kubectl psp and tests load the policies they read with it. A policy the
// engine cannot apply is skipped, as v1.24 skipped it, and logged.
func (e *Engine) Set(psp *policy.PodSecurityPolicy) { e.policies.set(psp) }

// Policies names the policies the engine applies, in the order it tries
// them.
func (e *Engine) Policies() []string {
	sorted := e.policies.snapshot().sorted
	names := make([]string, len(sorted))
	for i, pr := range sorted {
		names[i] = pr.Name()
	}
	return names
}

// ForgetRules drops the RBAC rules listed and the answers kept, as any
// event of the RBAC informers does: benchmarks measure with it the first
// decision after a grant changed anywhere in the cluster.
func (e *Engine) ForgetRules() { e.rules.generation.Add(1) }

// errNoProviders is returned when no policy exists, or none can be built.
var errNoProviders = errors.New("no providers available to validate pod request")

// Choose finds the policy that admits pod, created or updated in namespace
// by u (nil for an unknown creator: then only the pod's service account's
// grants count), with authz answering the use of policies, as v1.24 did: in name order
// (hint first when mutation is not allowed), the first policy the requester
// may use that accepts the pod unchanged, else, when mutation is allowed,
// the first that accepts it after its defaults. It returns the admitted pod
// (pod itself when unchanged, or a mutated copy) and the policy's name, or
// nil and the errors of every policy the requester may use.
//
// Unlike v1.24 it does not deep-copy, mutate and compare the pod for every
// policy: Mutates tells without a copy whether a policy would change the
// pod, Mutated copies only what the defaults write, the per-pod work
// (paths, effective profiles) is done once in a Subject, Admits stops at a
// policy's first error, and the authorizer is consulted only for policies
// that accept the pod, or on rejection. Where the requester's rules name
// the policies it may use, only those are tried (candidates). The outcome
// is the same.
func (e *Engine) Choose(ctx context.Context, authz Authorizer, namespace string, u user.Info, pod *api.Pod, mutationAllowed bool, hint string) (*api.Pod, string, Rejections, error) {
	policies := e.policies.snapshot()
	if len(policies.sorted) == 0 {
		return nil, "", nil, errNoProviders
	}
	// The requester and the Subject are values on this stack, so that
	// admitting a pod allocates nothing (TestCreateAsAdminAllocatesNothing).
	r, s := e.newRequester(ctx, authz, namespace, u, pod), NewSubject(pod)
	requester, subject := &r, &s
	// Validate's hint is usually the policy Admit chose and applied, so it
	// is tried before the candidates are gathered. If it fails it is tried
	// first again below, which keeps the errors in v1.24's order.
	if hinted := policies.byName[hint]; !mutationAllowed && hinted != nil && !hinted.Mutates(subject) && hinted.Admits(subject) && requester.mayUse(hint) {
		return pod, hint, nil, nil
	}
	ordered := order(requester.candidates(policies), mutationAllowed, hint)
	var buf [32]*Provider // no allocation for up to 32 mutating policies
	mutating := buf[:0]
	for pr := range ordered {
		if pr.Mutates(subject) {
			if mutationAllowed {
				mutating = append(mutating, pr)
			}
			continue
		}
		if pr.Admits(subject) && requester.mayUse(pr.Name()) {
			return pod, pr.Name(), nil, nil
		}
	}
	for _, pr := range mutating {
		if requester.ruledOut(pr.Name()) {
			continue // no copy for a policy the requester may not use
		}
		mutated := pr.Mutated(pod)
		if ms := NewSubject(mutated); pr.Admits(&ms) && requester.mayUse(pr.Name()) {
			return mutated, pr.Name(), nil, nil
		}
	}
	return nil, "", rejected(ordered, pod, subject, requester), nil
}

// Rejections are, for each policy the requester may use, in the order the
// policies were tried, why it did not admit the pod.
type Rejections []rejection

// rejection is one policy's errors, or, for a policy whose defaults the
// pod would need where none may be applied (updates), the pod and the pod
// with the defaults (their difference is told only when a report asks).
type rejection struct {
	policy       string
	errs         field.ErrorList
	pod, mutated *api.Pod
}

// All is every error, as v1.24 listed them.
func (r Rejections) All() field.ErrorList {
	all := field.ErrorList{}
	for _, p := range r {
		all = append(all, p.errs...)
	}
	return all
}

// String names each policy with its reason, for warn and audit modes:
// `policy "restricted": [...]; policy "baseline": [...]`.
func (r Rejections) String() string {
	if len(r) == 0 {
		return "no policy the requester may use"
	}
	parts := make([]string, len(r))
	for i, p := range r {
		if len(p.errs) > 0 {
			parts[i] = fmt.Sprintf("policy %q: %v", p.policy, p.errs)
		} else {
			parts[i] = fmt.Sprintf("policy %q: would have to set %s, and may not change the pod here", p.policy, strings.Join(ChangedFields(p.pod, p.mutated), ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// rejected gathers why each policy the requester may use did not admit the
// pod, in the order they were tried. As in v1.24, a policy is judged on the
// pod with its defaults applied, even where mutation is not allowed; such a
// policy, if it then admits, is listed with the fields it would set (v1.24
// listed nothing for it).
func rejected(ordered iter.Seq[*Provider], pod *api.Pod, subject *Subject, requester *requester) Rejections {
	var all Rejections
	for pr := range ordered {
		var errs field.ErrorList
		var mutated *api.Pod
		if pr.Mutates(subject) {
			mutated = pr.Mutated(pod)
			errs = pr.ValidatePod(mutated)
		} else {
			errs = pr.Validate(subject)
		}
		switch {
		case !requester.mayUse(pr.Name()):
		case len(errs) > 0:
			all = append(all, rejection{policy: pr.Name(), errs: errs})
		case mutated != nil:
			all = append(all, rejection{policy: pr.Name(), pod: pod, mutated: mutated})
		}
	}
	return all
}

// order yields the providers (sorted by name) in the order they are tried:
// when mutation is not allowed, the hinted policy comes first.
func order(providers []*Provider, mutationAllowed bool, hint string) iter.Seq[*Provider] {
	return func(yield func(*Provider) bool) {
		var first *Provider
		if !mutationAllowed && hint != "" {
			for _, pr := range providers {
				if pr.Name() == hint {
					first = pr
					if !yield(pr) {
						return
					}
					break
				}
			}
		}
		for _, pr := range providers {
			if pr != first && !yield(pr) {
				return
			}
		}
	}
}
