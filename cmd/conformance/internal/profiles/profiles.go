// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package profiles names the control planes the conformance suite runs
// against: default, upstream, all-compatible and one impact profile per
// controller that refuses conformant workloads by design.
package profiles

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Profile is one control plane that the suite runs against: which
// kube-apiserver, which admission plugins besides upstream's defaults and
// NodeRestriction (local-up always enables those), and their
// configuration.
type Profile struct {
	Name        string
	Description string
	// Upstream runs vanilla kube-apiserver-upstream on etcd.
	Upstream bool
	Plugins  []string
	// AdmissionConfig is the --admission-control-config-file, relative to
	// the repository; empty for none, as kubeadm.
	AdmissionConfig string
	// Policies are the PodSecurityPolicies and grants applied when
	// PodSecurityPolicy is on (comma-separated files or directories).
	Policies string
	// ImagePolicy starts the run's ImagePolicyWebhook backend
	// (package suite's imagepolicy.go), whose AdmissionConfiguration then replaces
	// AdmissionConfig.
	ImagePolicy bool
}

const (
	AllCompatibleConfig   = "cmd/conformance/all-compatible/admission-config.yaml"
	allCompatiblePolicies = "examples/podsecuritypolicy,cmd/conformance/all-compatible/podsecuritypolicy.yaml"
)

// allCompatible is every documented controller that admits what
// conformance runs, found by running the suite. Upstream's defaults are on
// as well. Left out, each with its own impact profile: the controllers
// that refuse conformant workloads by design.
var allCompatible = []string{
	"AlwaysAdmit", "DenyExecOnPrivileged", "DenyServiceExternalIPs", "EventRateLimit", "ExtendedResourceToleration",
	"LimitPodHardAntiAffinityTopology", "NamespaceExists", "OwnerReferencesPermissionEnforcement",
	"PersistentVolumeLabel", "PodNodeSelector", "PodSecurityPolicy", "PodTolerationRestriction",
}

// impact are the controllers that refuse conformant workloads by design,
// and two whose own runs pass every spec but that all-compatible has not run
// with yet: AlwaysPullImages (its nodes pull from the run's registry) and
// NamespaceAutoProvision, which creates the namespace of any namespaced
// create, beside all-compatible's NamespaceExists. Each impact profile is `default` with
// one of them on (configured as in all-compatible's AdmissionConfiguration),
// and docs/conformance-impact.md lists what each run fails.
var impact = map[string]Profile{
	"AlwaysDeny":       {Plugins: []string{"AlwaysDeny"}},
	"AlwaysPullImages": {Plugins: []string{"AlwaysPullImages"}},
	// Conformance execs into host-network pods (the node-to-pod checks).
	"DenyEscalatingExec":     {Plugins: []string{"DenyEscalatingExec"}},
	"SecurityContextDeny":    {Plugins: []string{"SecurityContextDeny"}},
	"NamespaceAutoProvision": {Plugins: []string{"NamespaceAutoProvision"}},
	// The example policies alone: restricted for everyone, privileged
	// only in kube-system.
	"PodSecurityPolicy-restricted": {Plugins: []string{"PodSecurityPolicy"}, Policies: "examples/podsecuritypolicy"},
	// Images from registry.k8s.io only, failing closed.
	"ImagePolicyWebhook": {Plugins: []string{"ImagePolicyWebhook"}, ImagePolicy: true},
}

// All are the named profiles.
func All() map[string]Profile {
	p := map[string]Profile{
		"default": {
			Description: "Turnstile with upstream's default plugins and NodeRestriction, as a kubeadm cluster has them",
		},
		"upstream": {
			Description: "vanilla upstream kube-apiserver on etcd, as kubeadm configures it: the baseline",
			Upstream:    true,
		},
		"all-compatible": {
			Description:     "Turnstile with every documented controller that admits conformant workloads",
			Plugins:         allCompatible,
			AdmissionConfig: AllCompatibleConfig,
			Policies:        allCompatiblePolicies,
		},
	}
	for name, i := range impact {
		i.Description = "default with " + strings.Join(i.Plugins, ", ") + " on: what it refuses of conformance"
		i.AdmissionConfig = AllCompatibleConfig
		if i.Policies == "" {
			i.Policies = allCompatiblePolicies
		}
		p["impact-"+name] = i
	}
	for name, v := range p {
		v.Name = name
		p[name] = v
	}
	return p
}

// Lookup returns the named profile, or an error that lists them all.
func Lookup(name string) (Profile, error) {
	all := All()
	if p, ok := all[name]; ok {
		return p, nil
	}
	var names []string
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	return Profile{}, fmt.Errorf("no profile %q; the profiles are %s", name, strings.Join(names, ", "))
}

// LocalUpArgs are local-up's flags for p.
func (p Profile) LocalUpArgs() []string {
	args := []string{"-admission-config", p.AdmissionConfig, "-admission-plugins", strings.Join(p.Plugins, ",")}
	if p.Upstream {
		args = append(args, "-upstream")
	}
	if slices.Contains(p.Plugins, "PodSecurityPolicy") {
		args = append(args, "-pod-security-policies", p.Policies)
	}
	return args
}
