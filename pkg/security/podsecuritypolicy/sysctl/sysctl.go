// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sysctl holds a PodSecurityPolicy's sysctl rules: forbidden
// sysctls, the safe set every pod may use, and allowed unsafe sysctls.
package sysctl

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/node/util/sysctl"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/errs"
)

// safe is the set of sysctls that v1.24's PodSecurityPolicy let every pod
// use. It is fixed here: the kubelet's newer, kernel-dependent list is the
// node's business, not the apiserver's.
var safe = []string{
	"kernel.shm_rmid_forced",
	"net.ipv4.ip_local_port_range",
	"net.ipv4.tcp_syncookies",
	"net.ipv4.ping_group_range",
	"net.ipv4.ip_unprivileged_port_start",
}

// Strategy checks a pod's sysctls.
type Strategy struct {
	allowedUnsafe, forbidden []string
}

// New builds the strategy from the policy's lists, whose entries are names
// or "prefix*" patterns.
func New(allowedUnsafe, forbidden []string) *Strategy {
	return &Strategy{allowedUnsafe: allowedUnsafe, forbidden: forbidden}
}

// Validate checks the pod's sysctls at path (one error per refused entry).
// A forbidden sysctl is refused even when it is safe. Names written with
// "/" separators are judged as their "." form.
func (s *Strategy) Validate(c *errs.Collector, path *field.Path, sysctls []api.Sysctl) {
	for i, sc := range sysctls {
		name := sysctl.NormalizeName(sc.Name)
		switch {
		case matches(s.forbidden, name):
			c.Add(func() *field.Error {
				return field.Forbidden(path.Index(i), fmt.Sprintf("sysctl %q is not allowed", sc.Name))
			})
		case slices.Contains(safe, name), matches(s.allowedUnsafe, name):
		default:
			c.Add(func() *field.Error {
				return field.Forbidden(path.Index(i), fmt.Sprintf("unsafe sysctl %q is not allowed", sc.Name))
			})
		}
	}
}

// matches reports whether name equals an entry or starts with the prefix of
// an entry ending in "*".
func matches(patterns []string, name string) bool {
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		} else if p == name {
			return true
		}
	}
	return false
}
