// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package admission adds Turnstile's restored admission plugins
// (pkg/admission/restored) to upstream's kube-apiserver registry: it
// registers them, splices them into upstream's recommended order where each
// descriptor says upstream last ran it, and keeps them off by default, so
// that upstream's default chain is unchanged. It also names, in the audit
// event of a refused request, the plugin that refused it (rejectedby).
package admission

import (
	"fmt"
	"slices"

	"k8s.io/apiserver/pkg/admission"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/turnstile-k8s/turnstile/pkg/admission/descriptor"
	"github.com/turnstile-k8s/turnstile/pkg/admission/rejectedby"
	"github.com/turnstile-k8s/turnstile/pkg/admission/restored"
)

// lastPlugins must end the chain: upstream runs webhooks, policies, quota and
// AlwaysDeny after every in-tree plugin, so nothing may be spliced among them.
// AuthorizationConditionsEnforcer joins them in Kubernetes v1.38; a line
// without it has the others.
var lastPlugins = []string{
	"MutatingAdmissionPolicy",
	"MutatingAdmissionWebhook",
	"ValidatingAdmissionPolicy",
	"AuthorizationConditionsEnforcer",
	"ValidatingAdmissionWebhook",
	"ResourceQuota",
	"AlwaysDeny",
}

// Apply registers the restored plugins into o, splices them into its
// recommended order and marks them default-off. Call it on upstream's
// options before the flags are built, so that help texts and validation see
// every name.
func Apply(o *genericoptions.AdmissionOptions) error {
	return apply(o, restored.Plugins)
}

func apply(o *genericoptions.AdmissionOptions, plugins []descriptor.Plugin) error {
	if err := checkRegistrations(plugins, o.Plugins.Registered()); err != nil {
		return err
	}
	order, err := splice(o.RecommendedPluginOrder, plugins)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(plugins))
	for _, p := range plugins {
		p.Register(o.Plugins)
		names = append(names, p.Name)
	}
	o.RecommendedPluginOrder = order
	o.DefaultOffPlugins = o.DefaultOffPlugins.Clone().Insert(names...)
	// After upstream's metrics decorator, so that it wraps what it measures.
	o.Decorators = append(slices.Clip(o.Decorators), rejectedby.Decorator)
	return nil
}

// checkRegistrations runs each plugin's Register against a scratch registry:
// it must add its Name and nothing else, and no name may be registered
// twice, which upstream's registry would turn into a fatal exit.
func checkRegistrations(plugins []descriptor.Plugin, upstream []string) error {
	seen := map[string]bool{}
	for _, name := range upstream {
		seen[name] = true
	}
	for _, p := range plugins {
		if p.Register == nil {
			return fmt.Errorf("turnstile admission: plugin %q has no Register", p.Name)
		}
		scratch := admission.NewPlugins()
		p.Register(scratch)
		if got := scratch.Registered(); !slices.Equal(got, []string{p.Name}) {
			return fmt.Errorf("turnstile admission: plugin %q's Register adds %v, want [%s]", p.Name, got, p.Name)
		}
		if seen[p.Name] {
			return fmt.Errorf("turnstile admission: plugin %q is registered twice", p.Name)
		}
		seen[p.Name] = true
	}
	return nil
}

// splice returns upstream's recommended order with each plugin inserted
// directly after the plugin it names in After.
func splice(upstream []string, plugins []descriptor.Plugin) ([]string, error) {
	after := map[string][]string{}
	for _, p := range plugins {
		switch {
		case p.After == "":
			return nil, fmt.Errorf("turnstile admission: plugin %q has no place in the chain (After is empty)", p.Name)
		case !slices.Contains(upstream, p.After):
			return nil, fmt.Errorf("turnstile admission: plugin %q is placed after %q, which is not in upstream's order", p.Name, p.After)
		case slices.Contains(lastPlugins, p.After):
			return nil, fmt.Errorf("turnstile admission: plugin %q cannot run after %q: %v must end the chain", p.Name, p.After, lastPlugins)
		case slices.Contains(upstream, p.Name):
			return nil, fmt.Errorf("turnstile admission: plugin %q is already in upstream's order", p.Name)
		}
		after[p.After] = append(after[p.After], p.Name)
	}
	order := make([]string, 0, len(upstream)+len(plugins))
	for _, name := range upstream {
		order = append(order, name)
		order = append(order, after[name]...)
	}
	return order, nil
}
