// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package hostpath matches hostPath volumes against a PodSecurityPolicy's
// allowedHostPaths.
package hostpath

import (
	"strings"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
)

// Allows reports whether path may be used and whether it must then be
// mounted read-only. No prefixes allow every path read-write. A prefix
// matches whole path components, ignoring one trailing "/" on either side;
// the path is not cleaned. A matching read-write prefix wins over read-only
// ones.
func Allows(prefixes []policy.AllowedHostPath, path string) (allowed, readOnly bool) {
	if len(prefixes) == 0 {
		return true, false
	}
	for _, p := range prefixes {
		if !hasPathPrefix(path, p.PathPrefix) {
			continue
		}
		if !p.ReadOnly {
			return true, false
		}
		allowed, readOnly = true, true
	}
	return allowed, readOnly
}

func hasPathPrefix(path, prefix string) bool {
	path = strings.TrimSuffix(path, "/")
	prefix = strings.TrimSuffix(prefix, "/")
	rest, ok := strings.CutPrefix(path, prefix)
	return ok && (rest == "" || rest[0] == '/')
}
