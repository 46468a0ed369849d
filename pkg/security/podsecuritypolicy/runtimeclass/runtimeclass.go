// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package runtimeclass holds a PodSecurityPolicy's runtimeClass rules.
package runtimeclass

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/errs"
)

// Strategy defaults and checks a pod's runtimeClassName. The zero value
// (a policy without runtimeClass) allows any and defaults none.
type Strategy struct {
	restricted bool
	allowed    []string
	allowAll   bool
	defaultRC  *string
}

// New builds the strategy; opts may be nil.
func New(opts *policy.RuntimeClassStrategyOptions) *Strategy {
	if opts == nil {
		return &Strategy{}
	}
	return &Strategy{
		restricted: true,
		allowed:    opts.AllowedRuntimeClassNames,
		allowAll:   slices.Contains(opts.AllowedRuntimeClassNames, policy.AllowAllRuntimeClassNames),
		defaultRC:  opts.DefaultRuntimeClassName,
	}
}

// Default is the runtimeClassName a pod without one gets, or nil.
func (s *Strategy) Default() *string {
	if s.defaultRC == nil {
		return nil
	}
	name := *s.defaultRC
	return &name
}

// AllowsAny reports whether Validate accepts every value: the policy
// names no runtime classes, or allows all.
func (s *Strategy) AllowsAny() bool { return !s.restricted || s.allowAll }

// Validate checks the pod's runtimeClassName at path. An unset name is
// always allowed; an empty allowed list allows no name.
func (s *Strategy) Validate(c *errs.Collector, path *field.Path, name *string) {
	if s.restricted && name != nil && !s.allowAll && !slices.Contains(s.allowed, *name) {
		c.Add(func() *field.Error { return field.Invalid(path, *name, "") })
	}
}
