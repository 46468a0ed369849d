// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// SchemeGroupVersion is the configuration's group and version.
var SchemeGroupVersion = schema.GroupVersion{Group: "podsecuritypolicy.admission.turnstile.dev", Version: "v1alpha1"}

// Mode is what the plugin does with its decision.
type Mode string

const (
	// Enforce refuses the pods no policy admits and applies the chosen
	// policy's defaults: v1.24's behaviour, and the default.
	Enforce Mode = "enforce"
	// Warn refuses and changes nothing: each request gets a warning with
	// what enforce would have refused or defaulted, naming the policies and
	// the fields, as Pod Security Admission's warn mode does.
	Warn Mode = "warn"
	// Audit refuses and changes nothing, and records the same in the
	// request's audit annotations.
	Audit Mode = "audit"
)

// Modes are the modes in the order the documentation gives them.
var Modes = []Mode{Enforce, Warn, Audit}

// PodSecurityPolicyConfiguration configures the PodSecurityPolicy plugin.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type PodSecurityPolicyConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// Mode is enforce (the default), warn or audit. In warn and audit the
	// plugin neither refuses nor mutates: pods are stored as the client sent
	// them, as they will be once the plugin is off, and the report says
	// which policy would have changed which field. A cluster moving off
	// PodSecurityPolicy enforces its replacement and lets this plugin report
	// until the reports are empty.
	Mode Mode `json:"mode,omitempty"`
}

// Validate checks the fields; an empty mode is enforce.
func Validate(c *PodSecurityPolicyConfiguration) error {
	if c.Mode != "" && !slices.Contains(Modes, c.Mode) {
		supported := make([]string, len(Modes))
		for i, m := range Modes {
			supported[i] = string(m)
		}
		return field.NotSupported(field.NewPath("mode"), c.Mode, supported)
	}
	return nil
}
