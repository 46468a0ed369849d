// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package policy

// Annotations on a PodSecurityPolicy that configure its seccomp and AppArmor
// strategies. Kubernetes v1.36 no longer defines them.
const (
	// SeccompDefaultProfileAnnotationKey names the seccomp profile given to
	// pods that set none.
	SeccompDefaultProfileAnnotationKey = "seccomp.security.alpha.kubernetes.io/defaultProfileName"
	// SeccompAllowedProfilesAnnotationKey is a comma-separated list of the
	// seccomp profiles pods may use; SeccompAllowAny allows any.
	SeccompAllowedProfilesAnnotationKey = "seccomp.security.alpha.kubernetes.io/allowedProfileNames"
	// SeccompAllowAny in SeccompAllowedProfilesAnnotationKey allows any
	// seccomp profile.
	SeccompAllowAny = "*"

	// AppArmorDefaultProfileAnnotationKey names the AppArmor profile given
	// to containers that set none.
	AppArmorDefaultProfileAnnotationKey = "apparmor.security.beta.kubernetes.io/defaultProfileName"
	// AppArmorAllowedProfilesAnnotationKey is a comma-separated list of the
	// AppArmor profiles containers may use (no wildcard).
	AppArmorAllowedProfilesAnnotationKey = "apparmor.security.beta.kubernetes.io/allowedProfileNames"
)
