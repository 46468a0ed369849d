// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package nodesproxy

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// grants allows the verbs it lists, per resource/subresource.
type grants map[string][]string

// authorizer is g as an authorizer without conditions.
func (g grants) authorizer() authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		key := a.GetResource() + "/" + a.GetSubresource()
		for _, verb := range g[key] {
			if verb == a.GetVerb() {
				return authorizer.DecisionAllow, "granted", nil
			}
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
}

func TestRule(t *testing.T) {
	attrs := func(verb, resource, subresource string) authorizer.Attributes {
		return authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "monitor"}, Verb: verb, Resource: resource,
			Subresource: subresource, Name: "node1", ResourceRequest: true, APIVersion: "v1"}
	}
	for _, tc := range []struct {
		name    string
		granted grants
		request authorizer.Attributes
		want    authorizer.Decision
	}{
		{"get without create: denied", grants{"nodes/proxy": {"get"}}, attrs("get", "nodes", "proxy"), authorizer.DecisionDeny},
		{"get with create: allowed", grants{"nodes/proxy": {"get", "create"}}, attrs("get", "nodes", "proxy"), authorizer.DecisionAllow},
		{"create alone: as before", grants{"nodes/proxy": {"create"}}, attrs("create", "nodes", "proxy"), authorizer.DecisionAllow},
		{"get refused anyway: as before", grants{}, attrs("get", "nodes", "proxy"), authorizer.DecisionNoOpinion},
		{"nodes/metrics: untouched", grants{"nodes/metrics": {"get"}}, attrs("get", "nodes", "metrics"), authorizer.DecisionAllow},
		{"nodes: untouched", grants{"nodes/": {"get"}}, attrs("get", "nodes", ""), authorizer.DecisionAllow},
		{"pods/proxy: untouched", grants{"pods/proxy": {"get"}}, attrs("get", "pods", "proxy"), authorizer.DecisionAllow},
		{"a non-resource URL: untouched", grants{"/": {"get"}}, authorizer.AttributesRecord{Verb: "get", Path: "/healthz"}, authorizer.DecisionAllow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason, err := Wrap(tc.granted.authorizer()).Authorize(context.Background(), tc.request)
			if err != nil || got != tc.want {
				t.Errorf("decision %v (%q, %v), want %v", got, reason, err, tc.want)
			}
			if got == authorizer.DecisionDeny && reason != Reason {
				t.Errorf("reason %q, want %q", reason, Reason)
			}
		})
	}
}

// BenchmarkRule is what the rule adds to an authorization: nothing for most
// requests, one more call of the authorizer for a get on nodes/proxy.
func BenchmarkRule(b *testing.B) {
	r := Wrap(grants{"pods/": {"get"}, "nodes/proxy": {"get", "create"}}.authorizer())
	ctx := context.Background()
	for _, a := range []struct {
		name  string
		attrs authorizer.Attributes
	}{
		{"pods", authorizer.AttributesRecord{Verb: "get", Resource: "pods", ResourceRequest: true}},
		{"nodes/proxy", authorizer.AttributesRecord{Verb: "get", Resource: "nodes", Subresource: "proxy", ResourceRequest: true}},
	} {
		b.Run(a.name, func(b *testing.B) {
			for b.Loop() {
				_, _, _ = r.Authorize(ctx, a.attrs)
			}
		})
	}
}
