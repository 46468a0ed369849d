// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package securitycontextdeny

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/admission"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"

	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/securitycontextdeny/apis/v1alpha1"
	"github.com/turnstile-k8s/turnstile/test/fixtures"
)

func BenchmarkValidate(b *testing.B) {
	// Admission sees the internal type.
	var pod api.Pod
	if err := corev1conversion.Convert_v1_Pod_To_core_Pod(fixtures.Pod("web", "ns"), &pod, nil); err != nil {
		b.Fatal(err)
	}
	for name, c := range map[string]v1alpha1.SecurityContextDenyConfiguration{
		"historic":                 {},
		"coverEphemeralContainers": {CoverEphemeralContainers: true},
	} {
		b.Run(name, func(b *testing.B) {
			p := New(c)
			a := attrs(&pod, "pods", "", admission.Create)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Validate(ctx, a, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
