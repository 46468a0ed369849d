// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package restored lists the admission plugins Turnstile restores, each by
// the descriptor beside its code (pkg/admission/descriptor). The registry,
// the configuration loader and the reload controller read this list: adding
// a restored plugin is its package and one line here.
package restored

import (
	"slices"

	"github.com/turnstile-k8s/turnstile/pkg/admission/descriptor"
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/exec"
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/security/podsecuritypolicy"
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/securitycontextdeny"
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/storage/persistentvolumelabel"
)

// Plugins are the restored plugins. Those placed after the same upstream
// plugin run in the order listed.
var Plugins = slices.Concat(
	[]descriptor.Plugin{securitycontextdeny.Descriptor},
	exec.Descriptors,
	[]descriptor.Plugin{persistentvolumelabel.Descriptor},
	[]descriptor.Plugin{podsecuritypolicy.Descriptor},
)
