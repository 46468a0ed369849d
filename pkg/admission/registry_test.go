// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package admission

import (
	"io"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/component-base/version"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"github.com/turnstile-k8s/turnstile/pkg/admission/descriptor"
	"github.com/turnstile-k8s/turnstile/pkg/admission/restored"
)

// upstreamOrder137 is v1.37.2's AllOrderedPlugins.
var upstreamOrder137 = []string{
	"AlwaysAdmit",
	"NamespaceAutoProvision",
	"NamespaceLifecycle",
	"NamespaceExists",
	"LimitPodHardAntiAffinityTopology",
	"LimitRanger",
	"ServiceAccount",
	"NodeRestriction",
	"TaintNodesByCondition",
	"AlwaysPullImages",
	"ImagePolicyWebhook",
	"PodSecurity",
	"PodNodeSelector",
	"Priority",
	"DefaultTolerationSeconds",
	"PodTolerationRestriction",
	"EventRateLimit",
	"ExtendedResourceToleration",
	"DefaultStorageClass",
	"StorageObjectInUseProtection",
	"PodGroupProtection",
	"OwnerReferencesPermissionEnforcement",
	"PersistentVolumeClaimResize",
	"RuntimeClass",
	"CertificateApproval",
	"CertificateSigning",
	"ClusterTrustBundleAttest",
	"CertificateSubjectRestriction",
	"DefaultIngressClass",
	"DenyServiceExternalIPs",
	"PodTopologyLabels",
	"NodeDeclaredFeatureValidator",
	"PodResizeValidator",
	"MutatingAdmissionPolicy",
	"MutatingAdmissionWebhook",
	"ValidatingAdmissionPolicy",
	"ValidatingAdmissionWebhook",
	"ResourceQuota",
	"AlwaysDeny",
}

// insertedAfter returns order with each (anchor, name) pair's name inserted
// right after its anchor.
func insertedAfter(order []string, pairs ...string) []string {
	out := slices.Clone(order)
	for i := 0; i+1 < len(pairs); i += 2 {
		at := slices.Index(out, pairs[i])
		out = slices.Insert(out, at+1, pairs[i+1])
	}
	return out
}

// upstreamOrders is kube-apiserver's recommended plugin order on each
// supported line (lines/README.md), as we expect it. When a Kubernetes bump
// changes upstream's list, the drift test fails and this list, the
// restored plugins' descriptors (After) and the controllers table are reviewed; a new line needs its
// entry.
var upstreamOrders = map[string][]string{
	// v1.38 adds AuthorizationConditionsEnforcer (k8s.io/apiserver), on by
	// default and inert unless the alpha gate ConditionalAuthorization is
	// on, among the plugins that end the chain (lastPlugins).
	"1.38": insertedAfter(upstreamOrder137, "ValidatingAdmissionPolicy", "AuthorizationConditionsEnforcer"),
	"1.37": upstreamOrder137,
	// v1.36 had the two plugins v1.37 removed, each right after the one named.
	"1.36": insertedAfter(upstreamOrder137, "PodTopologyLabels", "PodGroupWorkloadExists",
		"NodeDeclaredFeatureValidator", "JobValidation"),
}

// upstreamOrder is the order of the line under test.
var upstreamOrder = upstreamOrders[testedLine()]

// testedLine is the Kubernetes minor this test binary is built against
// ("1.37"): component-base's, a staging module of that release.
func testedLine() string { return version.DefaultKubeBinaryVersion }

// upstreamDefaultOff is what every supported line leaves off unless
// enabled.
var upstreamDefaultOff = []string{
	"AlwaysAdmit",
	"AlwaysDeny",
	"AlwaysPullImages",
	"DenyServiceExternalIPs",
	"EventRateLimit",
	"ExtendedResourceToleration",
	"ImagePolicyWebhook",
	"LimitPodHardAntiAffinityTopology",
	"NamespaceAutoProvision",
	"NamespaceExists",
	"NodeRestriction",
	"OwnerReferencesPermissionEnforcement",
	"PodNodeSelector",
	"PodTolerationRestriction",
}

// historicAnchor is the plugin each restored plugin ran right after when
// upstream still shipped it (docs/glossary.md, "historic anchors").
var historicAnchor = map[string]string{
	"SecurityContextDeny":   "NamespaceExists",
	"PodSecurityPolicy":     "PodSecurity",
	"DenyEscalatingExec":    "PodTolerationRestriction",
	"DenyExecOnPrivileged":  "DenyEscalatingExec",
	"PersistentVolumeLabel": "ExtendedResourceToleration",
}

func TestUpstreamDrift(t *testing.T) {
	if upstreamOrder == nil {
		t.Fatalf("upstreamOrders has no entry for line %s: add upstream's AllOrderedPlugins %v", testedLine(), kubeoptions.AllOrderedPlugins)
	}
	if !slices.Equal(kubeoptions.AllOrderedPlugins, upstreamOrder) {
		t.Errorf("upstream's AllOrderedPlugins changed; review the registry.\n got: %v\nwant: %v", kubeoptions.AllOrderedPlugins, upstreamOrder)
	}
	if got := sets.List(kubeoptions.DefaultOffAdmissionPlugins()); !slices.Equal(got, upstreamDefaultOff) {
		t.Errorf("upstream's DefaultOffAdmissionPlugins changed; review the registry.\n got: %v\nwant: %v", got, upstreamDefaultOff)
	}
	for name, anchor := range historicAnchor {
		if _, ours := historicAnchor[anchor]; !ours && !slices.Contains(upstreamOrder, anchor) {
			t.Errorf("%s's historic anchor %q is gone from upstream's order", name, anchor)
		}
	}
	if last := linesLast(); !slices.Equal(upstreamOrder[len(upstreamOrder)-len(last):], last) {
		t.Errorf("upstream's order no longer ends with %v: %v", last, upstreamOrder[len(upstreamOrder)-len(last):])
	}
}

// linesLast are the plugins of lastPlugins that the line under test has:
// lastPlugins names those of every supported line and the next.
func linesLast() []string {
	var last []string
	for _, p := range lastPlugins {
		if slices.Contains(upstreamOrder, p) {
			last = append(last, p)
		}
	}
	return last
}

// applied returns upstream's admission options with the real registry applied.
func applied(t *testing.T) *kubeoptions.AdmissionOptions {
	t.Helper()
	o := kubeoptions.NewAdmissionOptions()
	if err := Apply(o.GenericAdmission); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return o
}

func TestRegistryInvariants(t *testing.T) {
	g := applied(t).GenericAdmission
	order := g.RecommendedPluginOrder

	seen := map[string]int{}
	for _, name := range order {
		seen[name]++
	}
	for _, name := range g.Plugins.Registered() {
		if seen[name] != 1 {
			t.Errorf("registered plugin %q appears %d times in the order, want once", name, seen[name])
		}
	}
	if len(order) != len(g.Plugins.Registered()) {
		t.Errorf("order has %d names, registry %d", len(order), len(g.Plugins.Registered()))
	}
	if errs := g.Validate(); len(errs) != 0 {
		t.Errorf("upstream's validation rejects the registry: %v", errs)
	}
	if last := linesLast(); !slices.Equal(order[len(order)-len(last):], last) {
		t.Errorf("order ends with %v, want %v", order[len(order)-len(last):], last)
	}
	for i, name := range order {
		anchor, ours := historicAnchor[name]
		switch {
		case ours && (i == 0 || order[i-1] != anchor):
			t.Errorf("%s runs after %q, want right after %q", name, order[max(i-1, 0)], anchor)
		case !ours && !slices.Contains(upstreamOrder, name):
			t.Errorf("%s is registered but has no historic position in this test", name)
		}
	}
	// Upstream's plugins keep their relative order.
	var upstreamOnly []string
	for _, name := range order {
		if slices.Contains(upstreamOrder, name) {
			upstreamOnly = append(upstreamOnly, name)
		}
	}
	if !slices.Equal(upstreamOnly, upstreamOrder) {
		t.Errorf("upstream's plugins were reordered:\n got: %v\nwant: %v", upstreamOnly, upstreamOrder)
	}
}

func TestDefaultOnSetIsUpstreams(t *testing.T) {
	g := applied(t).GenericAdmission
	var got []string
	for _, name := range g.RecommendedPluginOrder {
		if !g.DefaultOffPlugins.Has(name) {
			got = append(got, name)
		}
	}
	var want []string
	for _, name := range upstreamOrder {
		if !slices.Contains(upstreamDefaultOff, name) {
			want = append(want, name)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("default-on plugins differ from upstream's:\n got: %v\nwant: %v", got, want)
	}
	for _, p := range restored.Plugins {
		if !g.DefaultOffPlugins.Has(p.Name) {
			t.Errorf("%s is on by default; restored plugins must be off", p.Name)
		}
	}
}

// stub describes a plugin that does nothing, placed after after, whose
// Register adds the names given (its own if none), to exercise the mechanism
// independently of the restored plugins' packages.
func stub(name, after string, registers ...string) descriptor.Plugin {
	if len(registers) == 0 {
		registers = []string{name}
	}
	return descriptor.Plugin{Name: name, After: after, Register: func(p *admission.Plugins) {
		for _, n := range registers {
			p.Register(n, func(_ io.Reader) (admission.Interface, error) { return nil, nil })
		}
	}}
}

func TestApplyHistoricPositions(t *testing.T) {
	o := kubeoptions.NewAdmissionOptions().GenericAdmission
	plugins := []descriptor.Plugin{
		stub("SecurityContextDeny", "NamespaceExists"),
		stub("PodSecurityPolicy", "PodSecurity"),
		stub("DenyEscalatingExec", "PodTolerationRestriction"),
		stub("DenyExecOnPrivileged", "PodTolerationRestriction"),
		stub("PersistentVolumeLabel", "ExtendedResourceToleration"),
	}
	if err := apply(o, plugins); err != nil {
		t.Fatalf("apply: %v", err)
	}
	want := slices.Clone(upstreamOrder)
	for _, p := range plugins {
		i := slices.Index(want, historicAnchor[p.Name])
		want = slices.Insert(want, i+1, p.Name)
	}
	if !slices.Equal(o.RecommendedPluginOrder, want) {
		t.Errorf("order:\n got: %v\nwant: %v", o.RecommendedPluginOrder, want)
	}
	for _, p := range plugins {
		if !o.DefaultOffPlugins.Has(p.Name) {
			t.Errorf("%s is not default-off", p.Name)
		}
	}
	if errs := o.Validate(); len(errs) != 0 {
		t.Errorf("upstream's validation rejects the result: %v", errs)
	}
	// The upstream default-off set we started from is not mutated.
	if kubeoptions.DefaultOffAdmissionPlugins().Has("SecurityContextDeny") {
		t.Errorf("apply changed upstream's default-off set")
	}
}

func TestApplyRejects(t *testing.T) {
	noRegister := stub("B", "NamespaceExists")
	noRegister.Register = nil
	tests := []struct {
		name    string
		plugins []descriptor.Plugin
		wantErr string
	}{
		{
			name:    "name registered twice across packages",
			plugins: []descriptor.Plugin{stub("A", "NamespaceExists"), stub("A", "LimitRanger")},
			wantErr: `plugin "A" is registered twice`,
		},
		{
			name:    "name that upstream already registers",
			plugins: []descriptor.Plugin{stub("LimitRanger", "NamespaceExists")},
			wantErr: `plugin "LimitRanger" is registered twice`,
		},
		{
			name:    "Register adds a name its descriptor does not give",
			plugins: []descriptor.Plugin{stub("A", "NamespaceExists", "A", "B")},
			wantErr: `plugin "A"'s Register adds [A B], want [A]`,
		},
		{
			name:    "Register adds another name",
			plugins: []descriptor.Plugin{stub("A", "NamespaceExists", "B")},
			wantErr: `plugin "A"'s Register adds [B], want [A]`,
		},
		{
			name:    "no Register",
			plugins: []descriptor.Plugin{stub("A", "NamespaceExists"), noRegister},
			wantErr: `plugin "B" has no Register`,
		},
		{
			name:    "no place",
			plugins: []descriptor.Plugin{stub("A", "")},
			wantErr: `plugin "A" has no place in the chain`,
		},
		{
			name:    "unknown anchor",
			plugins: []descriptor.Plugin{stub("A", "PodPreset")},
			wantErr: `plugin "A" is placed after "PodPreset", which is not in upstream's order`,
		},
		{
			name:    "anchor among the plugins that end the chain",
			plugins: []descriptor.Plugin{stub("A", "ResourceQuota")},
			wantErr: `plugin "A" cannot run after "ResourceQuota"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := kubeoptions.NewAdmissionOptions().GenericAdmission
			before := slices.Clone(o.RecommendedPluginOrder)
			err := apply(o, tt.plugins)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("apply error = %v, want one containing %q", err, tt.wantErr)
			}
			if !slices.Equal(o.RecommendedPluginOrder, before) || len(o.Plugins.Registered()) != len(before) {
				t.Errorf("a failed apply changed the options")
			}
		})
	}
}
