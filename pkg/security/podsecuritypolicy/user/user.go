// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package user holds the runAsUser strategies of a PodSecurityPolicy:
// MustRunAs (a UID in the ranges), MustRunAsNonRoot and RunAsAny.
package user

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/errs"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/group"
)

// Strategy defaults and checks a container's effective user.
type Strategy struct {
	rule   policy.RunAsUserStrategy
	ranges []policy.IDRange
	detail string // the out-of-range message, printed once
}

// New builds the strategy. MustRunAs needs a range; the API accepts a
// policy without one, and such a policy is skipped.
func New(opts policy.RunAsUserStrategyOptions) (*Strategy, error) {
	switch opts.Rule {
	case policy.RunAsUserStrategyMustRunAs:
		if len(opts.Ranges) == 0 {
			return nil, fmt.Errorf("MustRunAs requires at least one range")
		}
	case policy.RunAsUserStrategyMustRunAsNonRoot, policy.RunAsUserStrategyRunAsAny:
	default:
		return nil, fmt.Errorf("unrecognized RunAsUser strategy type %q", opts.Rule)
	}
	return &Strategy{rule: opts.Rule, ranges: opts.Ranges, detail: "must be in the ranges: " + group.FormatRanges(opts.Ranges)}, nil
}

// Default is the UID a container without one gets: the first range's
// minimum under MustRunAs.
func (s *Strategy) Default() (int64, bool) {
	if s.rule != policy.RunAsUserStrategyMustRunAs {
		return 0, false
	}
	return s.ranges[0].Min, true
}

// RequiresNonRoot is true under MustRunAsNonRoot, where a container with
// neither runAsUser nor runAsNonRoot is given runAsNonRoot: true.
func (s *Strategy) RequiresNonRoot() bool {
	return s.rule == policy.RunAsUserStrategyMustRunAsNonRoot
}

// Validate checks the effective runAsNonRoot and runAsUser (container's,
// AllowsAny reports whether Validate accepts every container: neither
// MustRunAs nor MustRunAsNonRoot.
func (s *Strategy) AllowsAny() bool {
	return s.rule != policy.RunAsUserStrategyMustRunAs && s.rule != policy.RunAsUserStrategyMustRunAsNonRoot
}

// else pod's) of the container whose securityContext is at path.
func (s *Strategy) Validate(c *errs.Collector, path *field.Path, runAsNonRoot *bool, runAsUser *int64) {
	switch s.rule {
	case policy.RunAsUserStrategyMustRunAs:
		switch {
		case runAsUser == nil:
			c.Add(func() *field.Error { return field.Required(path.Child("runAsUser"), "") })
		case !group.InRanges(s.ranges, *runAsUser):
			c.Add(func() *field.Error { return field.Invalid(path.Child("runAsUser"), *runAsUser, s.detail) })
		}
	case policy.RunAsUserStrategyMustRunAsNonRoot:
		switch {
		case runAsNonRoot == nil && runAsUser == nil:
			c.Add(func() *field.Error { return field.Required(path.Child("runAsNonRoot"), "must be true") })
		case runAsNonRoot != nil && !*runAsNonRoot:
			c.Add(func() *field.Error { return field.Invalid(path.Child("runAsNonRoot"), *runAsNonRoot, "must be true") })
		case runAsUser != nil && *runAsUser == 0:
			c.Add(func() *field.Error {
				return field.Invalid(path.Child("runAsUser"), *runAsUser, "running with the root UID is forbidden")
			})
		}
	}
}
