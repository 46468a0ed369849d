// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package seccomp holds a PodSecurityPolicy's seccomp rules, given by the
// policy's annotations. Profiles are compared in the annotation form
// (runtime/default, unconfined, localhost/<path>). Since v1.25 nodes read
// only the securityContext.seccompProfile fields, so the effective profile
// is the field's, and the deprecated annotations only stand in for a field
// that is unset.
package seccomp

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

// Strategy defaults and checks seccomp profiles.
type Strategy struct {
	defaultProfile *api.SeccompProfile
	allowed        []string
	allowAny       bool
	allowedRaw     string // the annotation as written, for messages
}

// New builds the strategy from the policy's annotations. A default name
// that no seccompProfile field can express is an error (the API refuses
// it, so only old stored data can carry one).
func New(annotations map[string]string) (*Strategy, error) {
	s := &Strategy{allowedRaw: annotations[policy.SeccompAllowedProfilesAnnotationKey]}
	if name := annotations[policy.SeccompDefaultProfileAnnotationKey]; name != "" {
		p, err := fieldFor(name)
		if err != nil {
			return nil, fmt.Errorf("annotation %s: %w", policy.SeccompDefaultProfileAnnotationKey, err)
		}
		s.defaultProfile = p
	}
	if s.allowedRaw != "" {
		for _, p := range strings.Split(s.allowedRaw, ",") {
			if p == policy.SeccompAllowAny {
				s.allowAny = true
				continue
			}
			s.allowed = append(s.allowed, p)
		}
	}
	return s, nil
}

// HasDefault reports whether DefaultProfile returns a profile.
func (s *Strategy) HasDefault() bool {
	return s.defaultProfile != nil
}

// DefaultProfile returns a fresh copy of the pod-level profile that a pod
// with no profile gets, or nil.
func (s *Strategy) DefaultProfile() *api.SeccompProfile {
	return s.defaultProfile.DeepCopy()
}

// AllowsAny reports whether Validate accepts every value: the policy
// allows every profile (*).
func (s *Strategy) AllowsAny() bool { return s.allowAny }

// Validate checks one effective profile ("" for none); path, called
// only for an error, says where it is.
func (s *Strategy) Validate(c *errs.Collector, path func() *field.Path, profile string) {
	switch {
	case !s.allowAny && len(s.allowed) == 0 && profile != "":
		c.Add(func() *field.Error { return field.Forbidden(path(), "seccomp may not be set") })
	case !s.allows(profile):
		c.Add(func() *field.Error {
			return field.Forbidden(path(), fmt.Sprintf("%s is not an allowed seccomp profile. Valid values are %v", profile, s.allowedRaw))
		})
	}
}

func (s *Strategy) allows(profile string) bool {
	switch {
	case len(s.allowed) == 0 && profile == "", s.allowAny, slices.Contains(s.allowed, profile):
		return true
	case profile == api.DeprecatedSeccompProfileDockerDefault:
		return slices.Contains(s.allowed, api.SeccompProfileRuntimeDefault)
	case profile == api.SeccompProfileRuntimeDefault:
		return slices.Contains(s.allowed, api.DeprecatedSeccompProfileDockerDefault)
	}
	return false
}

// PodProfile is the pod's effective profile: its field, else its
// annotation.
func PodProfile(pod *api.Pod) string {
	if sc := pod.Spec.SecurityContext; sc != nil && sc.SeccompProfile != nil {
		return nameFor(sc.SeccompProfile)
	}
	return pod.Annotations[api.SeccompPodAnnotationKey]
}

// PodHasProfile reports whether PodProfile is not empty, without building
// the name.
func PodHasProfile(pod *api.Pod) bool {
	if sc := pod.Spec.SecurityContext; sc != nil && sc.SeccompProfile != nil {
		return true
	}
	return len(pod.Annotations) > 0 && pod.Annotations[api.SeccompPodAnnotationKey] != ""
}

// ContainerProfile is a container's effective profile: its field, else its
// annotation, else the pod's.
func ContainerProfile(pod *api.Pod, name string, sc *api.SecurityContext) string {
	if sc != nil && sc.SeccompProfile != nil {
		return nameFor(sc.SeccompProfile)
	}
	if p, ok := profile.ContainerAnnotation(pod.Annotations, api.SeccompContainerAnnotationKeyPrefix, name); ok {
		return p
	}
	return PodProfile(pod)
}

// PodAnnotationField returns the field that makes the pod's deprecated
// annotation take effect, or nil: when the pod has no field, and the
// annotation names a profile a field can name. Since v1.27 the apiserver no
// longer copies the annotation into the field, and nodes read only the
// field, so a pod judged by its annotation alone would run with the node's
// default profile instead.
func PodAnnotationField(pod *api.Pod) *api.SeccompProfile {
	if sc := pod.Spec.SecurityContext; sc != nil && sc.SeccompProfile != nil || len(pod.Annotations) == 0 {
		return nil
	}
	return annotationField(pod.Annotations[api.SeccompPodAnnotationKey])
}

// ContainerAnnotationField is PodAnnotationField for a container.
func ContainerAnnotationField(pod *api.Pod, name string, sc *api.SecurityContext) *api.SeccompProfile {
	if sc != nil && sc.SeccompProfile != nil || len(pod.Annotations) == 0 {
		return nil
	}
	p, _ := profile.ContainerAnnotation(pod.Annotations, api.SeccompContainerAnnotationKeyPrefix, name)
	return annotationField(p)
}

func annotationField(name string) *api.SeccompProfile {
	if name == "" {
		return nil
	}
	field, err := fieldFor(name)
	if err != nil {
		return nil
	}
	return field
}

// nameFor writes a field in the annotation form.
func nameFor(p *api.SeccompProfile) string {
	return profile.Name(string(p.Type), p.LocalhostProfile)
}

// fieldFor turns an annotation-form name into the field; docker/default is
// the runtime's default.
func fieldFor(name string) (*api.SeccompProfile, error) {
	if name == api.DeprecatedSeccompProfileDockerDefault {
		name = profile.RuntimeDefault
	}
	typ, localhost, err := profile.Field(name)
	if err != nil {
		return nil, err
	}
	return &api.SeccompProfile{Type: api.SeccompProfileType(typ), LocalhostProfile: localhost}, nil
}
