// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package attribution

import (
	"math"
	"testing"
)

func TestAttributedFunction(t *testing.T) {
	const (
		psp     = "github.com/turnstile-k8s/turnstile/plugin/pkg/admission/security/podsecuritypolicy.(*Plugin).Admit"
		wrapper = "github.com/turnstile-k8s/turnstile/pkg/admission/rejectedby.(*mutating).Admit"
		chain   = "k8s.io/apiserver/pkg/admission.(*chainAdmissionHandler).Admit"
	)
	for _, tc := range []struct {
		name  string
		stack []string // innermost first
		want  string
	}{
		{"a plugin claims what it calls", []string{"k8s.io/api/core/v1.(*Pod).DeepCopy", psp, wrapper, chain}, psp},
		{"our chain's decorator claims nothing", []string{"k8s.io/apiserver/pkg/admission/metrics.(*AdmissionMetrics).ObserveAdmissionController", wrapper, chain},
			"k8s.io/apiserver/pkg/admission/metrics.(*AdmissionMetrics).ObserveAdmissionController"},
		{"work outside the plugins is its own function", []string{"k8s.io/apimachinery/pkg/apis/meta/v1.(*ObjectMeta).Unmarshal", "k8s.io/apiserver/pkg/storage/etcd3.(*store).Create"},
			"k8s.io/apimachinery/pkg/apis/meta/v1.(*ObjectMeta).Unmarshal"},
		{"the collector's workers are one", []string{"runtime.scanObject", "runtime.gcDrain", "runtime.gcBgMarkWorker"}, "(the garbage collector's background work)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := stackProfile(map[int64][]string{1: tc.stack})
			if got := attributedFunction(p.Sample[0]); got != tc.want {
				t.Errorf("charged to %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDiffProfiles(t *testing.T) {
	const (
		psp    = "github.com/turnstile-k8s/turnstile/plugin/pkg/admission/security/podsecuritypolicy.(*Plugin).Admit"
		decode = "k8s.io/apimachinery/pkg/apis/meta/v1.(*ObjectMeta).Unmarshal"
		serve  = "net/http.(*conn).serve"
	)
	// Per 1,000 requests, as profiledRun scales them: upstream spends
	// 1,000 µs a request; Turnstile 1% more in PodSecurityPolicy, 0.3%
	// more decoding (under the 0.5% a row needs) and the same serving.
	upstream := stackProfile(map[int64][]string{
		997e6: {serve},
		3e6:   {decode},
	})
	turnstile := stackProfile(map[int64][]string{
		997e6 + 1: {serve}, // a nanosecond more: map keys must differ
		6e6:       {decode},
		10e6:      {psp},
	})
	table, err := diffProfiles(turnstile, upstream, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(table.Upstream-1000) > 1e-6 || math.Abs(table.Turnstile-1013) > 1e-3 {
		t.Errorf("totals per request: Turnstile %v, upstream %v µs; want 1013 and 1000", table.Turnstile, table.Upstream)
	}
	if len(table.Rows) != 1 || table.Rows[0].Function != psp || math.Abs(table.Rows[0].Share-0.01) > 1e-9 {
		t.Errorf("rows of 0.5%% or more: %+v, want PodSecurityPolicy's alone at +1%%", table.Rows)
	}
	byName := map[string]attributionRow{}
	for _, row := range table.Plugins {
		byName[row.Function] = row
	}
	if got := byName["PodSecurityPolicy"]; math.Abs(got.Turnstile-10) > 1e-9 || got.Upstream != 0 {
		t.Errorf("PodSecurityPolicy: %+v, want 10 µs on Turnstile's side only", got)
	}
	if got := byName[notInPlugin]; math.Abs(got.Share-0.003) > 1e-6 {
		t.Errorf("%s: %+v, want +0.3%% (the decoding)", notInPlugin, got)
	}
	if _, err := diffProfiles(turnstile, upstream, "alloc_space"); err == nil {
		t.Error("diffProfiles compared a sample type neither profile has")
	}
}
