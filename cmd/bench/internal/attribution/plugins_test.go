// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package attribution

import (
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// stackProfile builds a CPU profile whose samples have the given stacks
// (innermost first) and nanoseconds.
func stackProfile(samples map[int64][]string) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}}
	functions := map[string]*profile.Function{}
	for ns, stack := range samples {
		s := &profile.Sample{Value: []int64{1, ns}}
		for _, name := range stack {
			f, ok := functions[name]
			if !ok {
				f = &profile.Function{ID: uint64(len(functions) + 1), Name: name}
				functions[name] = f
				p.Function = append(p.Function, f)
			}
			loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f}}}
			p.Location = append(p.Location, loc)
			s.Location = append(s.Location, loc)
		}
		p.Sample = append(p.Sample, s)
	}
	return p
}

func TestAttribute(t *testing.T) {
	const (
		chain = "k8s.io/apiserver/pkg/admission.(*chainAdmissionHandler).Admit"
		psp   = "github.com/turnstile-k8s/turnstile/plugin/pkg/admission/security/podsecuritypolicy.(*Plugin).Admit"
		sa    = "k8s.io/kubernetes/plugin/pkg/admission/serviceaccount.(*Plugin).Admit"
	)
	p := stackProfile(map[int64][]string{
		// PodSecurityPolicy calling the authorizer, recursively: counted once.
		4e9: {"k8s.io/apiserver/pkg/authorization/union.unionAuthzHandler.Authorize", psp, psp, chain},
		1e9: {"runtime.mallocgc", sa, chain},
		5e9: {"k8s.io/apiserver/pkg/endpoints/handlers.createHandler"},
	})
	r, err := Attribute(p, 1000, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.CPU != 10 || r.Creates != 1000 {
		t.Errorf("total %.1f s over %d creates, want 10 s over 1000", r.CPU, r.Creates)
	}
	if r.Chain.Seconds != 5 || r.Chain.Share != 0.5 {
		t.Errorf("chain %+v, want 5 s, half", r.Chain)
	}
	want := []PluginCost{
		{Plugin: "PodSecurityPolicy", Seconds: 4, Share: 0.4, PerCreate: 4000},
		{Plugin: "ServiceAccount", Seconds: 1, Share: 0.1, PerCreate: 1000},
	}
	if len(r.Plugins) != len(want) {
		t.Fatalf("plugins %+v, want %+v", r.Plugins, want)
	}
	for i := range want {
		if r.Plugins[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, r.Plugins[i], want[i])
		}
	}
	if _, err := Attribute(&profile.Profile{SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}}}, 1, time.Second); err == nil {
		t.Error("a heap profile was attributed as CPU")
	}
}
