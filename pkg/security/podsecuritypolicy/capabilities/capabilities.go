// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package capabilities holds a PodSecurityPolicy's capability rules:
// capabilities added by default, capabilities every container must drop,
// and those a container may add. Names are compared as exact strings, so
// dropping ALL does not satisfy a required NET_RAW drop.
package capabilities

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/errs"
)

// wildcard in allowedCapabilities lets containers add any capability.
const wildcard api.Capability = "*"

// Strategy defaults and checks a container's capabilities.
type Strategy struct {
	defaultAdd, requiredDrop, allowed []api.Capability
	allowAll                          bool
}

// New builds the strategy from the policy's three lists.
func New(defaultAdd, requiredDrop, allowed []api.Capability) *Strategy {
	return &Strategy{
		defaultAdd:   defaultAdd,
		requiredDrop: requiredDrop,
		allowed:      allowed,
		allowAll:     slices.Contains(allowed, wildcard),
	}
}

// Generate returns the capabilities a container ends up with: add gets the
// default additions the container does not drop, drop gets the required
// drops. When neither list gains a name (Grows is false) the container's
// value is returned as it is (duplicates included) and changed is false;
// otherwise both lists are sorted and de-duplicated.
func (s *Strategy) Generate(caps *api.Capabilities) (result *api.Capabilities, changed bool) {
	if !s.Grows(caps) {
		return caps, false
	}
	var add, drop []api.Capability
	if caps != nil {
		add, drop = caps.Add, caps.Drop
	}
	newAdd := slices.Clone(add)
	for _, c := range s.defaultAdd {
		if !slices.Contains(drop, c) {
			newAdd = append(newAdd, c)
		}
	}
	newDrop := append(slices.Clone(drop), s.requiredDrop...)
	return &api.Capabilities{Add: sortedSet(newAdd), Drop: sortedSet(newDrop)}, true
}

// Defaults reports whether the strategy can change any container's
// capabilities: whether it adds or requires dropping any.
func (s *Strategy) Defaults() bool { return len(s.defaultAdd) > 0 || len(s.requiredDrop) > 0 }

// Grows reports, without allocating, whether Generate would change caps:
// a default addition the container neither adds nor drops, or a required
// drop it does not drop.
func (s *Strategy) Grows(caps *api.Capabilities) bool {
	var add, drop []api.Capability
	if caps != nil {
		add, drop = caps.Add, caps.Drop
	}
	for _, c := range s.defaultAdd {
		if !slices.Contains(drop, c) && !slices.Contains(add, c) {
			return true
		}
	}
	for _, c := range s.requiredDrop {
		if !slices.Contains(drop, c) {
			return true
		}
	}
	return false
}

// sortedSet sorts and de-duplicates, keeping nil for an empty list.
func sortedSet(caps []api.Capability) []api.Capability {
	if len(caps) == 0 {
		return nil
	}
	slices.Sort(caps)
	return slices.Compact(caps)
}

// AllowsAny reports whether Validate accepts every container: any
// capability may be added, and none is added by default or must be
// dropped (a container without capabilities fails a policy that has
// either).
func (s *Strategy) AllowsAny() bool { return s.allowAll && !s.Defaults() }

// Validate checks the capabilities of the securityContext at scPath.
func (s *Strategy) Validate(c *errs.Collector, scPath *field.Path, caps *api.Capabilities) {
	switch {
	case caps == nil:
		if len(s.defaultAdd) > 0 || len(s.requiredDrop) > 0 {
			c.Add(func() *field.Error {
				return field.Invalid(scPath.Child("capabilities"), caps, "required capabilities are not set on the securityContext")
			})
		}
		return
	case s.allowAll:
		return
	}
	for _, cap := range caps.Add {
		if !slices.Contains(s.defaultAdd, cap) && !slices.Contains(s.allowed, cap) {
			c.Add(func() *field.Error {
				return field.Invalid(scPath.Child("capabilities", "add"), string(cap), "capability may not be added")
			})
		}
	}
	for _, cap := range s.requiredDrop {
		if !slices.Contains(caps.Drop, cap) {
			c.Add(func() *field.Error {
				return field.Invalid(scPath.Child("capabilities", "drop"), caps.Drop, string(cap)+" is required to be dropped but was not found")
			})
		}
	}
}
