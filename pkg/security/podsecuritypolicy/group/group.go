// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package group holds the MustRunAs, MayRunAs and RunAsAny strategies that
// PodSecurityPolicy applies to runAsGroup, fsGroup and supplementalGroups,
// and the ID range checks that the user strategy shares.
package group

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/errs"
)

// The rules, common to the three group fields.
const (
	mustRunAs = "MustRunAs"
	mayRunAs  = "MayRunAs"
	runAsAny  = "RunAsAny"
)

// Strategy defaults and checks group IDs.
type Strategy struct {
	rule       string
	ranges     []policy.IDRange
	rangesText string // FormatRanges(ranges), printed once
}

// New builds the strategy for rule. MustRunAs and MayRunAs need a range;
// the API accepts policies without one, and such a policy is skipped.
func New(rule string, ranges []policy.IDRange) (*Strategy, error) {
	switch rule {
	case mustRunAs, mayRunAs:
		if len(ranges) == 0 {
			return nil, fmt.Errorf("ranges must be supplied for %s", rule)
		}
	case runAsAny:
	default:
		return nil, fmt.Errorf("unrecognized group strategy type %q", rule)
	}
	return &Strategy{rule: rule, ranges: ranges, rangesText: FormatRanges(ranges)}, nil
}

// Default is the group a pod that sets none gets: the first range's minimum
// under MustRunAs, none otherwise.
func (s *Strategy) Default() (int64, bool) {
	if s.rule != mustRunAs {
		return 0, false
	}
	return s.ranges[0].Min, true
}

// ValidateOne checks a single optional group ID (runAsGroup, fsGroup).
func (s *Strategy) ValidateOne(c *errs.Collector, path *field.Path, id *int64) {
	switch {
	case s.rule == runAsAny:
	case id == nil:
		if s.rule == mustRunAs {
			c.Add(func() *field.Error { return field.Invalid(path, []int64{}, emptyGroups) })
		}
	case !InRanges(s.ranges, *id):
		c.Add(func() *field.Error { return field.Invalid(path, []int64{*id}, s.outOfRanges(*id)) })
	}
}

// AllowsAny reports whether the strategy accepts every value (RunAsAny):
// then neither ValidateOne nor ValidateList can fail.
func (s *Strategy) AllowsAny() bool { return s.rule == runAsAny }

// ValidateList checks a list of group IDs (supplementalGroups).
func (s *Strategy) ValidateList(c *errs.Collector, path *field.Path, ids []int64) {
	switch {
	case s.rule == runAsAny:
	case len(ids) == 0:
		if s.rule == mustRunAs {
			c.Add(func() *field.Error { return field.Invalid(path, ids, emptyGroups) })
		}
	default:
		for _, id := range ids {
			if !InRanges(s.ranges, id) {
				c.Add(func() *field.Error { return field.Invalid(path, ids, s.outOfRanges(id)) })
			}
		}
	}
}

const emptyGroups = "unable to validate empty groups against required ranges"

func (s *Strategy) outOfRanges(id int64) string {
	return "group " + strconv.FormatInt(id, 10) + " must be in the ranges: " + s.rangesText
}

// InRanges reports whether id lies in one of the inclusive ranges.
func InRanges(ranges []policy.IDRange, id int64) bool {
	for _, r := range ranges {
		if id >= r.Min && id <= r.Max {
			return true
		}
	}
	return false
}

// FormatRanges prints ranges as v1.24's messages did: [{1 1} {5 10}].
func FormatRanges(ranges []policy.IDRange) string {
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = fmt.Sprintf("{%d %d}", r.Min, r.Max)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
