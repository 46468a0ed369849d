// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package policyserver

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"
)

// admissionOptions returns upstream's admission options with the plugin
// registered (off by default, as upstream had it) when registered is true,
// as issue 10 will do.
func admissionOptions(registered bool) *kubeoptions.AdmissionOptions {
	o := kubeoptions.NewAdmissionOptions()
	if registered {
		o.GenericAdmission.RecommendedPluginOrder = append(o.GenericAdmission.RecommendedPluginOrder, PluginName)
		o.GenericAdmission.DefaultOffPlugins.Insert(PluginName)
	}
	return o
}

func TestPluginEnabled(t *testing.T) {
	for _, c := range []struct {
		name       string
		registered bool
		set        func(*kubeoptions.AdmissionOptions)
		want       bool
	}{
		{"not registered, named", false, func(o *kubeoptions.AdmissionOptions) { o.GenericAdmission.EnablePlugins = []string{PluginName} }, false},
		{"registered, default", true, func(*kubeoptions.AdmissionOptions) {}, false},
		{"enabled", true, func(o *kubeoptions.AdmissionOptions) {
			o.GenericAdmission.EnablePlugins = []string{"NodeRestriction", PluginName}
		}, true},
		{"disabled", true, func(o *kubeoptions.AdmissionOptions) { o.GenericAdmission.DisablePlugins = []string{PluginName} }, false},
		{"admission-control names it", true, func(o *kubeoptions.AdmissionOptions) { o.PluginNames = []string{"NamespaceLifecycle", PluginName} }, true},
		{"admission-control without it", true, func(o *kubeoptions.AdmissionOptions) { o.PluginNames = []string{"NamespaceLifecycle"} }, false},
	} {
		o := admissionOptions(c.registered)
		c.set(o)
		if got := PluginEnabled(o); got != c.want {
			t.Errorf("%s: PluginEnabled = %v, want %v", c.name, got, c.want)
		}
	}
	if PluginEnabled(nil) {
		t.Error("PluginEnabled(nil) = true")
	}
}

func TestEnabled(t *testing.T) {
	gv := schema.GroupVersion{Group: "policy", Version: "v1beta1"}
	for _, c := range []struct {
		name    string
		set     func(*serverstorage.ResourceConfig)
		plugin  bool
		want    bool
		wantErr string
	}{
		{"neither", func(*serverstorage.ResourceConfig) {}, false, false, ""},
		{"runtime-config", func(r *serverstorage.ResourceConfig) { r.ExplicitlyEnableResources(Resource) }, false, true, ""},
		{"plugin", func(*serverstorage.ResourceConfig) {}, true, true, ""},
		{"both", func(r *serverstorage.ResourceConfig) { r.ExplicitlyEnableResources(Resource) }, true, true, ""},
		{"explicitly off", func(r *serverstorage.ResourceConfig) { r.ExplicitlyDisableResources(Resource) }, false, false, ""},
		{"group version on only", func(r *serverstorage.ResourceConfig) { r.ExplicitlyEnableVersions(gv) }, false, false, ""},
		{"off with the plugin", func(r *serverstorage.ResourceConfig) { r.ExplicitlyDisableResources(Resource) }, true, false,
			"--runtime-config=policy/v1beta1/podsecuritypolicies=false disables the API that the PodSecurityPolicy admission plugin needs"},
		{"group version off with the plugin", func(r *serverstorage.ResourceConfig) { r.ExplicitlyDisableVersions(gv) }, true, false,
			"--runtime-config disables policy/v1beta1, which the PodSecurityPolicy admission plugin needs"},
	} {
		r := serverstorage.NewResourceConfig()
		c.set(r)
		got, err := Enabled(r, c.plugin)
		if got != c.want || (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s: Enabled = %v, %v; want %v, %q", c.name, got, err, c.want, c.wantErr)
		}
	}
}
