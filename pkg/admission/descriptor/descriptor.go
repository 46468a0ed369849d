// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package descriptor is how an admission plugin Turnstile wires describes
// itself, once, beside its code, to the three parts that wire it: the
// registry (pkg/admission: its registration and its place in upstream's
// order), the configuration loader (pkg/admission/configfile: the strict
// check of its configuration) and the reload controller
// (pkg/admission/reload: whether a changed configuration may swap its
// instance). Restored plugins are listed in pkg/admission/restored; the
// upstream plugins whose configuration we check or reload, in
// pkg/admission/configfile, beside their checks.
package descriptor

import "k8s.io/apiserver/pkg/admission"

// Plugin describes one admission plugin.
type Plugin struct {
	// Name is the name users enable.
	Name string
	// Register adds the plugin, by Name, to a registry: nil for upstream's
	// plugins, which upstream registers.
	Register func(*admission.Plugins)
	// After is the upstream plugin this one runs directly after (a restored
	// plugin runs where upstream last ran it); "" for upstream's plugins,
	// which keep upstream's place.
	After string
	// Check validates a configuration of the plugin strictly, as the
	// plugin's factory will read it: data is the file an
	// AdmissionConfiguration entry names, or its inline configuration as
	// JSON. nil: the plugin takes no configuration, and an entry for it is
	// an error.
	Check func(plugin string, data []byte) error
	// Reloadable says that a reload of the configuration file may replace
	// the plugin's instance: it holds nothing that outlives it but caches,
	// which a new instance starts afresh (or shares, as PodSecurityPolicy's
	// do). A plugin that starts workers or informers of its own cannot hand
	// them over, so a change to its configuration waits for a restart.
	Reloadable bool
}
