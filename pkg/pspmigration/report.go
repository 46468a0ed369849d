// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package pspmigration

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"

	pspengine "github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy"
)

// Levels are the Pod Security Standards levels, least strict first.
var Levels = []psaapi.Level{psaapi.LevelPrivileged, psaapi.LevelBaseline, psaapi.LevelRestricted}

// Entry is one workload in the report.
type Entry struct {
	Kind           string `json:"kind"`
	Namespace      string `json:"namespace"`
	Name           string `json:"name"`
	ServiceAccount string `json:"serviceAccount"`
	// Admitted are the policies in its pods' kubernetes.io/psp.
	Admitted []string `json:"admitted,omitempty"`
	// Policy admits a pod of it now, as PodSecurityPolicy would; "" when
	// none does, and Refusal says why.
	Policy  string `json:"policy,omitempty"`
	Refusal string `json:"refusal,omitempty"`
	// Changes are the fields that policy's defaults set.
	Changes []string `json:"changes,omitempty"`
	// Level is the strictest Pod Security Standards level the pod meets as
	// PodSecurityPolicy admits it (with the defaults), and Violations the
	// reasons it fails each stricter level.
	Level      psaapi.Level            `json:"level"`
	Violations map[psaapi.Level]string `json:"violations,omitempty"`
}

// Namespace is one namespace's verdict.
type Namespace struct {
	Name      string `json:"name"`
	Workloads int    `json:"workloads"`
	// Admitted counts the workloads PodSecurityPolicy admits now.
	Admitted int `json:"admitted"`
	// Enforce is the pod-security.kubernetes.io/enforce level that admits
	// every workload in it that PodSecurityPolicy admits now (one it
	// refuses, the replacement refuses as well).
	Enforce psaapi.Level `json:"enforce"`
	// Stricter is the next level, and Breaks the workloads it would refuse,
	// with why; empty at restricted.
	Stricter psaapi.Level `json:"stricter,omitempty"`
	Breaks   []Break      `json:"breaks,omitempty"`
}

// Break is a workload a level refuses.
type Break struct {
	Workload string `json:"workload"`
	Reasons  string `json:"reasons"`
}

// Report is the whole report.
type Report struct {
	Namespaces []Namespace `json:"namespaces"`
	Workloads  []Entry     `json:"workloads"`
	// Skipped are policies PodSecurityPolicy cannot apply and skips, with
	// why.
	Skipped map[string]string `json:"skippedPolicies,omitempty"`
}

// Build judges every workload with decider and evaluator.
func Build(ctx context.Context, workloads []*Workload, decider *pspengine.Decider, evaluator psapolicy.Evaluator) (*Report, error) {
	r := &Report{}
	for _, w := range workloads {
		e, err := judge(ctx, w, decider, evaluator)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.Ref(), err)
		}
		r.Workloads = append(r.Workloads, e)
	}
	r.Namespaces = namespaces(r.Workloads)
	return r, nil
}

func judge(ctx context.Context, w *Workload, decider *pspengine.Decider, evaluator psapolicy.Evaluator) (Entry, error) {
	e := Entry{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, Admitted: w.Admitted, ServiceAccount: w.Template.Spec.ServiceAccountName}
	if e.ServiceAccount == "" {
		e.ServiceAccount = "default" // the ServiceAccount plugin's default
	}
	v1pod := &corev1.Pod{ObjectMeta: w.Template.ObjectMeta, Spec: w.Template.Spec}
	v1pod.Spec.ServiceAccountName = e.ServiceAccount
	if v1pod.Name == "" {
		v1pod.Name = w.Name
	}
	pod := &api.Pod{}
	if err := corev1conversion.Convert_v1_Pod_To_core_Pod(v1pod, pod, nil); err != nil {
		return e, err
	}
	var creator user.Info
	if w.Creator != "" {
		// As the apiserver authenticates the controller: its service
		// account's groups and system:authenticated.
		ns, name, _ := serviceaccount.SplitUsername(w.Creator)
		sa := serviceaccount.UserInfo(ns, name, "")
		creator = &user.DefaultInfo{Name: sa.GetName(), Groups: append(sa.GetGroups(), user.AllAuthenticated)}
	}
	d, err := decider.Decide(ctx, w.Namespace, creator, pod)
	if err != nil {
		return e, err
	}
	e.Policy, e.Refusal, e.Changes = d.Policy, d.Refusal, d.Changed
	judged := v1pod
	if d.Pod != nil {
		judged = &corev1.Pod{}
		if err := corev1conversion.Convert_core_Pod_To_v1_Pod(d.Pod, judged, nil); err != nil {
			return e, err
		}
	}
	// The strictest level with no violation at it or any laxer level.
	e.Level = psaapi.LevelPrivileged
	for _, level := range Levels[1:] {
		agg := psapolicy.AggregateCheckResults(evaluator.EvaluatePod(psaapi.LevelVersion{Level: level, Version: psaapi.LatestVersion()}, &judged.ObjectMeta, &judged.Spec))
		switch {
		case !agg.Allowed:
			if e.Violations == nil {
				e.Violations = map[psaapi.Level]string{}
			}
			e.Violations[level] = agg.ForbiddenDetail()
		case len(e.Violations) == 0:
			e.Level = level
		}
	}
	return e, nil
}

// namespaces sums the entries up per namespace.
func namespaces(entries []Entry) []Namespace {
	var out []Namespace
	index := map[string]int{}
	for _, e := range entries {
		i, seen := index[e.Namespace]
		if !seen {
			i = len(out)
			index[e.Namespace] = i
			out = append(out, Namespace{Name: e.Namespace, Enforce: psaapi.LevelRestricted})
		}
		ns := &out[i]
		ns.Workloads++
		// What PodSecurityPolicy refuses now, the replacement refuses
		// too: the label need not admit it.
		if e.Refusal != "" {
			continue
		}
		ns.Admitted++
		if rank(e.Level) < rank(ns.Enforce) {
			ns.Enforce = e.Level
		}
	}
	for i := range out {
		ns := &out[i]
		if ns.Enforce == psaapi.LevelRestricted {
			continue
		}
		ns.Stricter = Levels[rank(ns.Enforce)+1]
		for _, e := range entries {
			if e.Namespace == ns.Name && e.Refusal == "" && rank(e.Level) < rank(ns.Stricter) {
				ns.Breaks = append(ns.Breaks, Break{Workload: e.Kind + "/" + e.Name, Reasons: e.Violations[ns.Stricter]})
			}
		}
	}
	slices.SortFunc(out, func(a, b Namespace) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func rank(l psaapi.Level) int { return slices.Index(Levels, l) }
