// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package plugins

import (
	"testing"
)

func TestPackageOf(t *testing.T) {
	for function, want := range map[string]string{
		"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount.(*Plugin).Admit":                                       "k8s.io/kubernetes/plugin/pkg/admission/serviceaccount",
		"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/security/podsecuritypolicy.(*Plugin).Validate.func1": "github.com/turnstile-k8s/turnstile/plugin/pkg/admission/security/podsecuritypolicy",
		"k8s.io/apiserver/pkg/admission.(*chainAdmissionHandler).Admit":                                               "k8s.io/apiserver/pkg/admission",
		"runtime.mallocgc": "runtime",
		"main.main":        "main",
	} {
		if got := PackageOf(function); got != want {
			t.Errorf("PackageOf(%q) = %q, want %q", function, got, want)
		}
	}
}

// The restored plugins' packages come from their descriptors: each
// restored plugin is attributed to its own package, the two exec plugins
// to theirs together.
func TestRestoredPackages(t *testing.T) {
	const plugin = "github.com/turnstile-k8s/turnstile/plugin/pkg/admission/"
	for pkg, want := range map[string]string{
		plugin + "securitycontextdeny":                 "SecurityContextDeny",
		plugin + "exec":                                "DenyEscalatingExec, DenyExecOnPrivileged",
		plugin + "storage/persistentvolumelabel":       "PersistentVolumeLabel",
		plugin + "security/podsecuritypolicy":          "PodSecurityPolicy",
		"k8s.io/kubernetes/plugin/pkg/admission/admit": "AlwaysAdmit",
	} {
		if got := Packages[pkg]; got != want {
			t.Errorf("Packages[%q] = %q, want %q", pkg, got, want)
		}
	}
}
