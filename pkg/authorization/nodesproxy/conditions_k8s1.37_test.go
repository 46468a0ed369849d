// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !k8s_before_1.37

package nodesproxy

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// TestConditionsAware holds a conditions-aware caller to the same rule.
func TestConditionsAware(t *testing.T) {
	get := authorizer.AttributesRecord{Verb: "get", Resource: "nodes", Subresource: "proxy", Name: "node1", ResourceRequest: true}
	for _, tc := range []struct {
		name    string
		granted grants
		allow   bool
	}{
		{"get without create: denied", grants{"nodes/proxy": {"get"}}, false},
		{"get with create: allowed", grants{"nodes/proxy": {"get", "create"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Wrap(tc.granted.authorizer()).ConditionsAwareAuthorize(context.Background(), get)
			if d.IsAllow() != tc.allow {
				t.Errorf("allowed %v, want %v (reason %q)", d.IsAllow(), tc.allow, d.Reason())
			}
			if !tc.allow && (!d.IsDeny() || d.Reason() != Reason) {
				t.Errorf("want a deny with Reason, got deny=%v reason %q", d.IsDeny(), d.Reason())
			}
		})
	}
}
