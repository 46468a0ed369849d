// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"
)

func TestNameAndField(t *testing.T) {
	cases := []struct {
		name      string
		typ       string
		localhost *string
		wantErr   bool
	}{
		{name: "runtime/default", typ: "RuntimeDefault"},
		{name: "unconfined", typ: "Unconfined"},
		{name: "localhost/profiles/audit.json", typ: "Localhost", localhost: ptr.To("profiles/audit.json")},
		{name: "localhost/", wantErr: true},
		{name: "docker/default", wantErr: true}, // seccomp maps it before asking
		{name: "", wantErr: true},
	}
	for _, tc := range cases {
		typ, localhost, err := Field(tc.name)
		if (err != nil) != tc.wantErr {
			t.Errorf("Field(%q) error = %v, want error %v", tc.name, err, tc.wantErr)
			continue
		}
		if tc.wantErr {
			continue
		}
		if typ != tc.typ || ptr.Deref(localhost, "") != ptr.Deref(tc.localhost, "") {
			t.Errorf("Field(%q) = %q, %v; want %q, %v", tc.name, typ, ptr.Deref(localhost, ""), tc.typ, ptr.Deref(tc.localhost, ""))
		}
		if back := Name(typ, localhost); back != tc.name {
			t.Errorf("Name(Field(%q)) = %q", tc.name, back)
		}
	}
	if got := Name("Localhost", nil); got != "" {
		t.Errorf("Name(Localhost, nil) = %q, want empty", got)
	}
	// A type without an annotation form (v1.38's OCI) is no profile a
	// policy can name, and not the empty name of a pod without one.
	if got := Name("OCI", nil); got != "OCI" {
		t.Errorf("Name(OCI, nil) = %q, want OCI", got)
	}
}

func TestContainerAnnotation(t *testing.T) {
	const prefix = "container.apparmor.security.beta.kubernetes.io/"
	long := strings.Repeat("c", 63) // the longest container name
	annotations := map[string]string{prefix + "app": "runtime/default", prefix + long: "unconfined", prefix + "empty": ""}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		container   string
		want        string
		wantOK      bool
	}{
		{"the container's annotation", annotations, "app", "runtime/default", true},
		{"the longest name", annotations, long, "unconfined", true},
		{"an empty value is there", annotations, "empty", "", true},
		{"another container's is not", annotations, "sidecar", "", false},
		{"no annotations", nil, "app", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ContainerAnnotation(tc.annotations, prefix, tc.container)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("ContainerAnnotation(%q) = %q, %v; want %q, %v", tc.container, got, ok, tc.want, tc.wantOK)
			}
		})
	}
	if allocs := testing.AllocsPerRun(100, func() { ContainerAnnotation(annotations, prefix, long) }); allocs != 0 {
		t.Errorf("ContainerAnnotation allocates %v times a call, want none", allocs)
	}
}
