// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package exec

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/exec/apis/v1alpha1"
	"github.com/turnstile-k8s/turnstile/test/fixtures"
)

// The pod is in the lister, as it is for any pod older than a watch event;
// the benchmark fails if the request path makes an API call.
func BenchmarkValidate(b *testing.B) {
	for _, bc := range []struct {
		name   string
		checks string
		config v1alpha1.ExecConfiguration
		target string
		a      admission.Attributes // default: an exec naming target
	}{
		{name: "DenyEscalatingExec", checks: escalating},
		{name: "DenyExecOnPrivileged", checks: privileged},
		{name: "DenyEscalatingExec/perContainer", checks: escalating, config: v1alpha1.ExecConfiguration{PerContainer: true}, target: "proxy"},
		{name: "DenyEscalatingExec/coverNodeProxy", checks: escalating, config: v1alpha1.ExecConfiguration{CoverNodeProxy: true},
			a: nodeProxy("exec/ns/p/proxy")},
		{name: "DenyEscalatingExec/requirePodSecurityLevel", checks: escalating, config: v1alpha1.ExecConfiguration{RequirePodSecurityLevel: "baseline"}},
		{name: "DenyEscalatingExec/pods-proxy", checks: escalating, config: v1alpha1.ExecConfiguration{CoverPortForward: true}, a: podProxy("p:8080")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			plugin, client := newPlugin(bc.checks, bc.config, []*corev1.Pod{fixtures.Pod("p", "ns")}, nil)
			a := bc.a
			if a == nil {
				a = connect("exec", bc.target)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := plugin.Validate(ctx, a, nil); err != nil {
					b.Fatal(err)
				}
			}
			if n := len(client.Actions()); n != 0 {
				b.Fatalf("%d API calls on the request path", n)
			}
		})
	}
}
