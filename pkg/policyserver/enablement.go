// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package policyserver

import (
	"fmt"
	"slices"

	serverstorage "k8s.io/apiserver/pkg/server/storage"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	policyv1beta1 "github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
)

// PluginName is the admission plugin that needs the API.
const PluginName = "PodSecurityPolicy"

// Resource is the resource this server serves.
var Resource = policyv1beta1.SchemeGroupVersion.WithResource("podsecuritypolicies")

// PluginEnabled reports whether the PodSecurityPolicy admission plugin is
// in the enabled set, computed as upstream does: with --admission-control,
// exactly the names it lists; otherwise the registered plugins that are on
// by default or named by --enable-admission-plugins, minus those named by
// --disable-admission-plugins. A name that is not registered is never
// enabled (upstream's validation refuses it anyway).
func PluginEnabled(o *kubeoptions.AdmissionOptions) bool {
	if o == nil || o.GenericAdmission == nil {
		return false
	}
	g := o.GenericAdmission
	if !slices.Contains(g.RecommendedPluginOrder, PluginName) {
		return false
	}
	if o.PluginNames != nil {
		return slices.Contains(o.PluginNames, PluginName)
	}
	if slices.Contains(g.EnablePlugins, PluginName) {
		return true
	}
	return !g.DefaultOffPlugins.Has(PluginName) && !slices.Contains(g.DisablePlugins, PluginName)
}

// Enabled decides whether policy/v1beta1 podsecuritypolicies is served,
// from the merged --runtime-config and whether the admission plugin is
// enabled. It is served when the plugin is enabled or when
// --runtime-config names the resource (policy/v1beta1/podsecuritypolicies=true);
// disabling it explicitly while the plugin is enabled is an error, since the
// plugin could then not find any policy. Only the resource's own key
// counts: group-version keys (policy/v1beta1, api/beta, api/all) leave it
// as upstream leaves every removed API, off.
func Enabled(resources *serverstorage.ResourceConfig, pluginEnabled bool) (bool, error) {
	enabled, explicit := resources.ExplicitResourceConfigs[Resource]
	if !explicit {
		if gvEnabled, gvExplicit := resources.ExplicitGroupVersionConfigs[Resource.GroupVersion()]; gvExplicit && !gvEnabled && pluginEnabled {
			return false, fmt.Errorf("--runtime-config disables %s, which the %s admission plugin needs: enable %s/%s or disable the plugin",
				Resource.GroupVersion(), PluginName, Resource.GroupVersion(), Resource.Resource)
		}
		return pluginEnabled, nil
	}
	if !enabled && pluginEnabled {
		return false, fmt.Errorf("--runtime-config=%s/%s=false disables the API that the %s admission plugin needs: remove it or disable the plugin",
			Resource.GroupVersion(), Resource.Resource, PluginName)
	}
	return enabled || pluginEnabled, nil
}
