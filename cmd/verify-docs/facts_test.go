// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
)

func TestStaleVersions(t *testing.T) {
	l := lines{versions: map[string]bool{"v1.37.2": true, "v1.36.5": true}, nextMinor: 38}
	doc := strings.Join([]string{
		"Main is v1.37.2, the older line v1.36.5; `make canary VERSION=v1.38.0-beta.0`.",                 // 1: supported and the next minor
		"Staging modules at v0.37.2, `k8s.io/sample-apiserver v0.37.2`.",                                 // 2: supported, as staging
		"google.golang.org/grpc v1.83.2, go.opentelemetry.io/otel v1.45.0, etcd v3.7.3.",                 // 3: other projects' modules
		"`registry.k8s.io/coredns/coredns:v1.14.2`, Go 1.27.3, busybox 1.36.1-1.",                        // 4: not Kubernetes
		"Measured on vanilla v1.36.3.",                                                                   // 5: planted
		"`registry.k8s.io/kube-apiserver:v1.37.1` and k8s.io/api v0.36.4 and k8s.io/kubernetes v1.35.0.", // 6: planted, three
		"PodSecurityPolicy left in v1.25; v1.24.17 was its last patch.",                                  // 7: a minor alone is history; the patch is planted
	}, "\n")
	got := staleVersions("docs/x.md", doc, l)
	want := []string{"docs/x.md:5: v1.36.3", "docs/x.md:6: v1.37.1", "docs/x.md:6: v0.36.4", "docs/x.md:6: v1.35.0", "docs/x.md:7: v1.24.17"}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w+" is no supported line's Kubernetes version (supported: v1.36.5, v1.37.2)") {
			t.Errorf("problem %d: %s\nwant it to start with %q", i, got[i], w)
		}
	}
}

func TestRestatedFigures(t *testing.T) {
	docs := map[string]string{
		"README.md":           "A pod create allocates 1.003× upstream's bytes; CPU about 7% more.\nready in 4 s",
		"docs/performance.md": "| pods | 1.003 × | 13.1 µs | 7% |\nthe chain: 1,062 ns, 0.5 s",
		"docs/admission.md":   "BenchmarkChain: 1,062 ns per request.\nhealthy within 0.5 s; 4 s; 12%",
	}
	got := restatedFigures(docs)
	want := []string{
		"docs/performance.md:1: 1.003× is restated from README.md:1: state a figure on one page (with its commit and command) and link to it",
		"docs/performance.md:1: 7% is restated from README.md:1: state a figure on one page (with its commit and command) and link to it",
		"docs/performance.md:2: 1,062ns is restated from docs/admission.md:1: state a figure on one page (with its commit and command) and link to it",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
