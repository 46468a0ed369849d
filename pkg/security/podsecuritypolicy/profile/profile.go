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

// The annotation forms.
const (
	RuntimeDefault  = "runtime/default"
	Unconfined      = "unconfined"
	LocalhostPrefix = "localhost/"
)

// The field types, as both SeccompProfileType and AppArmorProfileType spell
// them.
const (
	typeRuntimeDefault = "RuntimeDefault"
	typeUnconfined     = "Unconfined"
	typeLocalhost      = "Localhost"
)

// Name writes a field (its type and localhost profile) in the annotation
// form; "" for a field that names no profile.
func Name(typ string, localhost *string) string {
	switch typ {
	case typeRuntimeDefault:
		return RuntimeDefault
	case typeUnconfined:
		return Unconfined
	case typeLocalhost:
		if localhost != nil {
			return LocalhostPrefix + *localhost
		}
	}
	return ""
}

// Field reads an annotation-form name into a field's type and localhost
// profile.
func Field(name string) (typ string, localhost *string, err error) {
	switch {
	case name == RuntimeDefault:
		return typeRuntimeDefault, nil, nil
	case name == Unconfined:
		return typeUnconfined, nil, nil
	case strings.HasPrefix(name, LocalhostPrefix) && len(name) > len(LocalhostPrefix):
		p := strings.TrimPrefix(name, LocalhostPrefix)
		return typeLocalhost, &p, nil
	}
	return "", nil, fmt.Errorf("%q is not a profile a pod field can name", name)
}
