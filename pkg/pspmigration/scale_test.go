// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package pspmigration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes/fake"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"

	pspfake "github.com/turnstile-k8s/turnstile/pkg/client/clientset/versioned/fake"
	"github.com/turnstile-k8s/turnstile/pkg/pspmigration/teams"
	pspengine "github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy"
)

// teamCluster is n teams' policies and grants (package teams) beside the
// examples, as kubectl psp reads them, with the replacement loaded.
type teamCluster struct {
	n       int
	decider *pspengine.Decider
	rbac    *RBAC
	judge   *Judge
	calls   *atomic.Int64 // authorizer calls, by either side
	r       *Replacement
}

func newTeamCluster(t testing.TB, n int) *teamCluster {
	t.Helper()
	ctx := context.Background()
	policyObjects, rbacObjects := examples(t)
	for _, p := range teams.Policies(n) {
		policyObjects = append(policyObjects, p)
	}
	rbacObjects = append(rbacObjects, teams.RBAC(n)...)
	policies, err := Policies(ctx, pspfake.NewSimpleClientset(policyObjects...))
	if err != nil {
		t.Fatal(err)
	}
	rbac, err := ReadRBAC(ctx, fake.NewClientset(rbacObjects...))
	if err != nil {
		t.Fatal(err)
	}
	c := &teamCluster{n: n, rbac: rbac, calls: &atomic.Int64{}}
	counted := authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		c.calls.Add(1)
		return rbac.Authorizer.Authorize(ctx, a)
	})
	var skipped map[string]error
	if c.decider, skipped = pspengine.NewDecider(policies, counted); len(skipped) > 0 {
		t.Fatalf("policies skipped: %v", skipped)
	}
	report := &Report{}
	for i := range n {
		report.Namespaces = append(report.Namespaces, Namespace{Name: teams.Of(i, n).Namespace, Enforce: psaapi.LevelPrivileged})
	}
	if c.r, err = Convert(c.decider.Policies(), report, true); err != nil {
		t.Fatal(err)
	}
	if c.judge, err = NewJudge(c.r, upstreamSchemas(t), counted); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.judge.Close)
	return c
}

// requesters are who creates a team's pod: its service account, and the
// ReplicaSet controller (kubeadm's kube-controller-manager, with
// --use-service-account-credentials).
func requesters(team teams.Team) map[string]user.Info {
	sa := serviceaccount.UserInfo(team.Namespace, team.ServiceAccount, "")
	return map[string]user.Info{
		"service account": &user.DefaultInfo{Name: sa.GetName(), Groups: append(sa.GetGroups(), user.AllAuthenticated)},
		"controller": &user.DefaultInfo{Name: "system:serviceaccount:kube-system:replicaset-controller",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", user.AllAuthenticated}},
	}
}

// At 10, 50 and 200 teams, every team's restrictive, defaulted and data
// pods, created by its service account and by a controller, are decided by
// the replacement as by PodSecurityPolicy: the same policy (team-0's
// restrictive pod passes the examples' baseline and privileged, which it
// may not use, and the last team's passes every other team's policy too),
// the same pod; no request runs out of CEL's budget; and every generated
// object stays under MaxObjectBytes while the whole output grows with the
// number of policies. -short (an older line's tier, which re-runs main's
// unit tests on its own modules) leaves out 200 teams, two thirds of the
// test's time; 50 teams are already nine choosers.
func TestTeams(t *testing.T) {
	t.Parallel() // each compiles its own replacement: seconds of CPU
	ctx := context.Background()
	sizes := map[int]int{}
	counts := []int{10, 50, 200}
	if testing.Short() {
		counts = counts[:2]
	}
	for _, n := range counts {
		c := newTeamCluster(t, n)
		total := 0
		for _, o := range c.r.objects() {
			data, err := json.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			total += len(data)
		}
		sizes[n] = total
		var cases []creation
		for _, i := range []int{0, 1, 2, n/2 + 1, n - 1} {
			team := teams.Of(i, n)
			for _, pod := range []*corev1.Pod{teams.RestrictivePod(team), teams.DefaultedPod(team), teams.DataPod(team)} {
				for who, requester := range requesters(team) {
					cases = append(cases, creation{fmt.Sprintf("%s's %s pod as its %s", team.Policy, pod.Name, who), team.Namespace, requester, true, pod})
				}
			}
		}
		v, err := decideAll(ctx, c.decider, c.judge, cases, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range v.Disagreements {
			t.Errorf("%d teams: %s:\n  PodSecurityPolicy: %s\n  replacement: %s %v", n, d.Case, d.PodSecurityPolicy, d.Replacement, d.Fields)
		}
		admitted := 0
		for _, c2 := range cases {
			verdict, err := c.judge.Decide(ctx, c2.namespace, c2.requester, c2.pod)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(verdict.Refusal, "budget") {
				t.Errorf("%d teams: %s: %s", n, c2.name, verdict.Refusal)
			}
			if verdict.Refusal == "" {
				admitted++
			}
		}
		// kubectl debug on the last team's pod, as admitted: a privileged
		// container, one the team's policy takes as it is, one it would
		// have to change.
		team := teams.Of(n-1, n)
		requester := requesters(team)["service account"]
		admittedPod, err := c.judge.Decide(ctx, team.Namespace, requester, teams.RestrictivePod(team))
		if err != nil || admittedPod.Refusal != "" {
			t.Fatalf("%d teams: %v %s", n, err, admittedPod.Refusal)
		}
		internal := &api.Pod{}
		if err := corev1conversion.Convert_v1_Pod_To_core_Pod(admittedPod.Pod, internal, nil); err != nil {
			t.Fatal(err)
		}
		for name, sc := range map[string]*corev1.SecurityContext{
			"privileged":  {Privileged: ptr.To(true)},
			"restrictive": teams.RestrictivePod(team).Spec.Containers[0].SecurityContext,
			"bare":        nil,
		} {
			debug := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "x", SecurityContext: sc}}
			internalDebug := api.EphemeralContainer{}
			if err := corev1conversion.Convert_v1_EphemeralContainer_To_core_EphemeralContainer(&debug, &internalDebug, nil); err != nil {
				t.Fatal(err)
			}
			want, err := c.decider.DecideEphemeral(ctx, team.Namespace, requester, internal, internalDebug)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.judge.DecideEphemeral(ctx, team.Namespace, requester, admittedPod.Pod, debug)
			if err != nil {
				t.Fatal(err)
			}
			if wantAdmitted := name != "privileged"; (want == "") != wantAdmitted && name != "bare" {
				t.Errorf("%d teams: PodSecurityPolicy on a %s ephemeral container: %q, want admitted %t", n, name, want, wantAdmitted)
			}
			if (want == "") != (got == "") || strings.Contains(got, "budget") {
				t.Errorf("%d teams: a %s ephemeral container: PodSecurityPolicy %q, replacement %q", n, name, want, got)
			}
		}
		t.Logf("%d teams: %d objects, %d bytes; %d of %d creations admitted, all alike", n, len(c.r.objects()), total, admitted, v.Cases)
	}
	// Linear: n/10 times the policies take at most n/8 times the bytes (the
	// gate's list of names is the only part that grows with every policy).
	last := counts[len(counts)-1]
	if sizes[last] > last/8*sizes[10] {
		t.Errorf("%d teams' replacement is %d bytes, 10 teams' %d: it grows faster than the number of policies", last, sizes[last], sizes[10])
	}
}

// BenchmarkPodCreate decides the last team's restrictive pod, created by
// its service account and by a controller, at 10, 50 and 200 teams: by
// PodSecurityPolicy's plugin (in-process, as kubectl psp runs it) and by
// the replacement (upstream's admission policy plugins, in-process), with
// the authorizer calls each makes per creation.
func BenchmarkPodCreate(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{10, 50, 200} {
		// One cluster at a time: a larger one's heap would slow the
		// smaller one's collections.
		b.Run(fmt.Sprintf("policies=%d", n+3), func(b *testing.B) {
			c := newTeamCluster(b, n)
			team := teams.Of(n-1, n)
			pod := teams.RestrictivePod(team)
			internal := &api.Pod{}
			if err := corev1conversion.Convert_v1_Pod_To_core_Pod(pod, internal, nil); err != nil {
				b.Fatal(err)
			}
			for _, who := range []string{"service account", "controller"} {
				requester := requesters(team)[who]
				b.Run(strings.ReplaceAll(who, " ", "-")+"/podsecuritypolicy", func(b *testing.B) {
					c.calls.Store(0)
					for b.Loop() {
						if d, err := c.decider.Decide(ctx, team.Namespace, requester, internal); err != nil || d.Policy != team.Policy {
							b.Fatalf("%+v, %v", d, err)
						}
					}
					b.ReportMetric(float64(c.calls.Load())/float64(b.N), "authz-calls/op")
				})
				b.Run(strings.ReplaceAll(who, " ", "-")+"/replacement", func(b *testing.B) {
					c.calls.Store(0)
					for b.Loop() {
						if v, err := c.judge.Decide(ctx, team.Namespace, requester, pod); err != nil || v.Refusal != "" {
							b.Fatalf("%+v, %v", v.Refusal, err)
						}
					}
					b.ReportMetric(float64(c.calls.Load())/float64(b.N), "authz-calls/op")
				})
			}
		})
	}
}
