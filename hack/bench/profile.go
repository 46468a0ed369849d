// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/pprof/profile"
)

// pluginPackages maps the package that holds each admission plugin of the
// all-documented configuration (upstream's defaults included) to the
// plugin's name. A sample of the CPU profile counts for a plugin when its
// package is anywhere on the sample's stack: what the plugin runs,
// including the authorizer, listers and libraries it calls.
var pluginPackages = map[string]string{
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle":                             "NamespaceLifecycle",
	"k8s.io/kubernetes/plugin/pkg/admission/limitranger":                                    "LimitRanger",
	"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount":                                 "ServiceAccount",
	"k8s.io/kubernetes/plugin/pkg/admission/noderestriction":                                "NodeRestriction",
	"k8s.io/kubernetes/plugin/pkg/admission/nodetaint":                                      "TaintNodesByCondition",
	"k8s.io/kubernetes/plugin/pkg/admission/priority":                                       "Priority",
	"k8s.io/kubernetes/plugin/pkg/admission/defaulttolerationseconds":                       "DefaultTolerationSeconds",
	"k8s.io/kubernetes/plugin/pkg/admission/storage/persistentvolume/resize":                "PersistentVolumeClaimResize",
	"k8s.io/kubernetes/plugin/pkg/admission/runtimeclass":                                   "RuntimeClass",
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/approval":                          "CertificateApproval",
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/signing":                           "CertificateSigning",
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/ctbattest":                         "ClusterTrustBundleAttest",
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/subjectrestriction":                "CertificateSubjectRestriction",
	"k8s.io/kubernetes/plugin/pkg/admission/network/defaultingressclass":                    "DefaultIngressClass",
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageclass/setdefault":                "DefaultStorageClass",
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageobjectinuseprotection":           "StorageObjectInUseProtection",
	"k8s.io/kubernetes/plugin/pkg/admission/podtopologylabels":                              "PodTopologyLabels",
	"k8s.io/kubernetes/plugin/pkg/admission/security/podsecurity":                           "PodSecurity",
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating":                                 "MutatingAdmissionPolicy",
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating":                               "ValidatingAdmissionPolicy",
	"k8s.io/apiserver/pkg/admission/plugin/webhook/mutating":                                "MutatingAdmissionWebhook",
	"k8s.io/apiserver/pkg/admission/plugin/webhook/validating":                              "ValidatingAdmissionWebhook",
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota":                                   "ResourceQuota",
	"k8s.io/kubernetes/plugin/pkg/admission/admit":                                          "AlwaysAdmit",
	"k8s.io/kubernetes/plugin/pkg/admission/alwayspullimages":                               "AlwaysPullImages",
	"k8s.io/kubernetes/plugin/pkg/admission/network/denyserviceexternalips":                 "DenyServiceExternalIPs",
	"k8s.io/kubernetes/plugin/pkg/admission/eventratelimit":                                 "EventRateLimit",
	"k8s.io/kubernetes/plugin/pkg/admission/extendedresourcetoleration":                     "ExtendedResourceToleration",
	"k8s.io/kubernetes/plugin/pkg/admission/antiaffinity":                                   "LimitPodHardAntiAffinityTopology",
	"k8s.io/kubernetes/plugin/pkg/admission/namespace/exists":                               "NamespaceExists",
	"k8s.io/kubernetes/plugin/pkg/admission/gc":                                             "OwnerReferencesPermissionEnforcement",
	"k8s.io/kubernetes/plugin/pkg/admission/podnodeselector":                                "PodNodeSelector",
	"k8s.io/kubernetes/plugin/pkg/admission/podtolerationrestriction":                       "PodTolerationRestriction",
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/securitycontextdeny":           "SecurityContextDeny",
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/exec":                          "DenyEscalatingExec, DenyExecOnPrivileged",
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/storage/persistentvolumelabel": "PersistentVolumeLabel",
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/security/podsecuritypolicy":    "PodSecurityPolicy",
}

// admissionChain is the package whose frames hold every plugin's work.
const admissionChain = "k8s.io/apiserver/pkg/admission"

// pluginCost is one row of the per-plugin table.
type pluginCost struct {
	Plugin  string  `json:"plugin"`
	Seconds float64 `json:"cpuSeconds"`
	// Share is of the apiserver's whole CPU during the profile.
	Share float64 `json:"share"`
	// PerCreate is CPU microseconds per pod created during the profile.
	PerCreate float64 `json:"cpuMicrosecondsPerCreate"`
}

// profileReport is the CPU profile of one run (all-documented pods unless
// -profile says otherwise).
type profileReport struct {
	Of      string       `json:"of"`
	Seconds float64      `json:"profileSeconds"`
	CPU     float64      `json:"cpuSeconds"`
	Creates int          `json:"podCreates"`
	Chain   pluginCost   `json:"admissionChain"`
	Plugins []pluginCost `json:"plugins"`
	// File is the raw profile, for `go tool pprof`.
	File string `json:"file,omitempty"`
}

// cpuProfile takes a CPU profile of the apiserver for d through its
// /debug/pprof endpoint (on by default: --profiling).
func (s *server) cpuProfile(ctx context.Context, d time.Duration) (*profile.Profile, error) {
	data, err := s.client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
		Param("seconds", strconv.Itoa(int(d.Seconds()))).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("/debug/pprof/profile: %w", err)
	}
	return profile.Parse(bytes.NewReader(data))
}

// profileInBackground starts a CPU profile of d and returns a function
// that waits for it.
func (s *server) profileInBackground(ctx context.Context, d time.Duration) func() (*profile.Profile, error) {
	type taken struct {
		p   *profile.Profile
		err error
	}
	done := make(chan taken, 1)
	go func() {
		p, err := s.cpuProfile(ctx, d)
		done <- taken{p, err}
	}()
	return func() (*profile.Profile, error) {
		got := <-done
		return got.p, got.err
	}
}

// liveHeap collects the apiserver's garbage (its heap profile is taken
// with gc=1) and returns that profile and the live heap the collection
// found, in MiB: go_gc_heap_live_bytes, the runtime's /gc/heap/live:bytes.
// That figure is exact. The profile's in-use total is not: it is a sample
// (one allocation in every 512 KiB), and it moved by several MiB between
// two servers holding the same objects; it is kept to say where the heap
// is, not how large.
func (s *server) liveHeap(ctx context.Context) (*profile.Profile, float64, error) {
	data, err := s.client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("/debug/pprof/heap: %w", err)
	}
	p, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, 0, fmt.Errorf("/debug/pprof/heap: %w", err)
	}
	live := -1.0
	if err := scrape(ctx, s.client, func(name, _ string, value float64) {
		if name == metricLiveHeap {
			live = value
		}
	}); err != nil {
		return nil, 0, err
	}
	if live < 0 {
		return nil, 0, fmt.Errorf("the apiserver's /metrics has no %s", metricLiveHeap)
	}
	return p, live / (1 << 20), nil
}

// writeProfile writes p for `go tool pprof`.
func writeProfile(p *profile.Profile, path string) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := p.Write(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// profiledLoad runs the scenario for d while the apiserver profiles itself
// for the same d, and attributes the profile.
func (s *server) profiledLoad(ctx context.Context, sc scenario, concurrency int, d time.Duration) (profileReport, error) {
	wait := s.profileInBackground(ctx, d)
	f, err := s.load(ctx, sc, concurrency, d, 0, "profiled")
	p, profileErr := wait()
	if err != nil {
		return profileReport{}, err
	}
	if profileErr != nil {
		return profileReport{}, profileErr
	}
	if s.profileFile != "" {
		if err := writeProfile(p, s.profileFile); err != nil {
			return profileReport{}, err
		}
	}
	r, err := attribute(p, f.Requests, d)
	r.File = s.profileFile
	return r, err
}

// attribute sums the profile's CPU time per plugin package, counting a
// sample once per plugin however often the plugin is on its stack.
func attribute(p *profile.Profile, creates int, d time.Duration) (profileReport, error) {
	cpu := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool { return t.Type == "cpu" && t.Unit == "nanoseconds" })
	if cpu < 0 {
		return profileReport{}, fmt.Errorf("the profile has no cpu/nanoseconds samples")
	}
	var total, chain float64
	per := map[string]float64{}
	for _, sample := range p.Sample {
		v := float64(sample.Value[cpu]) / 1e9
		total += v
		seen := map[string]bool{}
		for _, loc := range sample.Location {
			for _, line := range loc.Line {
				pkg := packageOf(line.Function.Name)
				if plugin, ok := pluginPackages[pkg]; ok && !seen[plugin] {
					seen[plugin] = true
					per[plugin] += v
				}
				if pkg == admissionChain && !seen[admissionChain] {
					seen[admissionChain] = true
					chain += v
				}
			}
		}
	}
	cost := func(name string, seconds float64) pluginCost {
		c := pluginCost{Plugin: name, Seconds: seconds}
		if total > 0 {
			c.Share = seconds / total
		}
		if creates > 0 {
			c.PerCreate = seconds / float64(creates) * 1e6
		}
		return c
	}
	r := profileReport{Seconds: d.Seconds(), CPU: total, Creates: creates, Chain: cost("the whole admission chain", chain)}
	for plugin, seconds := range per {
		r.Plugins = append(r.Plugins, cost(plugin, seconds))
	}
	slices.SortFunc(r.Plugins, func(a, b pluginCost) int {
		if a.Seconds != b.Seconds {
			if a.Seconds > b.Seconds {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Plugin, b.Plugin)
	})
	return r, nil
}

// shares is the admission chain's and PodSecurityPolicy's share of the
// profile's CPU, as the scale table prints them.
func (r *profileReport) shares() string {
	if r == nil {
		return "-"
	}
	psp := 0.0
	for _, p := range r.Plugins {
		if p.Plugin == "PodSecurityPolicy" {
			psp = p.Share
		}
	}
	return fmt.Sprintf("%.1f / %.1f", 100*r.Chain.Share, 100*psp)
}

// packageOf returns the import path of a function's package, from a name
// such as "k8s.io/x/y.(*T).Method" or "k8s.io/x/y.Func.func1".
func packageOf(function string) string {
	slash := strings.LastIndexByte(function, '/')
	dot := strings.IndexByte(function[slash+1:], '.')
	if dot < 0 {
		return function
	}
	return function[:slash+1+dot]
}

func printProfile(w io.Writer, r profileReport) {
	fmt.Fprintf(w, "\n%s, Turnstile: CPU profile of %.0f s, %.2f CPU-seconds, %d requests.\n", r.Of, r.Seconds, r.CPU, r.Creates)
	fmt.Fprintf(w, "A plugin's CPU is every sample with its package on the stack (what it calls included). Profile: %s\n\n", r.File)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "plugin\tCPU share\tµs CPU per request\t")
	for _, c := range append([]pluginCost{r.Chain}, r.Plugins...) {
		fmt.Fprintf(tw, "%s\t%.2f%%\t%.1f\t\n", c.Plugin, c.Share*100, c.PerCreate)
	}
	tw.Flush()
}
