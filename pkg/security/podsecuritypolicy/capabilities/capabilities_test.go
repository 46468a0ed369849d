// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package capabilities

import (
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/errs"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// TestValidate covers the messages of a container's capabilities that the
// conformance cases (25-28) do not reach: a container without capabilities
// under a policy that defaults some (a Windows pod, or an ephemeral
// container added later, which get no defaults), and missing required
// drops.
func TestValidate(t *testing.T) {
	caps := func(l ...api.Capability) []api.Capability { return l }
	for _, tc := range []struct {
		name                            string
		defaultAdd, requiredDrop, allow []api.Capability
		container                       *api.Capabilities
		want                            []string
	}{
		{name: "nil, nothing required", container: nil},
		{
			name: "nil, default add", defaultAdd: caps("foo"), container: nil,
			want: []string{"sc.capabilities: Invalid value: null: required capabilities are not set on the securityContext"},
		},
		{
			name: "nil, required drop", requiredDrop: caps("NET_RAW"), container: nil,
			want: []string{"sc.capabilities: Invalid value: null: required capabilities are not set on the securityContext"},
		},
		{name: "empty, default add", defaultAdd: caps("foo"), container: &api.Capabilities{}},
		{
			name: "required drop missing, ALL dropped", requiredDrop: caps("NET_RAW", "foo"), container: &api.Capabilities{Drop: caps("ALL", "foo")},
			want: []string{`sc.capabilities.drop: Invalid value: ["ALL","foo"]: NET_RAW is required to be dropped but was not found`},
		},
		{
			name: "add not allowed, each reported", allow: caps("bar"), container: &api.Capabilities{Add: caps("foo", "bar", "baz")},
			want: []string{
				`sc.capabilities.add: Invalid value: "foo": capability may not be added`,
				`sc.capabilities.add: Invalid value: "baz": capability may not be added`,
			},
		},
		{name: "wildcard skips every check", allow: caps("*"), requiredDrop: caps("NET_RAW"), container: &api.Capabilities{Add: caps("SYS_ADMIN")}},
		{name: "default add may be added", defaultAdd: caps("foo"), container: &api.Capabilities{Add: caps("foo")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			s := New(tc.defaultAdd, tc.requiredDrop, tc.allow)
			for _, err := range errs.All(func(c *errs.Collector) { s.Validate(c, field.NewPath("sc"), tc.container) }) {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
