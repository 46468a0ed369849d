// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package profile maps seccomp and AppArmor profile fields to the names the
// deprecated annotations and a PodSecurityPolicy's lists use, and back.
// Both fields share their type names (RuntimeDefault, Unconfined,
// Localhost) and their annotation forms (runtime/default, unconfined,
// localhost/<name>).
package profile

import (
	"fmt"
	"strings"
)

// RuntimeDefault is the runtime's default profile in the annotation form.
const RuntimeDefault = "runtime/default"

// The other annotation forms.
const (
	unconfined      = "unconfined"
	localhostPrefix = "localhost/"
)

// The field types, as both SeccompProfileType and AppArmorProfileType spell
// them.
const (
	typeRuntimeDefault = "RuntimeDefault"
	typeUnconfined     = "Unconfined"
	typeLocalhost      = "Localhost"
)

// Name writes a field (its type and localhost profile) in the annotation
// form; "" for a field that names no profile. A type the annotations have
// no form for (OCI, which Kubernetes v1.38 adds to seccomp: a profile pulled
// from a registry) is named by the type itself, which no policy's list can
// hold (validation allows only the annotation forms), so only a policy that
// allows every profile ("*") admits it. v1.24 named such a field "", as no
// profile, which a policy that allows none would admit.
func Name(typ string, localhost *string) string {
	switch typ {
	case typeRuntimeDefault:
		return RuntimeDefault
	case typeUnconfined:
		return unconfined
	case typeLocalhost:
		if localhost != nil {
			return localhostPrefix + *localhost
		}
		return ""
	}
	return typ
}

// Field reads an annotation-form name into a field's type and localhost
// profile.
func Field(name string) (typ string, localhost *string, err error) {
	switch {
	case name == RuntimeDefault:
		return typeRuntimeDefault, nil, nil
	case name == unconfined:
		return typeUnconfined, nil, nil
	case strings.HasPrefix(name, localhostPrefix) && len(name) > len(localhostPrefix):
		p := strings.TrimPrefix(name, localhostPrefix)
		return typeLocalhost, &p, nil
	}
	return "", nil, fmt.Errorf("%q is not a profile a pod field can name", name)
}

// ContainerAnnotation returns the value of the container's deprecated
// profile annotation, prefix followed by the container's name, and whether
// the pod has it. The key is built in a buffer on the stack: every
// provider asks for every container of every pod created, and the
// prefixes are too long for the compiler's own temporary (32 bytes), so
// `annotations[prefix+name]` allocated each time.
func ContainerAnnotation(annotations map[string]string, prefix, container string) (string, bool) {
	if len(annotations) == 0 {
		return "", false
	}
	var buf [128]byte // a prefix and a container name (at most 63 bytes) fit
	key := append(append(buf[:0], prefix...), container...)
	value, ok := annotations[string(key)]
	return value, ok
}
