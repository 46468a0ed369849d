// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package policyserver

import (
	"testing"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	upstreamopenapi "k8s.io/kubernetes/pkg/generated/openapi"
)

// The definitions are closed under their dependencies (the OpenAPI
// builders fail on a missing one), hold the policy and meta types with
// upstream's meta definitions, and leave out what the policy types never
// reach.
func TestOpenAPIDefinitions(t *testing.T) {
	ref := func(path string) spec.Ref { return spec.MustCreateRef("#/definitions/" + path) }
	defs := openAPIDefinitions(ref)
	for name, def := range defs {
		for _, dep := range def.Dependencies {
			if _, ok := defs[dep]; !ok {
				t.Errorf("%s depends on %s, which is missing", name, dep)
			}
		}
	}
	upstream := upstreamopenapi.GetOpenAPIDefinitions(ref)
	for _, name := range []string{
		"io.k8s.api.policy.v1beta1.PodSecurityPolicy",
		"io.k8s.api.policy.v1beta1.PodSecurityPolicyList",
		"io.k8s.api.core.v1.SELinuxOptions", // reached from PodSecurityPolicySpec
		"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
		"io.k8s.apimachinery.pkg.apis.meta.v1.Status",
		"io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
		"io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
	} {
		def, ok := defs[name]
		if !ok {
			t.Errorf("%s is missing", name)
			continue
		}
		if u, ok := upstream[name]; ok && !sameDefinition(def, u) {
			t.Errorf("%s is not upstream's definition", name)
		}
	}
	if _, ok := upstream["io.k8s.api.apps.v1.Deployment"]; !ok {
		t.Fatal("upstream's map does not hold apps/v1 Deployment under the name the test expects")
	}
	if _, ok := defs["io.k8s.api.core.v1.Pod"]; ok {
		t.Error("upstream definitions the policy types never reach are kept")
	}
	t.Logf("%d of upstream's %d definitions kept", len(defs), len(upstream))
	if len(defs)*4 > len(upstream) {
		t.Errorf("%d definitions kept of upstream's %d", len(defs), len(upstream))
	}
}

func sameDefinition(a, b common.OpenAPIDefinition) bool {
	return a.Schema.Description == b.Schema.Description && len(a.Schema.Properties) == len(b.Schema.Properties)
}
