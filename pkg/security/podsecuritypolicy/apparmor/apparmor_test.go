// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package apparmor

import (
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/errs"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
)

// TestNewDefault: a default profile is written as the containers'
// appArmorProfile field, so only names a field can express build a
// strategy.
func TestNewDefault(t *testing.T) {
	for _, tc := range []struct {
		name string
		want *api.AppArmorProfile // nil: New fails
	}{
		{"runtime/default", &api.AppArmorProfile{Type: api.AppArmorProfileTypeRuntimeDefault}},
		{"unconfined", &api.AppArmorProfile{Type: api.AppArmorProfileTypeUnconfined}},
		{"localhost/k8s-nginx", &api.AppArmorProfile{Type: api.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("k8s-nginx")}},
		{"localhost/", nil},
		{"docker/default", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(map[string]string{policy.AppArmorDefaultProfileAnnotationKey: tc.name})
			if tc.want == nil {
				if err == nil {
					t.Errorf("New accepted the default %q", tc.name)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s.DefaultProfile()); diff != "" {
				t.Errorf("DefaultProfile (-want +got):\n%s", diff)
			}
			if got := nameFor(s.DefaultProfile()); got != tc.name {
				t.Errorf("nameFor(DefaultProfile()) = %q, want %q", got, tc.name)
			}
		})
	}
}

// TestAllowedList: an allowed-profiles annotation restricts even when it is
// empty; without it any profile, or none, passes.
func TestAllowedList(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		profile     string
		wantErr     string
	}{
		{"no annotation, no profile", nil, "", ""},
		{"no annotation, any profile", nil, "localhost/x", ""},
		{"empty annotation, no profile", map[string]string{policy.AppArmorAllowedProfilesAnnotationKey: ""}, "", "p: Forbidden: AppArmor profile must be set"},
		{"listed", map[string]string{policy.AppArmorAllowedProfilesAnnotationKey: "runtime/default,localhost/x"}, "localhost/x", ""},
		{
			"not listed", map[string]string{policy.AppArmorAllowedProfilesAnnotationKey: "runtime/default"}, "unconfined",
			`p: Forbidden: unconfined is not an allowed profile. Allowed values: "runtime/default"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.annotations)
			if err != nil {
				t.Fatal(err)
			}
			errs := errs.All(func(c *errs.Collector) { s.Validate(c, func() *field.Path { return field.NewPath("p") }, tc.profile) })
			got := ""
			if len(errs) > 0 {
				got = errs.ToAggregate().Error()
			}
			if got != tc.wantErr {
				t.Errorf("got %q, want %q", got, tc.wantErr)
			}
		})
	}
}
