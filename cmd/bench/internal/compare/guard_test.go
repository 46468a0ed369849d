// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package compare

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/measure"
)

func TestMain(m *testing.M) {
	measure.QuietKlog()
	os.Exit(m.Run())
}

func counted(bytes, objects, etcd float64) figure {
	return figure{Requests: 1000, PerRequest: measure.Counters{AllocBytes: bytes, AllocObjects: objects, EtcdRequests: etcd}}
}

func TestGuardChecks(t *testing.T) {
	upstream := []figure{counted(1000, 100, 1), counted(1000, 100, 1), counted(1000, 100, 1)}
	for _, tc := range []struct {
		name      string
		result    result
		wantOver  []string // counters over the limit
		wantError string
	}{{
		name:   "equal counts pass",
		result: result{Configuration: "same-plugins", Turnstile: upstream, Upstream: upstream},
	}, {
		name: "the median judges, not one pair",
		result: result{Configuration: "same-plugins", Upstream: upstream,
			Turnstile: []figure{counted(1010, 100, 1), counted(1300, 100, 1), counted(1000, 100, 1)}},
	}, {
		name: "5% more bytes fails same-plugins",
		result: result{Configuration: "same-plugins", Upstream: upstream,
			Turnstile: []figure{counted(1050, 101, 1), counted(1050, 101, 1), counted(1050, 101, 1)}},
		wantOver: []string{"bytes allocated per pod create"},
	}, {
		name: "3% more passes upstream-same, whose limit is 1.04",
		result: result{Configuration: "upstream-same", Upstream: upstream,
			Turnstile: []figure{counted(1030, 103, 1), counted(1030, 103, 1), counted(1030, 103, 1)}},
	}, {
		name: "an etcd request more fails",
		result: result{Configuration: "upstream-same", Upstream: upstream,
			Turnstile: []figure{counted(1000, 100, 2), counted(1000, 100, 2), counted(1000, 100, 2)}},
		wantOver: []string{"etcd requests per pod create"},
	}, {
		name:      "a configuration without a limit is an error",
		result:    result{Configuration: "noise-floor", Turnstile: upstream, Upstream: upstream},
		wantError: "no limit for noise-floor",
	}, {
		name:      "a run that counted nothing is an error, not a pass",
		result:    result{Configuration: "same-plugins", Turnstile: upstream, Upstream: []figure{counted(0, 0, 0), counted(0, 0, 0), counted(0, 0, 0)}},
		wantError: "measured nothing",
	}, {
		name: "a pair with errors is an error",
		result: result{Configuration: "same-plugins", Turnstile: upstream,
			Upstream: []figure{{Requests: 10, Errors: 3, FirstError: "forbidden", PerRequest: measure.Counters{AllocBytes: 1, AllocObjects: 1, EtcdRequests: 1}}, upstream[1], upstream[2]}},
		wantError: "forbidden",
	}, {
		name:      "unequal runs are an error",
		result:    result{Configuration: "same-plugins", Turnstile: upstream[:2], Upstream: upstream},
		wantError: "as many of each",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			checks, err := guardChecks([]result{tc.result})
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var over []string
			for _, c := range checks {
				if !c.passed() {
					over = append(over, c.Counter)
				}
			}
			if fmt.Sprint(over) != fmt.Sprint(tc.wantOver) {
				t.Errorf("over the limit: %v, want %v", over, tc.wantOver)
			}
		})
	}
}

// plantedShare is the regression TestCostGuard plants: this much more
// allocated per pod create, in bytes and in objects, than upstream does.
const plantedShare = 0.05

// plantedSlack is how far the plant's measured growth may be from
// plantedShare: the difference of two medians of three short pairs each.
// Three clean-clone CI runs measured the objects' growth at 0.049, 0.036
// and 0.024 and the bytes' at 0.048, 0.040 and 0.038, so ±0.02 failed a
// run whose plant the guard had caught (1.043, over its 1.02). Still far
// from nothing: a guard that measured noise would see about 0.
const plantedSlack = 0.03

// TestCostGuard runs the guard on the tree as it is, which must pass, and
// then on test/kube-apiserver-planted, our kube-apiserver with a plugin that
// allocates 5% more per pod create than upstream's whole apiserver does,
// which must fail. make test-cost runs it, with the binaries built.
func TestCostGuard(t *testing.T) {
	if os.Getenv("TURNSTILE_COST_GUARD") == "" {
		t.Skip("make test-cost runs this (TURNSTILE_COST_GUARD=1): it needs the built kube-apiserver, kube-apiserver-upstream, kube-apiserver-planted and etcd")
	}
	checks, results, err := runGuard("../../admission-config.yaml", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	printGuard(&table, checks)
	t.Logf("the tree:\n%s", table.String())
	for _, c := range checks {
		if !c.passed() {
			t.Errorf("%s: %s is %.4f of upstream's, over the limit of %.2f", c.Configuration, c.Counter, c.Ratio, c.Limit)
		}
	}

	// Upstream's own counts in the same-plugins run size the plant.
	bytes, objects := measure.Median(values(results[0].Upstream, metric{value: allocBytes})), measure.Median(values(results[0].Upstream, metric{value: allocObjects}))
	plant := fmt.Sprintf("--planted-allocation=%d/%d", int(plantedShare*bytes), int(plantedShare*objects))
	planted, _, err := runGuard("../../admission-config.yaml", "kube-apiserver-planted", []string{plant}, "same-plugins")
	if err != nil {
		t.Fatal(err)
	}
	table.Reset()
	printGuard(&table, planted)
	t.Logf("planted, %s (%.0f%% of upstream's %.0f bytes and %.0f objects per pod create):\n%s", plant, 100*plantedShare, bytes, objects, table.String())
	for _, c := range planted {
		allocation := strings.HasPrefix(c.Counter, "bytes") || strings.HasPrefix(c.Counter, "objects")
		if allocation && c.passed() {
			t.Errorf("planted: the guard passed %s at %.4f of upstream's: it does not catch %.0f%% more", c.Counter, c.Ratio, 100*plantedShare)
		}
		// What the guard saw is the plant, not noise that happened to
		// cross the limit: the planted ratio less the tree's, measured
		// on the same machine minutes apart, so that a run whose
		// baseline sits a point below 1 (CI's did, at 0.990) does not
		// fail for it.
		if !allocation {
			continue
		}
		tree, ok := findCheck(checks, c.Configuration, c.Counter)
		if !ok {
			t.Fatalf("planted: no %s %s in the tree's run", c.Configuration, c.Counter)
		}
		if grown := c.Ratio - tree.Ratio; grown < plantedShare-plantedSlack || grown > plantedShare+plantedSlack {
			t.Errorf("planted: %s is %.4f of upstream's, the tree's %.4f: grown by %.3f, want %.2f±%.2f: the plant is not what was measured", c.Counter, c.Ratio, tree.Ratio, grown, plantedShare, plantedSlack)
		}
	}
}

// findCheck is the check of configuration's counter.
func findCheck(checks []guardCheck, configuration, counter string) (guardCheck, bool) {
	for _, c := range checks {
		if c.Configuration == configuration && c.Counter == counter {
			return c, true
		}
	}
	return guardCheck{}, false
}
