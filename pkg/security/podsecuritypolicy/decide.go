// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	policyv1beta1 "github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
)

// Decider is the engine outside the apiserver: the plugin's decision, over policies and an authorizer its caller loaded (kubectl
// psp reads them from a cluster), for new pods.
type Decider struct {
	engine   *Engine
	authz    Authorizer
	policies []*policy.PodSecurityPolicy
}

// Decision is what enforce mode does with a new pod.
type Decision struct {
	// Policy admits the pod; "" when none does.
	Policy string
	// Pod is the pod as admitted, with the policy's defaults; nil when
	// refused.
	Pod *api.Pod
	// Changed are the fields the defaults set, in the API's names.
	Changed []string
	// Refusal is the plugin's message when no policy admits the pod.
	Refusal string
}

// NewDecider builds a decider from the cluster's policies, defaulted as the
// API serves them, and an authorizer that answers `use`. A policy the
// plugin cannot apply is skipped, as the plugin skips it, and returned in
// skipped with the reason.
func NewDecider(policies []*policyv1beta1.PodSecurityPolicy, authz authorizer.Authorizer) (d *Decider, skipped map[string]error) {
	d = &Decider{engine: NewEngine(), authz: NewAuthorizer(authz)}
	skipped = map[string]error{}
	for _, external := range policies {
		internal, err := Convert(external.DeepCopy())
		if err == nil {
			_, err = NewProvider(internal)
		}
		if err != nil {
			skipped[external.Name] = err
			continue
		}
		d.engine.Set(internal)
		d.policies = append(d.policies, internal)
	}
	slices.SortFunc(d.policies, func(a, b *policy.PodSecurityPolicy) int { return strings.Compare(a.Name, b.Name) })
	return d, skipped
}

// Policies are the policies the decider applies, as the plugin applies
// them (defaulted, internal), in the order it tries them: by name.
func (d *Decider) Policies() []*policy.PodSecurityPolicy { return d.policies }

// Decide admits pod as a creation in namespace by requester (nil for an
// unknown creator: then only the pod's service account's grants count).
// The pod is not changed.
func (d *Decider) Decide(ctx context.Context, namespace string, requester user.Info, pod *api.Pod) (Decision, error) {
	pod = pod.DeepCopy()
	pod.Namespace = namespace
	allowed, name, errs, err := d.engine.Choose(ctx, d.authz, namespace, requester, pod, true, "")
	switch {
	case err != nil:
		return Decision{}, fmt.Errorf("%s: %w", Name, err)
	case allowed == nil:
		return Decision{Refusal: fmt.Sprintf("%s: unable to admit pod: %v", Name, errs.All())}, nil
	case allowed == pod:
		return Decision{Policy: name, Pod: pod}, nil
	}
	return Decision{Policy: name, Pod: allowed, Changed: ChangedFields(pod, allowed)}, nil
}

// DecideEphemeral judges adding containers to pod's ephemeral containers
// (kubectl debug, through pods/ephemeralcontainers) by requester, as
// Validate does: some policy the requester or the pod's service account
// may use, the one pod's kubernetes.io/psp names first, must admit the pod
// with them unchanged. It returns "" when admitted, else the refusal.
func (d *Decider) DecideEphemeral(ctx context.Context, namespace string, requester user.Info, pod *api.Pod, containers ...api.EphemeralContainer) (string, error) {
	old := pod.DeepCopy()
	old.Namespace = namespace
	updated := old.DeepCopy()
	updated.Spec.EphemeralContainers = append(updated.Spec.EphemeralContainers, containers...)
	allowed, _, errs, err := d.engine.Choose(ctx, d.authz, namespace, requester, updated, false, updated.Annotations[ValidatedPSPAnnotation])
	switch {
	case err != nil:
		return "", fmt.Errorf("%s: %w", Name, err)
	case allowed == nil:
		return fmt.Sprintf("%s: unable to validate pod: %v", Name, errs.All()), nil
	}
	return "", nil
}
