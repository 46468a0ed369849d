// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package podsecuritypolicy is the PodSecurityPolicy admission plugin that
// Kubernetes removed in v1.25, restored: it admits a pod only if a
// PodSecurityPolicy that the pod's service account or the requesting user
// may `use` accepts it, defaulting the pod's security fields on creation.
// It is an adapter: the decision, the policies from Turnstile's
// policy/v1beta1 API and the RBAC rules it asks are pkg/security/podsecuritypolicy's
// Engine; this package adds the admission interfaces, the modes and the
// configuration. See docs/podsecuritypolicy.md.
package podsecuritypolicy

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninit "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2"
	api "k8s.io/kubernetes/pkg/apis/core"
	rbacregistry "k8s.io/kubernetes/pkg/registry/rbac"

	"github.com/turnstile-k8s/turnstile/pkg/admission/descriptor"
	"github.com/turnstile-k8s/turnstile/pkg/admission/pluginconfig"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy"
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/security/podsecuritypolicy/apis/v1alpha1"
)

// PluginName is the name under which the plugin is registered.
const PluginName = podsecuritypolicy.Name

// The audit annotations the plugin writes: the policy each phase chose (the
// one that admitted a pod is on the pod, podsecuritypolicy.ValidatedPSPAnnotation)
// and, in audit mode, what enforce would have done. They go to the request's audit context directly, as an admission
// annotation at level Metadata would (logged when the event is logged at
// all): Attributes.AddAnnotation checks the constant key's format with
// regular expressions on every call, a fifth of the plugin's cost.
const (
	auditKeyPrefix    = "podsecuritypolicy.policy.k8s.io"
	admitPolicyKey    = auditKeyPrefix + "/admit-policy"
	validatePolicyKey = auditKeyPrefix + "/validate-policy"
	// In audit mode: what enforce would have refused, and defaulted.
	violationsKey = auditKeyPrefix + "/audit-violations"
	mutationsKey  = auditKeyPrefix + "/audit-mutations"
)

// Descriptor is how Turnstile wires the plugin (pkg/admission/descriptor):
// where upstream last ran it, its configuration's check, reloadable (its
// instances share one engine, below).
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
	plugins.Register(PluginName, newFactory(podsecuritypolicy.NewEngine()))
}

// newFactory builds plugins that share the caches.
func newFactory(shared *podsecuritypolicy.Engine) admission.Factory {
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
	engine    *podsecuritypolicy.Engine // shared with the registration's other instances
	mode      v1alpha1.Mode
	authz     *podsecuritypolicy.Authorizer
	dynamic   dynamic.Interface
	informers informers.SharedInformerFactory
	synced    atomic.Bool // the policy cache has seen every policy (ready)
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
func NewPlugin() *Plugin { return newPlugin(podsecuritypolicy.NewEngine(), v1alpha1.Enforce) }

func newPlugin(e *podsecuritypolicy.Engine, mode v1alpha1.Mode) *Plugin {
	if mode == "" {
		mode = v1alpha1.Enforce
	}
	return &Plugin{
		Handler: admission.NewHandler(admission.Create, admission.Update),
		engine:  e,
		mode:    mode,
	}
}

// SetAuthorizer is called by the admission initializer.
func (p *Plugin) SetAuthorizer(authz authorizer.Authorizer) {
	a := podsecuritypolicy.NewAuthorizer(authz)
	p.authz = &a
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
	synced, err := p.engine.Watch(p.informers, p.dynamic)
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
	allowed, name, errs, err := p.engine.Choose(ctx, *p.authz, a.GetNamespace(), a.GetUserInfo(), pod, true, "")
	if err != nil {
		return p.refuse(ctx, admission.NewForbidden(a, fmt.Errorf("%s: %w", PluginName, err)))
	}
	if allowed == nil {
		klog.V(4).InfoS("No PodSecurityPolicy admits the pod", "pod", klog.KRef(a.GetNamespace(), a.GetName()), "errors", errs)
		if p.mode != v1alpha1.Enforce {
			p.report(ctx, violationsKey, "unable to admit pod: "+errs.String())
			return nil
		}
		return admission.NewForbidden(a, fmt.Errorf("%s: unable to admit pod: %v", PluginName, errs.All()))
	}
	if p.mode != v1alpha1.Enforce {
		if allowed != pod {
			p.report(ctx, mutationsKey, fmt.Sprintf("policy %q would set %s", name, strings.Join(podsecuritypolicy.ChangedFields(pod, allowed), ", ")))
		}
		return nil
	}
	if allowed != pod {
		*pod = *allowed
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[podsecuritypolicy.ValidatedPSPAnnotation] = name
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
	allowed, name, errs, err := p.engine.Choose(ctx, *p.authz, a.GetNamespace(), a.GetUserInfo(), pod, false, pod.Annotations[podsecuritypolicy.ValidatedPSPAnnotation])
	if err != nil {
		return p.refuse(ctx, admission.NewForbidden(a, fmt.Errorf("%s: %w", PluginName, err)))
	}
	if allowed == nil {
		if p.mode != v1alpha1.Enforce {
			p.report(ctx, violationsKey, "unable to validate pod: "+errs.String())
			return nil
		}
		return admission.NewForbidden(a, fmt.Errorf("%s: unable to validate pod: %v", PluginName, errs.All()))
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
