// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package podsecuritypolicy is the PodSecurityPolicy admission plugin that
// Kubernetes removed in v1.25, restored: it admits a pod only if a
// PodSecurityPolicy that the pod's service account or the requesting user
// may `use` accepts it, defaulting the pod's security fields on creation.
// The policies come from Turnstile's policy/v1beta1 API; the rules are in
// pkg/security/podsecuritypolicy. See docs/podsecuritypolicy.md.
package podsecuritypolicy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninit "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2"
	api "k8s.io/kubernetes/pkg/apis/core"
	rbacv1helpers "k8s.io/kubernetes/pkg/apis/rbac/v1"
	rbacregistry "k8s.io/kubernetes/pkg/registry/rbac"

	"github.com/turnstile-k8s/turnstile/pkg/admission/descriptor"
	"github.com/turnstile-k8s/turnstile/pkg/admission/pluginconfig"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy"
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/security/podsecuritypolicy/apis/v1alpha1"
)

// PluginName is the name under which the plugin is registered.
const PluginName = "PodSecurityPolicy"

// The annotations the plugin writes: the policy that admitted a pod, on the
// pod, and the policy each phase chose, on the request's audit event. The
// audit keys go to the request's audit context directly, as an admission
// annotation at level Metadata would (logged when the event is logged at
// all): Attributes.AddAnnotation checks the constant key's format with
// regular expressions on every call, a fifth of the plugin's cost.
const (
	ValidatedPSPAnnotation = "kubernetes.io/psp"
	auditKeyPrefix         = "podsecuritypolicy.policy.k8s.io"
	admitPolicyKey         = auditKeyPrefix + "/admit-policy"
	validatePolicyKey      = auditKeyPrefix + "/validate-policy"
	// In audit mode: what enforce would have refused, and defaulted.
	violationsKey = auditKeyPrefix + "/audit-violations"
	mutationsKey  = auditKeyPrefix + "/audit-mutations"
)

// Descriptor is how Turnstile wires the plugin (pkg/admission/descriptor):
// where upstream last ran it, its configuration's check, reloadable (its
// instances share the caches, below).
var Descriptor = descriptor.Plugin{
	Name:       PluginName,
	Register:   Register,
	After:      "PodSecurity",
	Check:      config.Check,
	Reloadable: true,
}

// Register registers the plugin, configured by a
// PodSecurityPolicyConfiguration (apis/v1alpha1) or enforcing without one.
// The instances it builds share one policy cache and one RBAC rules cache,
// so a reload of the configuration builds an instance that serves at once,
// from caches already synced, instead of a second set of informers.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, newFactory(newCaches()))
}

// newFactory builds plugins that share the caches.
func newFactory(shared *caches) admission.Factory {
	return func(r io.Reader) (admission.Interface, error) {
		c, err := config.Load(PluginName, r)
		if err != nil {
			return nil, err
		}
		if c.Mode != "" && c.Mode != v1alpha1.Enforce {
			klog.InfoS("PodSecurityPolicy reports instead of refusing: pods are neither refused nor changed", "mode", c.Mode)
		}
		return newPlugin(shared, c.Mode), nil
	}
}

// config is the plugin's configuration kind.
var config = pluginconfig.NewKind[v1alpha1.PodSecurityPolicyConfiguration](v1alpha1.SchemeGroupVersion, v1alpha1.Validate)

// Plugin is the PodSecurityPolicy admission plugin.
type Plugin struct {
	*admission.Handler
	*caches   // shared with the registration's other instances
	mode      v1alpha1.Mode
	authz     authorizer.Authorizer
	resolver  authorizer.RuleResolver // authz, when it can list rules (SetAuthorizer)
	dynamic   dynamic.Interface
	informers informers.SharedInformerFactory
	synced    atomic.Bool // the policy cache has seen every policy (ready)
}

// caches are the policy and RBAC rules caches the instances of one
// registration share, watched from the first instance's initialization on.
type caches struct {
	policies  *policyCache
	rules     *rulesCache
	once      sync.Once
	hasSynced func() bool
	watchErr  error
}

func newCaches() *caches {
	return &caches{policies: newPolicyCache(), rules: newRulesCache()}
}

// watch starts the caches' informers once, with the first instance's
// informer factory and client (every instance gets the same ones), and
// returns whether the policy cache has synced.
func (c *caches) watch(f informers.SharedInformerFactory, client dynamic.Interface) (func() bool, error) {
	c.once.Do(func() {
		if c.hasSynced, c.watchErr = c.policies.watch(f, client); c.watchErr != nil {
			return
		}
		if err := c.rules.watch(f); err != nil {
			c.watchErr = fmt.Errorf("watching RBAC objects: %w", err)
		}
	})
	return c.hasSynced, c.watchErr
}

var (
	_ admission.MutationInterface                           = &Plugin{}
	_ admission.ValidationInterface                         = &Plugin{}
	_ admission.InitializationValidator                     = &Plugin{}
	_ genericadmissioninit.WantsAuthorizer                  = &Plugin{}
	_ genericadmissioninit.WantsDynamicClient               = &Plugin{}
	_ genericadmissioninit.WantsExternalKubeInformerFactory = &Plugin{}
)

// NewPlugin returns an enforcing plugin, with caches of its own, that
// handles pod creations and updates. It needs an authorizer, a dynamic
// client and the apiserver's informer factory, which the admission
// initializers provide.
func NewPlugin() *Plugin { return newPlugin(newCaches(), v1alpha1.Enforce) }

func newPlugin(c *caches, mode v1alpha1.Mode) *Plugin {
	if mode == "" {
		mode = v1alpha1.Enforce
	}
	return &Plugin{
		Handler: admission.NewHandler(admission.Create, admission.Update),
		caches:  c,
		mode:    mode,
	}
}

// SetAuthorizer is called by the admission initializer. Whether the
// authorizer can list rules is asked here once: an interface assertion on
// every request was a tenth of the rules cache's cost.
func (p *Plugin) SetAuthorizer(authz authorizer.Authorizer) {
	p.authz = authz
	p.resolver, _ = authz.(authorizer.RuleResolver)
}

// SetDynamicClient is called by the admission initializer.
func (p *Plugin) SetDynamicClient(c dynamic.Interface) { p.dynamic = c }

// SetExternalKubeInformerFactory is called by the admission initializer.
func (p *Plugin) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) { p.informers = f }

// ValidateInitialization checks the plugin's dependencies and registers
// its policy informer with the apiserver's informer factory, which starts
// it once the apiserver serves.
func (p *Plugin) ValidateInitialization() error {
	if p.authz == nil {
		return fmt.Errorf("%s requires an authorizer", PluginName)
	}
	if p.dynamic == nil || p.informers == nil {
		return fmt.Errorf("%s requires a lister", PluginName)
	}
	synced, err := p.caches.watch(p.informers, p.dynamic)
	if err != nil {
		return fmt.Errorf("%s: %w", PluginName, err)
	}
	p.SetReadyFunc(synced)
	return nil
}

// Admit chooses a policy for a new pod, applies its defaults, and records
// the choice in the pod's kubernetes.io/psp annotation. In warn and audit
// modes it reports the refusal or the defaults instead, and changes nothing.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod, err := p.podToCheck(a, false)
	if pod == nil || a.GetOperation() != admission.Create {
		return err
	}
	if err := p.ready(); err != nil {
		return p.refuse(ctx, err)
	}
	allowed, name, errs, err := p.choose(ctx, a, pod, true, "")
	if err != nil {
		return p.refuse(ctx, admission.NewForbidden(a, fmt.Errorf("%s: %w", PluginName, err)))
	}
	if allowed == nil {
		klog.V(4).InfoS("No PodSecurityPolicy admits the pod", "pod", klog.KRef(a.GetNamespace(), a.GetName()), "errors", errs)
		if p.mode != v1alpha1.Enforce {
			p.report(ctx, violationsKey, "unable to admit pod: "+errs.String())
			return nil
		}
		return admission.NewForbidden(a, fmt.Errorf("%s: unable to admit pod: %v", PluginName, errs.all()))
	}
	if p.mode != v1alpha1.Enforce {
		if allowed != pod {
			p.report(ctx, mutationsKey, fmt.Sprintf("policy %q would set %s", name, strings.Join(ChangedFields(pod, allowed), ", ")))
		}
		return nil
	}
	if allowed != pod {
		*pod = *allowed
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[ValidatedPSPAnnotation] = name
	audit.AddAuditAnnotation(ctx, admitPolicyKey, name)
	return nil
}

// Validate admits a pod only if some policy the requester may use accepts
// it without changing it. The pod's kubernetes.io/psp policy is tried
// first. In warn and audit modes it reports a refusal instead; a creation
// is not judged again there, since Admit judged it with defaults allowed
// and applied none.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod, err := p.podToCheck(a, true)
	if pod == nil {
		return err
	}
	if p.mode != v1alpha1.Enforce && a.GetOperation() == admission.Create && a.GetSubresource() == "" {
		return nil
	}
	if err := p.ready(); err != nil {
		return p.refuse(ctx, err)
	}
	allowed, name, errs, err := p.choose(ctx, a, pod, false, pod.Annotations[ValidatedPSPAnnotation])
	if err != nil {
		return p.refuse(ctx, admission.NewForbidden(a, fmt.Errorf("%s: %w", PluginName, err)))
	}
	if allowed == nil {
		if p.mode != v1alpha1.Enforce {
			p.report(ctx, violationsKey, "unable to validate pod: "+errs.String())
			return nil
		}
		return admission.NewForbidden(a, fmt.Errorf("%s: unable to validate pod: %v", PluginName, errs.all()))
	}
	audit.AddAuditAnnotation(ctx, validatePolicyKey, name)
	return nil
}

// refuse returns err in enforce mode; in warn and audit modes it reports
// it and admits.
func (p *Plugin) refuse(ctx context.Context, err error) error {
	if p.mode == v1alpha1.Enforce {
		return err
	}
	p.report(ctx, violationsKey, "not judged: "+err.Error())
	return nil
}

// report tells the client (warn) or the audit log (audit) what enforce
// would have done.
func (p *Plugin) report(ctx context.Context, key, what string) {
	switch p.mode {
	case v1alpha1.Warn:
		warning.AddWarning(ctx, "", PluginName+": "+what)
	case v1alpha1.Audit:
		audit.AddAuditAnnotation(ctx, key, what)
	}
}

// podToCheck returns the pod a request asks the plugin to judge, or nil
// when the plugin ignores the request: other resources, subresources other
// than ephemeralcontainers (which only Validate judges; upstream ignored
// it, letting anyone who may update it add a privileged container), and
// updates that change nothing but garbage collector fields.
func (p *Plugin) podToCheck(a admission.Attributes, ephemeral bool) (*api.Pod, error) {
	if a.GetResource().GroupResource() != api.Resource("pods") {
		return nil, nil
	}
	if sub := a.GetSubresource(); sub != "" && !(ephemeral && sub == "ephemeralcontainers") {
		return nil, nil
	}
	pod, ok := a.GetObject().(*api.Pod)
	if !ok {
		return nil, admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	if a.GetOperation() == admission.Update && rbacregistry.IsOnlyMutatingGCFields(a.GetObject(), a.GetOldObject(), apiequality.Semantic) {
		return nil, nil
	}
	return pod, nil
}

// ready waits, briefly, for the policy cache to hold every policy. Until it
// does, deciding would reject pods that a policy allows, so the request is
// refused with 503 and a Retry-After that clients act on. Once synced the
// cache stays synced, so the answer is kept: WaitForReady starts a timer on
// every call.
func (p *Plugin) ready() error {
	if p.synced.Load() {
		return nil
	}
	if p.WaitForReady() {
		p.synced.Store(true)
		return nil
	}
	err := apierrors.NewServiceUnavailable(fmt.Sprintf("%s: the policy cache has not synced yet, retry", PluginName))
	err.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
	return err
}

// errNoProviders is returned when no policy exists, or none can be built.
var errNoProviders = errors.New("no providers available to validate pod request")

// choose finds the policy that admits pod, as v1.24 did: in name order
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
func (p *Plugin) choose(ctx context.Context, a admission.Attributes, pod *api.Pod, mutationAllowed bool, hint string) (*api.Pod, string, rejections, error) {
	policies := p.policies.snapshot()
	if len(policies.sorted) == 0 {
		return nil, "", nil, errNoProviders
	}
	// The requester and the Subject are values on this stack, so that
	// admitting a pod allocates nothing (TestCreateAsAdminAllocatesNothing).
	r, s := p.newRequester(ctx, a, pod), podsecuritypolicy.NewSubject(pod)
	requester, subject := &r, &s
	// Validate's hint is usually the policy Admit chose and applied, so it
	// is tried before the candidates are gathered. If it fails it is tried
	// first again below, which keeps the errors in v1.24's order.
	if hinted := policies.byName[hint]; !mutationAllowed && hinted != nil && !hinted.Mutates(subject) && hinted.Admits(subject) && requester.mayUse(hint) {
		return pod, hint, nil, nil
	}
	ordered := order(requester.candidates(policies), mutationAllowed, hint)
	var buf [32]*podsecuritypolicy.Provider // no allocation for up to 32 mutating policies
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
		if ms := podsecuritypolicy.NewSubject(mutated); pr.Admits(&ms) && requester.mayUse(pr.Name()) {
			return mutated, pr.Name(), nil, nil
		}
	}
	return nil, "", rejected(ordered, pod, subject, requester), nil
}

// rejections are, for each policy the requester may use, in the order the
// policies were tried, why it did not admit the pod.
type rejections []rejection

// rejection is one policy's errors, or, for a policy whose defaults the
// pod would need where none may be applied (updates), the pod and the pod
// with the defaults (their difference is told only when a report asks).
type rejection struct {
	policy       string
	errs         field.ErrorList
	pod, mutated *api.Pod
}

// all is every error, as v1.24 listed them.
func (r rejections) all() field.ErrorList {
	all := field.ErrorList{}
	for _, p := range r {
		all = append(all, p.errs...)
	}
	return all
}

// String names each policy with its reason, for warn and audit modes:
// `policy "restricted": [...]; policy "baseline": [...]`.
func (r rejections) String() string {
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
func rejected(ordered iter.Seq[*podsecuritypolicy.Provider], pod *api.Pod, subject *podsecuritypolicy.Subject, requester *requester) rejections {
	var all rejections
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
func order(providers []*podsecuritypolicy.Provider, mutationAllowed bool, hint string) iter.Seq[*podsecuritypolicy.Provider] {
	return func(yield func(*podsecuritypolicy.Provider) bool) {
		var first *podsecuritypolicy.Provider
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

func (p *Plugin) newRequester(ctx context.Context, a admission.Attributes, pod *api.Pod) requester {
	return requester{ctx: ctx, authz: p.authz, resolver: p.resolver, cache: p.rules, namespace: a.GetNamespace(), user: a.GetUserInfo(), serviceAccount: pod.Spec.ServiceAccountName}
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
func (r *requester) candidates(policies *policySnapshot) []*podsecuritypolicy.Provider {
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
	narrowed := make([]*podsecuritypolicy.Provider, 0, len(granted))
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
