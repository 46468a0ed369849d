// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package apparmor holds a PodSecurityPolicy's AppArmor rules, given by the
// policy's annotations. Profiles are compared in the annotation form
// (runtime/default, unconfined, localhost/<name>). Since v1.30 the profile
// is a securityContext.appArmorProfile field, so a container's effective
// profile is its field, else its deprecated annotation, else the pod's field.
package apparmor

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/errs"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/profile"
)

// Strategy defaults and checks AppArmor profiles.
type Strategy struct {
	defaultProfile *api.AppArmorProfile
	allowed        []string // nil: any profile, or none
	allowedRaw     string
}

// New builds the strategy from the policy's annotations. A default that no
// appArmorProfile field can express is an error (the API refuses it, so
// only old stored data can carry one).
func New(annotations map[string]string) (*Strategy, error) {
	s := &Strategy{}
	if name := annotations[policy.AppArmorDefaultProfileAnnotationKey]; name != "" {
		p, err := fieldFor(name)
		if err != nil {
			return nil, err
		}
		s.defaultProfile = p
	}
	if raw, ok := annotations[policy.AppArmorAllowedProfilesAnnotationKey]; ok {
		s.allowedRaw = raw
		s.allowed = strings.Split(raw, ",")
	}
	return s, nil
}

// HasDefault reports whether DefaultProfile returns a profile.
func (s *Strategy) HasDefault() bool {
	return s.defaultProfile != nil
}

// DefaultProfile returns a fresh copy of the container-level profile that a
// container with no effective profile gets, or nil.
func (s *Strategy) DefaultProfile() *api.AppArmorProfile {
	return s.defaultProfile.DeepCopy()
}

// AllowsAny reports whether Validate accepts every value: the policy
// names no allowed profiles.
func (s *Strategy) AllowsAny() bool { return s.allowed == nil }

// Validate checks a container's effective profile ("" for none); path,
// called only for an error, says where it is.
// Without an allowed list any profile, or none, is allowed.
func (s *Strategy) Validate(c *errs.Collector, path func() *field.Path, profile string) {
	switch {
	case s.allowed == nil:
	case profile == "":
		c.Add(func() *field.Error { return field.Forbidden(path(), "AppArmor profile must be set") })
	case !slices.Contains(s.allowed, profile):
		c.Add(func() *field.Error {
			return field.Forbidden(path(), fmt.Sprintf("%s is not an allowed profile. Allowed values: %q", profile, s.allowedRaw))
		})
	}
}

// ContainerProfile is a container's effective profile.
func ContainerProfile(pod *api.Pod, name string, sc *api.SecurityContext) string {
	if sc != nil && sc.AppArmorProfile != nil {
		return nameFor(sc.AppArmorProfile)
	}
	if p, _ := profile.ContainerAnnotation(pod.Annotations, api.DeprecatedAppArmorAnnotationKeyPrefix, name); p != "" {
		return p
	}
	if psc := pod.Spec.SecurityContext; psc != nil && psc.AppArmorProfile != nil {
		return nameFor(psc.AppArmorProfile)
	}
	return ""
}

// ContainerHasProfile reports whether ContainerProfile is not empty,
// without building the name.
func ContainerHasProfile(pod *api.Pod, name string, sc *api.SecurityContext) bool {
	if sc != nil && sc.AppArmorProfile != nil {
		return true
	}
	if psc := pod.Spec.SecurityContext; psc != nil && psc.AppArmorProfile != nil {
		return true
	}
	p, _ := profile.ContainerAnnotation(pod.Annotations, api.DeprecatedAppArmorAnnotationKeyPrefix, name)
	return p != ""
}

// nameFor writes a field in the annotation form.
func nameFor(p *api.AppArmorProfile) string {
	return profile.Name(string(p.Type), p.LocalhostProfile)
}

// fieldFor turns an annotation-form name into the field.
func fieldFor(name string) (*api.AppArmorProfile, error) {
	typ, localhost, err := profile.Field(name)
	if err != nil {
		return nil, fmt.Errorf("annotation %s: %w", policy.AppArmorDefaultProfileAnnotationKey, err)
	}
	return &api.AppArmorProfile{Type: api.AppArmorProfileType(typ), LocalhostProfile: localhost}, nil
}
