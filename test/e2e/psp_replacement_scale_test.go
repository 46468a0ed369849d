// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	pspclient "github.com/turnstile-k8s/turnstile/pkg/client/clientset/versioned"
	"github.com/turnstile-k8s/turnstile/pkg/pspmigration/teams"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// TestPSPReplacementAtScale is the way off PodSecurityPolicy on a
// multi-tenant cluster: the examples and twenty team policies (four
// choosers of six: past the six policies a single one could decide within
// CEL's budget), each usable
// by its team's service account in its namespace, that a restrictive pod
// of any team passes, sorted before the last teams' own. Each pod of
// package teams is created (server dry run) by its team's service account
// and by the ReplicaSet controller, first with PodSecurityPolicy enforcing,
// then with kubectl psp convert's output applied as docs/psp-migration.md
// says and PodSecurityPolicy only warning: the replacement admits the same
// pods, at the same policy (kubernetes.io/psp), with the same security
// contexts, refuses the same, and never runs out of CEL's budget. kubectl
// psp verify finds no avoidable disagreement. Then a team's grant is
// revoked and made again, and an ephemeral container is judged as
// PodSecurityPolicy judges it. TURNSTILE_PSP_TEAMS=50 or 200 runs it with
// that many teams (docs/psp-migration.md has the figures of both); make
// test's twenty keep its e2e tier within the budget.
func TestPSPReplacementAtScale(t *testing.T) {
	t.Parallel() // its own apiserver: see "Running in parallel" in README.md
	n := 20
	if v := os.Getenv("TURNSTILE_PSP_TEAMS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 3 {
			t.Fatalf("TURNSTILE_PSP_TEAMS=%q: want a number of teams, 3 or more", v)
		}
	}
	config, writeMode := pspModeConfig(t, t.TempDir())
	writeMode("enforce")
	s, admin := startServer(t, "psp-scale", "--enable-admission-plugins=PodSecurityPolicy", "--admission-control-config-file="+config)
	ctx := context.Background()
	kubeconfig, kubectl := applyExamplePolicies(t, s)
	createTeams(t, s, admin, n)

	// Who creates pods: each team's service account, and the ReplicaSet
	// controller, as kube-controller-manager does with
	// --use-service-account-credentials.
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-create-pods"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "pods/ephemeralcontainers"}, Verbs: []string{"create", "get", "update", "patch"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-create-pods"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "e2e-create-pods"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:serviceaccounts"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controller := impersonating(t, s, "system:serviceaccount:kube-system:replicaset-controller", "system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")
	creators := func(team teams.Team) map[string]kubernetes.Interface {
		return map[string]kubernetes.Interface{
			"its service account": impersonating(t, s, "system:serviceaccount:"+team.Namespace+":"+team.ServiceAccount,
				"system:serviceaccounts", "system:serviceaccounts:"+team.Namespace, "system:authenticated"),
			"the ReplicaSet controller": controller,
		}
	}
	type outcome struct {
		pod *corev1.Pod
		err error
	}
	decide := func() map[string]outcome {
		out := map[string]outcome{}
		for _, i := range []int{0, 1, 2, n / 2, n - 2, n - 1} {
			team := teams.Of(i, n)
			for who, c := range creators(team) {
				for _, pod := range []*corev1.Pod{teams.RestrictivePod(team), teams.DefaultedPod(team), teams.DataPod(team)} {
					created, err := c.CoreV1().Pods(team.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
					if err != nil && !apierrors.IsForbidden(err) {
						t.Fatalf("%s's %s pod as %s: %v", team.Policy, pod.Name, who, err)
					}
					out[fmt.Sprintf("%s's %s pod as %s", team.Policy, pod.Name, who)] = outcome{created, err}
				}
			}
		}
		return out
	}
	before := decide()
	admitted := 0
	for _, o := range before {
		if o.err == nil {
			admitted++
		}
	}
	if admitted == 0 || admitted == len(before) {
		t.Fatalf("PodSecurityPolicy admitted %d of %d creations: the cases decide nothing", admitted, len(before))
	}

	psp := func(args ...string) (string, string, error) {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(filepath.Join(filepath.Dir(kubectl), "kubectl-psp"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	started := time.Now()
	verified, stderr, err := psp("verify")
	if err != nil {
		t.Fatalf("kubectl psp verify: %v\n%s\n%s", err, lastLines(verified, 20), stderr)
	}
	t.Logf("kubectl psp verify, %d policies, in %v: %s", n+3, time.Since(started).Round(time.Second), lastLines(verified, 1))

	applyReplacement(t, psp, kubectl, kubeconfig)
	// PodSecurityPolicy's switch to warn is a reload of the configuration
	// file: until it is in force, PodSecurityPolicy still decides, and the
	// comparison below would compare it with itself.
	reloaded(t, admin, func() { writeMode("warn") })
	// Compiled and bound once the policy plugins have them all: until
	// then a pod may be decided by part of the replacement.
	var after map[string]outcome
	var differ []string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		after, differ = decide(), nil
		for name, b := range before {
			a := after[name]
			switch {
			case (b.err == nil) != (a.err == nil):
				differ = append(differ, fmt.Sprintf("%s: PodSecurityPolicy %s, replacement %s", name, verdict(b.err), verdict(a.err)))
			case b.err == nil:
				if d := securityDifference(b.pod, a.pod); d != "" {
					differ = append(differ, fmt.Sprintf("%s: %s", name, d))
				}
			}
			if a.err != nil && strings.Contains(a.err.Error(), "budget") {
				t.Fatalf("%s: %v", name, a.err)
			}
		}
		return len(differ) == 0, nil
	})
	if err != nil {
		t.Fatalf("the replacement decides otherwise than PodSecurityPolicy:\n  %s", strings.Join(differ, "\n  "))
	}
	t.Logf("%d policies: %d creations decided alike, %d admitted", n+3, len(before), admitted)

	// Grants are asked at every request: the last team's revoked, then
	// made again.
	last := teams.Of(n-1, n)
	sa := creators(last)["its service account"]
	create := func() error {
		_, err := sa.CoreV1().Pods(last.Namespace).Create(ctx, teams.RestrictivePod(last), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	binding, err := admin.RbacV1().RoleBindings(last.Namespace).Get(ctx, "psp:"+last.Policy, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.RbacV1().RoleBindings(last.Namespace).Delete(ctx, binding.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	policyEventually(t, "the revoked grant refuses", func() (bool, error) { err := create(); return apierrors.IsForbidden(err), err })
	binding.ResourceVersion = ""
	if _, err := admin.RbacV1().RoleBindings(last.Namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	policyEventually(t, "the new grant admits", func() (bool, error) { err := create(); return err == nil, err })

	// kubectl debug: an ephemeral container the team's policy refuses,
	// and one it takes as it is.
	pod, err := sa.CoreV1().Pods(last.Namespace).Create(ctx, teams.RestrictivePod(last), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := pod.Annotations["kubernetes.io/psp"]; got != last.Policy {
		t.Errorf("the pod was admitted by %q, want %s", got, last.Policy)
	}
	debug := func(name string, sc *corev1.SecurityContext) error {
		p, err := sa.CoreV1().Pods(last.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: name, Image: "registry.example/debug:1", SecurityContext: sc}})
		_, err = sa.CoreV1().Pods(last.Namespace).UpdateEphemeralContainers(ctx, pod.Name, p, metav1.UpdateOptions{})
		return err
	}
	// PodSecurityPolicy only warns: the replacement refuses. One attempt,
	// since an admitted container stays in the pod.
	if err := debug("root", &corev1.SecurityContext{Privileged: ptr.To(true)}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "new ephemeral containers") {
		t.Errorf("a privileged ephemeral container: %v, want refused by the replacement", err)
	}
	if err := debug("shell", teams.RestrictivePod(last).Spec.Containers[0].SecurityContext); err != nil {
		t.Errorf("an ephemeral container the team's policy takes as it is: %v", err)
	}
}

// createTeams makes n teams' policies, grants, namespaces and service
// accounts (package teams).
func createTeams(t *testing.T, s *framework.APIServer, admin kubernetes.Interface, n int) {
	t.Helper()
	ctx := context.Background()
	config, err := s.Config("e2e-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	policies := pspclient.NewForConfigOrDie(config).PolicyV1beta1().PodSecurityPolicies()
	for _, p := range teams.Policies(n) {
		if _, err := policies.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		team := teams.Of(i, n)
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team.Namespace}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().ServiceAccounts(team.Namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: team.ServiceAccount}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range teams.RBAC(n) {
		var err error
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			_, err = admin.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = admin.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// applyReplacement runs kubectl psp convert and applies its output with
// the command docs/psp-migration.md gives, and checks that no generated
// object is over a tenth of etcd's request limit.
func applyReplacement(t *testing.T, psp func(...string) (string, string, error), kubectl, kubeconfig string) {
	t.Helper()
	converted, stderr, err := psp("convert")
	if err != nil || stderr != "" {
		t.Fatalf("kubectl psp convert: %v\n%s", err, stderr)
	}
	for _, doc := range strings.Split(converted, "\n---\n") {
		if len(doc) > 1536*1024/10 {
			t.Errorf("a generated object of %d bytes of YAML:\n%s", len(doc), doc[:200])
		}
	}
	apply := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "-f", "-")
	apply.Stdin = strings.NewReader(converted)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply of kubectl psp convert's output: %v\n%s", err, lastLines(string(out), 20))
	}
}

func verdict(err error) string {
	if err == nil {
		return "admits"
	}
	return "refuses: " + err.Error()
}

// securityDifference says how two admitted pods differ in what
// PodSecurityPolicy decides: the policy recorded, and the pod's and
// containers' security contexts.
func securityDifference(want, got *corev1.Pod) string {
	if w, g := want.Annotations["kubernetes.io/psp"], got.Annotations["kubernetes.io/psp"]; w != g {
		return fmt.Sprintf("kubernetes.io/psp %q, want %q", g, w)
	}
	if !apiequality.Semantic.DeepEqual(want.Spec.SecurityContext, got.Spec.SecurityContext) {
		return fmt.Sprintf("pod security context %+v, want %+v", got.Spec.SecurityContext, want.Spec.SecurityContext)
	}
	for i := range want.Spec.Containers {
		if !apiequality.Semantic.DeepEqual(want.Spec.Containers[i].SecurityContext, got.Spec.Containers[i].SecurityContext) {
			return fmt.Sprintf("container %d's security context %+v, want %+v", i, got.Spec.Containers[i].SecurityContext, want.Spec.Containers[i].SecurityContext)
		}
	}
	return ""
}
