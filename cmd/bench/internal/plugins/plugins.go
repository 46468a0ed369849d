// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package plugins names the admission plugins the benchmarks turn on, and
// the package each one lives in, for the CPU profile's attribution.
package plugins

import (
	"reflect"
	"runtime"
	"slices"
	"strings"

	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"github.com/turnstile-k8s/turnstile/pkg/admission/restored"
)

// AllDocumented is every documented controller that can run together:
// upstream's (documentedUpstream) and every restored plugin. Left out:
// AlwaysDeny (denies everything), NamespaceAutoProvision (conflicts with
// NamespaceExists) and ImagePolicyWebhook (needs an image-policy backend).
// Upstream's default set is on in both. PodSecurityPolicy runs with the
// policy set of package policies.
var AllDocumented = append(slices.Clone(documentedUpstream), restoredNames()...)

// documentedUpstream are the documented upstream controllers of
// AllDocumented, the ones upstream does not turn on by default.
var documentedUpstream = []string{
	"AlwaysAdmit", "AlwaysPullImages", "DenyServiceExternalIPs", "EventRateLimit", "ExtendedResourceToleration",
	"LimitPodHardAntiAffinityTopology", "NamespaceExists", "NodeRestriction", "OwnerReferencesPermissionEnforcement",
	"PodNodeSelector", "PodTolerationRestriction",
}

// restoredNames are the restored plugins' names, in restored.Plugins'
// order.
func restoredNames() []string {
	var names []string
	for _, p := range restored.Plugins {
		names = append(names, p.Name)
	}
	return names
}

// UpstreamOnly is names without the plugins upstream does not have.
func UpstreamOnly(names []string) []string {
	var out []string
	for _, name := range names {
		if slices.Contains(kubeoptions.AllOrderedPlugins, name) {
			out = append(out, name)
		}
	}
	return out
}

// Packages maps the package that holds each admission plugin of the
// all-documented configuration (upstream's defaults included) to the
// plugin's name: upstream's by hand, the restored ones from their
// descriptors (withRestored). A sample of the CPU profile counts for a
// plugin when its package is anywhere on the sample's stack: what the
// plugin runs, including the authorizer, listers and libraries it calls.
var Packages = withRestored(map[string]string{
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle":                   "NamespaceLifecycle",
	"k8s.io/kubernetes/plugin/pkg/admission/limitranger":                          "LimitRanger",
	"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount":                       "ServiceAccount",
	"k8s.io/kubernetes/plugin/pkg/admission/noderestriction":                      "NodeRestriction",
	"k8s.io/kubernetes/plugin/pkg/admission/nodetaint":                            "TaintNodesByCondition",
	"k8s.io/kubernetes/plugin/pkg/admission/priority":                             "Priority",
	"k8s.io/kubernetes/plugin/pkg/admission/defaulttolerationseconds":             "DefaultTolerationSeconds",
	"k8s.io/kubernetes/plugin/pkg/admission/storage/persistentvolume/resize":      "PersistentVolumeClaimResize",
	"k8s.io/kubernetes/plugin/pkg/admission/runtimeclass":                         "RuntimeClass",
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/approval":                "CertificateApproval",
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/signing":                 "CertificateSigning",
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/ctbattest":               "ClusterTrustBundleAttest",
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/subjectrestriction":      "CertificateSubjectRestriction",
	"k8s.io/kubernetes/plugin/pkg/admission/network/defaultingressclass":          "DefaultIngressClass",
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageclass/setdefault":      "DefaultStorageClass",
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageobjectinuseprotection": "StorageObjectInUseProtection",
	"k8s.io/kubernetes/plugin/pkg/admission/podtopologylabels":                    "PodTopologyLabels",
	"k8s.io/kubernetes/plugin/pkg/admission/security/podsecurity":                 "PodSecurity",
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating":                       "MutatingAdmissionPolicy",
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating":                     "ValidatingAdmissionPolicy",
	"k8s.io/apiserver/pkg/admission/plugin/webhook/mutating":                      "MutatingAdmissionWebhook",
	"k8s.io/apiserver/pkg/admission/plugin/webhook/validating":                    "ValidatingAdmissionWebhook",
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota":                         "ResourceQuota",
	"k8s.io/kubernetes/plugin/pkg/admission/admit":                                "AlwaysAdmit",
	"k8s.io/kubernetes/plugin/pkg/admission/alwayspullimages":                     "AlwaysPullImages",
	"k8s.io/kubernetes/plugin/pkg/admission/network/denyserviceexternalips":       "DenyServiceExternalIPs",
	"k8s.io/kubernetes/plugin/pkg/admission/eventratelimit":                       "EventRateLimit",
	"k8s.io/kubernetes/plugin/pkg/admission/extendedresourcetoleration":           "ExtendedResourceToleration",
	"k8s.io/kubernetes/plugin/pkg/admission/antiaffinity":                         "LimitPodHardAntiAffinityTopology",
	"k8s.io/kubernetes/plugin/pkg/admission/namespace/exists":                     "NamespaceExists",
	"k8s.io/kubernetes/plugin/pkg/admission/gc":                                   "OwnerReferencesPermissionEnforcement",
	"k8s.io/kubernetes/plugin/pkg/admission/podnodeselector":                      "PodNodeSelector",
	"k8s.io/kubernetes/plugin/pkg/admission/podtolerationrestriction":             "PodTolerationRestriction",
})

// withRestored adds each restored plugin's package to upstream, found from
// its descriptor's Register function, which lives in the plugin's package;
// plugins that share a package (DenyEscalatingExec and
// DenyExecOnPrivileged) share its entry, their names joined.
func withRestored(upstream map[string]string) map[string]string {
	for _, p := range restored.Plugins {
		pkg := PackageOf(runtime.FuncForPC(reflect.ValueOf(p.Register).Pointer()).Name())
		if names, ok := upstream[pkg]; ok {
			upstream[pkg] = names + ", " + p.Name
		} else {
			upstream[pkg] = p.Name
		}
	}
	return upstream
}

// PackageOf returns the import path of a function's package, from a name
// such as "k8s.io/x/y.(*T).Method" or "k8s.io/x/y.Func.func1".
func PackageOf(function string) string {
	slash := strings.LastIndexByte(function, '/')
	dot := strings.IndexByte(function[slash+1:], '.')
	if dot < 0 {
		return function
	}
	return function[:slash+1+dot]
}
