// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package selinux holds the SELinux strategies of a PodSecurityPolicy:
// MustRunAs (exactly the policy's options) and RunAsAny.
package selinux

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/errs"
)

// Strategy defaults and checks seLinuxOptions.
type Strategy struct {
	required *api.SELinuxOptions // nil under RunAsAny
}

// New builds the strategy. MustRunAs needs options; the API accepts a
// policy without them, and such a policy is skipped.
func New(opts policy.SELinuxStrategyOptions) (*Strategy, error) {
	switch opts.Rule {
	case policy.SELinuxStrategyMustRunAs:
		if opts.SELinuxOptions == nil {
			return nil, fmt.Errorf("MustRunAs requires SELinuxOptions")
		}
		return &Strategy{required: opts.SELinuxOptions.DeepCopy()}, nil
	case policy.SELinuxStrategyRunAsAny:
		return &Strategy{}, nil
	}
	return nil, fmt.Errorf("unrecognized SELinuxContext strategy type %q", opts.Rule)
}

// HasDefault reports whether Default returns options.
func (s *Strategy) HasDefault() bool {
	return s.required != nil
}

// Default returns a fresh copy of the options a pod without any gets, or
// nil under RunAsAny.
func (s *Strategy) Default() *api.SELinuxOptions {
	return s.required.DeepCopy()
}

// AllowsAny reports whether Validate accepts every value: RunAsAny.
func (s *Strategy) AllowsAny() bool { return s.required == nil }

// Validate checks the effective options (the container's, else the pod's)
// of the securityContext at scPath. The level's categories may come in any
// order.
func (s *Strategy) Validate(c *errs.Collector, scPath *field.Path, opts *api.SELinuxOptions) {
	r := s.required
	switch {
	case r == nil:
		return
	case opts == nil:
		c.Add(func() *field.Error { return field.Required(scPath.Child("seLinuxOptions"), "") })
		return
	}
	mismatch := func(name, got, want string) {
		c.Add(func() *field.Error { return field.Invalid(scPath.Child("seLinuxOptions", name), got, "must be "+want) })
	}
	if !equalLevels(r.Level, opts.Level) {
		mismatch("level", opts.Level, r.Level)
	}
	if r.Role != opts.Role {
		mismatch("role", opts.Role, r.Role)
	}
	if r.Type != opts.Type {
		mismatch("type", opts.Type, r.Type)
	}
	if r.User != opts.User {
		mismatch("user", opts.User, r.User)
	}
}

// equalLevels compares MLS levels "sensitivity:categories", where the
// categories are a set ("s0:c6,c0" equals "s0:c0,c6").
func equalLevels(a, b string) bool {
	if a == b {
		return true
	}
	sa, ca, okA := strings.Cut(a, ":")
	sb, cb, okB := strings.Cut(b, ":")
	if !okA || !okB || sa != sb {
		return false
	}
	x, y := strings.Split(ca, ","), strings.Split(cb, ",")
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}
