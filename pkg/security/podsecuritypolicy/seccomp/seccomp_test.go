// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package seccomp

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
)

// TestNewDefault: a default profile is written as the pod's seccompProfile
// field, so only names a field can express build a strategy; the policy
// API refuses the others (v1.24 wrote any name into the annotation).
func TestNewDefault(t *testing.T) {
	for _, tc := range []struct {
		name string
		want *api.SeccompProfile // nil: New fails
	}{
		{"runtime/default", &api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault}},
		{"docker/default", &api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault}},
		{"unconfined", &api.SeccompProfile{Type: api.SeccompProfileTypeUnconfined}},
		{"localhost/a/b.json", &api.SeccompProfile{Type: api.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("a/b.json")}},
		{"localhost/", nil},
		{"foo", nil},
		{"RuntimeDefault", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(map[string]string{policy.SeccompDefaultProfileAnnotationKey: tc.name})
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
			// The field reads back as a name the allowed list can hold.
			if got, want := nameFor(s.DefaultProfile()), tc.name; got != want && !(want == "docker/default" && got == "runtime/default") {
				t.Errorf("nameFor(DefaultProfile()) = %q, want %q", got, want)
			}
		})
	}
	if s, err := New(nil); err != nil || s.HasDefault() {
		t.Errorf("New(nil) = %v, %v; want no default", s, err)
	}
}
