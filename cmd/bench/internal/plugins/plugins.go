// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package plugins names the admission plugins the benchmarks turn on, and
// the package each one lives in, for the CPU profile's attribution.
package plugins

import (
	"slices"

	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"
)

// AllDocumented is every documented controller that can run together. Left
// out: AlwaysDeny (denies everything), NamespaceAutoProvision (conflicts
// with NamespaceExists) and ImagePolicyWebhook (needs an image-policy
// backend). Upstream's default set is on in both. PodSecurityPolicy runs
// with the policy set of package policies.
var AllDocumented = []string{
	"AlwaysAdmit", "AlwaysPullImages", "DenyServiceExternalIPs", "EventRateLimit", "ExtendedResourceToleration",
	"LimitPodHardAntiAffinityTopology", "NamespaceExists", "NodeRestriction", "OwnerReferencesPermissionEnforcement",
	"PodNodeSelector", "PodTolerationRestriction",
	"SecurityContextDeny", "DenyEscalatingExec", "DenyExecOnPrivileged", "PersistentVolumeLabel", "PodSecurityPolicy",
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
// plugin's name. A sample of the CPU profile counts for a plugin when its
// package is anywhere on the sample's stack: what the plugin runs,
// including the authorizer, listers and libraries it calls.
var Packages = map[string]string{
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle":                             "NamespaceLifecycle",
	"k8s.io/kubernetes/plugin/pkg/admission/limitranger":                                    "LimitRanger",
	"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount":                                 "ServiceAccount",
	"k8s.io/kubernetes/plugin/pkg/admission/noderestriction":                                "NodeRestriction",
	"k8s.io/kubernetes/plugin/pkg/admission/nodetaint":                                      "TaintNodesByCondition",
	"k8s.io/kubernetes/plugin/pkg/admission/priority":                                       "Priority",
	"k8s.io/kubernetes/plugin/pkg/admission/defaulttolerationseconds":                       "DefaultTolerationSeconds",
	"k8s.io/kubernetes/plugin/pkg/admission/storage/persistentvolume/resize":                "PersistentVolumeClaimResize",
	"k8s.io/kubernetes/plugin/pkg/admission/runtimeclass":                                   "RuntimeClass",
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/approval":                          "CertificateApproval",
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/signing":                           "CertificateSigning",
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/ctbattest":                         "ClusterTrustBundleAttest",
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/subjectrestriction":                "CertificateSubjectRestriction",
	"k8s.io/kubernetes/plugin/pkg/admission/network/defaultingressclass":                    "DefaultIngressClass",
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageclass/setdefault":                "DefaultStorageClass",
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageobjectinuseprotection":           "StorageObjectInUseProtection",
	"k8s.io/kubernetes/plugin/pkg/admission/podtopologylabels":                              "PodTopologyLabels",
	"k8s.io/kubernetes/plugin/pkg/admission/security/podsecurity":                           "PodSecurity",
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating":                                 "MutatingAdmissionPolicy",
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating":                               "ValidatingAdmissionPolicy",
	"k8s.io/apiserver/pkg/admission/plugin/webhook/mutating":                                "MutatingAdmissionWebhook",
	"k8s.io/apiserver/pkg/admission/plugin/webhook/validating":                              "ValidatingAdmissionWebhook",
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota":                                   "ResourceQuota",
	"k8s.io/kubernetes/plugin/pkg/admission/admit":                                          "AlwaysAdmit",
	"k8s.io/kubernetes/plugin/pkg/admission/alwayspullimages":                               "AlwaysPullImages",
	"k8s.io/kubernetes/plugin/pkg/admission/network/denyserviceexternalips":                 "DenyServiceExternalIPs",
	"k8s.io/kubernetes/plugin/pkg/admission/eventratelimit":                                 "EventRateLimit",
	"k8s.io/kubernetes/plugin/pkg/admission/extendedresourcetoleration":                     "ExtendedResourceToleration",
	"k8s.io/kubernetes/plugin/pkg/admission/antiaffinity":                                   "LimitPodHardAntiAffinityTopology",
	"k8s.io/kubernetes/plugin/pkg/admission/namespace/exists":                               "NamespaceExists",
	"k8s.io/kubernetes/plugin/pkg/admission/gc":                                             "OwnerReferencesPermissionEnforcement",
	"k8s.io/kubernetes/plugin/pkg/admission/podnodeselector":                                "PodNodeSelector",
	"k8s.io/kubernetes/plugin/pkg/admission/podtolerationrestriction":                       "PodTolerationRestriction",
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/securitycontextdeny":           "SecurityContextDeny",
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/exec":                          "DenyEscalatingExec, DenyExecOnPrivileged",
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/storage/persistentvolumelabel": "PersistentVolumeLabel",
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/security/podsecuritypolicy":    "PodSecurityPolicy",
}
