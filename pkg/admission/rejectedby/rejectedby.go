// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package rejectedby names, in the audit event of a request that admission
// refused, the plugin that refused it. Upstream v1.36 records a refusal only
// as a metric label (apiserver_admission_controller_admission_duration_seconds
// {name, rejected}) and, for webhooks and admission policies, in their own
// annotations; an operator reading the audit log of a refused request cannot
// tell which of forty plugins said no. The decorator wraps each plugin in the
// chain (admission.Decorators, as upstream's metrics decorator does) and,
// when the plugin returns an error, adds two audit annotations:
//
//	admission.turnstile.dev/rejected-by: NamespaceLifecycle
//	admission.turnstile.dev/rejected-in: validating
//
// A request that passes gets neither, and the wrapper costs one interface
// call per plugin.
package rejectedby

import (
	"context"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/klog/v2"
)

const (
	// PluginKey is the audit annotation that names the refusing plugin.
	PluginKey = "admission.turnstile.dev/rejected-by"
	// PhaseKey says in which phase it refused: mutating or validating.
	PhaseKey = "admission.turnstile.dev/rejected-in"
)

// Decorator wraps a plugin so that its refusals are annotated.
var Decorator = admission.DecoratorFunc(decorate)

func decorate(handler admission.Interface, name string) admission.Interface {
	m, mutates := handler.(admission.MutationInterface)
	v, validates := handler.(admission.ValidationInterface)
	base := plugin{Interface: handler, name: name}
	switch {
	case mutates && validates:
		return &mutatingValidating{mutating{base, m}, validating{base, v}}
	case mutates:
		return &mutating{base, m}
	case validates:
		return &validating{base, v}
	default:
		return handler
	}
}

type plugin struct {
	admission.Interface
	name string
}

// annotate records who refused. A failure to annotate is logged and does
// not change the answer.
func (p plugin) annotate(a admission.Attributes, phase string, err error) error {
	if err == nil {
		return nil
	}
	if annotateErr := a.AddAnnotation(PluginKey, p.name); annotateErr != nil {
		klog.V(2).InfoS("Could not annotate an admission refusal", "plugin", p.name, "err", annotateErr)
	}
	if annotateErr := a.AddAnnotation(PhaseKey, phase); annotateErr != nil {
		klog.V(2).InfoS("Could not annotate an admission refusal", "plugin", p.name, "err", annotateErr)
	}
	return err
}

type mutating struct {
	plugin
	m admission.MutationInterface
}

func (p *mutating) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	return p.annotate(a, "mutating", p.m.Admit(ctx, a, o))
}

type validating struct {
	plugin
	v admission.ValidationInterface
}

func (p *validating) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	return p.annotate(a, "validating", p.v.Validate(ctx, a, o))
}

type mutatingValidating struct {
	mutating
	validating
}

// Handles is ambiguous between the two embedded plugins, which are one.
func (p *mutatingValidating) Handles(op admission.Operation) bool {
	return p.mutating.Handles(op)
}
