// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package volumes

import (
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/errs"
	"reflect"
	"slices"
	"strings"
	"testing"

	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/apis/policy/validation"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/psptesting"
)

// TestEveryVolumeSourceHasAType fails when a Kubernetes bump adds a volume
// source (as v1.31 added image): an unknown source is refused even under
// volumes: ["*"], so each needs an FSType.
func TestEveryVolumeSourceHasAType(t *testing.T) {
	seen := map[policy.FSType]string{}
	typ := reflect.TypeFor[api.VolumeSource]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		t.Run(f.Name, func(t *testing.T) {
			if f.Type.Kind() != reflect.Pointer {
				t.Fatalf("VolumeSource.%s is a %s, not a pointer to a source", f.Name, f.Type)
			}
			var v api.Volume
			reflect.ValueOf(&v.VolumeSource).Elem().Field(i).Set(reflect.New(f.Type.Elem()))
			fsType, ok := TypeOf(&v)
			if !ok {
				t.Fatalf("VolumeSource.%s has no FSType", f.Name)
			}
			if other, dup := seen[fsType]; dup {
				t.Errorf("VolumeSource.%s and .%s are both %q", f.Name, other, fsType)
			}
			seen[fsType] = f.Name
			if !slices.Contains(validation.AllFSTypes, fsType) {
				t.Errorf("%q (VolumeSource.%s) is not a volume type the API accepts in a policy", fsType, f.Name)
			}
		})
	}
	if len(seen) != len(validation.AllFSTypes) {
		t.Errorf("%d volume sources, %d volume types in the API", len(seen), len(validation.AllFSTypes))
	}
	// The fixtures name a source of every type too.
	sources := psptesting.VolumeSources()
	for _, fsType := range validation.AllFSTypes {
		src, ok := sources[fsType]
		if !ok {
			t.Errorf("psptesting.VolumeSources has no %q", fsType)
			continue
		}
		if got, _ := TypeOf(&api.Volume{VolumeSource: src}); got != fsType {
			t.Errorf("psptesting.VolumeSources()[%q] is a %q", fsType, got)
		}
	}
}

// TestUnknownVolumeSource: a volume without a source the package knows is
// refused at its own path, whatever the policy allows.
func TestUnknownVolumeSource(t *testing.T) {
	s := New(&policy.PodSecurityPolicySpec{Volumes: []policy.FSType{policy.All}})
	pod := &api.Pod{Spec: api.PodSpec{Volumes: []api.Volume{
		{Name: "ok", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}},
		{Name: "empty"},
	}}}
	errs := errs.All(func(c *errs.Collector) { s.Validate(c, pod) })
	if len(errs) != 1 || errs[0].Field != "spec.volumes[1]" || !strings.HasPrefix(errs[0].Detail, "unknown volume type for volume") {
		t.Errorf("got %v, want one error at spec.volumes[1]: unknown volume type", errs)
	}
}
