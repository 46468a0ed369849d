// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package profiles

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	turnstileadmission "github.com/turnstile-k8s/turnstile/pkg/admission"
	"github.com/turnstile-k8s/turnstile/pkg/admission/restored"
)

// Every restored plugin is either run by all-compatible or refuses
// conformant workloads by design and has an impact profile: a plugin added
// to pkg/admission/restored and not here fails, naming it.
func TestEveryRestoredPluginHasAProfile(t *testing.T) {
	for _, p := range restored.Plugins {
		inImpact := slices.ContainsFunc(slices.Collect(maps.Values(impact)), func(i Profile) bool { return slices.Contains(i.Plugins, p.Name) })
		if !slices.Contains(allCompatible, p.Name) && !inImpact {
			t.Errorf("the restored plugin %s is neither in all-compatible nor an impact profile (cmd/conformance/internal/profiles; docs/conformance.md says which)", p.Name)
		}
	}
}

// TestProfiles checks that every profile names registered plugins and files
// that exist, and that no plugin is both compatible and an impact profile.
func TestProfiles(t *testing.T) {
	o := kubeoptions.NewAdmissionOptions()
	if err := turnstileadmission.Apply(o.GenericAdmission); err != nil {
		t.Fatal(err)
	}
	registered, defaultOff := o.GenericAdmission.RecommendedPluginOrder, o.GenericAdmission.DefaultOffPlugins
	for name, p := range All() {
		if p.Name != name || p.Description == "" {
			t.Errorf("profile %q: name %q, description %q", name, p.Name, p.Description)
		}
		for _, plugin := range p.Plugins {
			if !slices.Contains(registered, plugin) {
				t.Errorf("profile %s: %s is not a registered admission plugin", name, plugin)
			}
			if !defaultOff.Has(plugin) {
				// On by default already: listing it would say nothing.
				t.Errorf("profile %s: %s is on by default", name, plugin)
			}
		}
		paths := []string{}
		if p.AdmissionConfig != "" {
			paths = append(paths, p.AdmissionConfig)
		}
		if slices.Contains(p.Plugins, "PodSecurityPolicy") {
			paths = append(paths, strings.Split(p.Policies, ",")...)
		}
		for _, path := range paths {
			if _, err := os.Stat(filepath.Join("..", "..", "..", "..", path)); err != nil {
				t.Errorf("profile %s: %v", name, err)
			}
		}
	}
	for name, i := range impact {
		for _, plugin := range i.Plugins {
			if slices.Contains(allCompatible, plugin) && name != "PodSecurityPolicy-restricted" {
				t.Errorf("impact profile %s: %s is in all-compatible", name, plugin)
			}
		}
	}
}

func TestLookup(t *testing.T) {
	if _, err := Lookup("all-compatible"); err != nil {
		t.Fatal(err)
	}
	_, err := Lookup("nope")
	if err == nil || !strings.Contains(err.Error(), `no profile "nope"`) || !strings.Contains(err.Error(), "all-compatible, default") {
		t.Fatalf("Lookup(nope) = %v, want an error that lists the profiles", err)
	}
}

func TestLocalUpArgs(t *testing.T) {
	for _, tc := range []struct {
		profile string
		want    []string
		not     []string
	}{
		{"upstream", []string{"-upstream"}, []string{"-pod-security-policies"}},
		{"default", []string{"-admission-config"}, []string{"-upstream", "-pod-security-policies"}},
		{"all-compatible", []string{"-pod-security-policies", allCompatiblePolicies, AllCompatibleConfig}, []string{"-upstream"}},
		{"impact-PodSecurityPolicy-restricted", []string{"examples/podsecuritypolicy"}, []string{allCompatiblePolicies}},
	} {
		p, err := Lookup(tc.profile)
		if err != nil {
			t.Fatal(err)
		}
		args := p.LocalUpArgs()
		for _, w := range tc.want {
			if !slices.Contains(args, w) {
				t.Errorf("%s: local-up args %q lack %q", tc.profile, args, w)
			}
		}
		for _, n := range tc.not {
			if slices.Contains(args, n) {
				t.Errorf("%s: local-up args %q have %q", tc.profile, args, n)
			}
		}
	}
}
