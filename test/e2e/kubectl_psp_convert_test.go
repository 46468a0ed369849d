// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestKubectlPSPConvert runs the way off PodSecurityPolicy on a real
// apiserver: kubectl psp verify finds no avoidable disagreement, kubectl
// psp convert's output applies, and with PodSecurityPolicy set to warn the
// replacement decides and sets defaults as PodSecurityPolicy did, while
// PodSecurityPolicy's warnings name what it would have done.
func TestKubectlPSPConvert(t *testing.T) {
	t.Parallel() // its own apiserver: see "Running in parallel" in README.md
	config, writeMode := pspModeConfig(t, t.TempDir())
	writeMode("enforce")
	s, admin := startServer(t, "psp-convert", "--enable-admission-plugins=PodSecurityPolicy", "--admission-control-config-file="+config)
	ctx := context.Background()
	kubeconfig, kubectl := applyExamplePolicies(t, s)
	team, infra := createNamespace(t, admin), createNamespace(t, admin)
	// team: a developer who may create pods, under restricted (the
	// examples grant it to everyone). infra: a host agent whose service
	// account may use privileged.
	// (edit is aggregated by kube-controller-manager, which this test
	// does not run.) dev may create pods in both namespaces.
	for _, ns := range []string{team, infra} {
		grantPods(t, admin, ns, "dev", "create", "get")
	}
	if _, err := admin.CoreV1().ServiceAccounts(infra).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "agent"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(infra).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "psp:privileged"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "agent", Namespace: infra}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	template := func(edit func(*corev1.PodSpec)) corev1.PodTemplateSpec {
		tpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}, Spec: pausePod("", "").Spec}
		if edit != nil {
			edit(&tpl.Spec)
		}
		return tpl
	}
	if _, err := admin.AppsV1().Deployments(team).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: selector, Template: template(nil)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hostAgent := template(func(s *corev1.PodSpec) {
		s.ServiceAccountName, s.HostNetwork = "agent", true
		s.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	})
	if _, err := admin.AppsV1().DaemonSets(infra).Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{Selector: selector, Template: hostAgent}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	psp := func(args ...string) (string, string, error) {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(filepath.Join(filepath.Dir(kubectl), "kubectl-psp"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}

	verified, stderr, err := psp("verify")
	if err != nil {
		t.Fatalf("kubectl psp verify: %v\n%s\n%s", err, verified, stderr)
	}
	last := verified[strings.LastIndex(strings.TrimSpace(verified), "\n")+1:]
	if !strings.Contains(last, "decisions compared") {
		t.Fatalf("kubectl psp verify printed:\n%s", verified)
	}
	t.Logf("kubectl psp verify: %s", strings.TrimSpace(last))

	converted, stderr, err := psp("convert")
	if err != nil || stderr != "" {
		t.Fatalf("kubectl psp convert: %v\n%s", err, stderr)
	}
	apply := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "-f", "-")
	apply.Stdin = strings.NewReader(converted)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply of kubectl psp convert's output: %v\n%s\n---\n%s", err, out, converted)
	}
	for _, ns := range []struct{ name, level string }{{team, "restricted"}, {infra, "privileged"}} {
		got, err := admin.CoreV1().Namespaces().Get(ctx, ns.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l := got.Labels["pod-security.kubernetes.io/enforce"]; l != ns.level {
			t.Errorf("namespace %s: enforce=%q, want %s", ns.name, l, ns.level)
		}
	}

	// PodSecurityPolicy only warns now; the replacement decides.
	writeMode("warn")
	dev, warnings := policyWarnClient(t, s, "dev")
	create := func(c interface {
		Create(context.Context, *corev1.Pod, metav1.CreateOptions) (*corev1.Pod, error)
	}, pod *corev1.Pod) (*corev1.Pod, error, []string) {
		warnings.mu.Lock()
		warnings.warnings = nil
		warnings.mu.Unlock()
		created, err := c.Create(ctx, pod, metav1.CreateOptions{})
		warnings.mu.Lock()
		defer warnings.mu.Unlock()
		var got []string
		for _, w := range warnings.warnings {
			got = append(got, w.text)
		}
		return created, err, got
	}
	privileged := pausePod("", "")
	privileged.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	// infra is labelled privileged, for its agent; dev may still use
	// restricted only, which the ValidatingAdmissionPolicy holds.
	policyEventually(t, "a privileged pod refused by the replacement, not by PodSecurityPolicy", func() (bool, error) {
		p := privileged.DeepCopy()
		p.Name = "privileged-" + utilrand.String(5)
		_, err, _ := create(dev.CoreV1().Pods(infra), p)
		return err != nil && strings.Contains(err.Error(), "no PodSecurityPolicy that dev or service account default may use admits the pod"), err
	})
	var plain *corev1.Pod
	var told []string
	policyEventually(t, "a plain pod admitted with restricted's defaults", func() (bool, error) {
		var err error
		plain, err, told = create(dev.CoreV1().Pods(team), pausePod("plain-"+utilrand.String(5), ""))
		return err == nil, err
	})

	// The defaults restricted gave, set by its MutatingAdmissionPolicy.
	sc, psc := plain.Spec.Containers[0].SecurityContext, plain.Spec.SecurityContext
	if sc == nil || !ptr.Deref(sc.RunAsNonRoot, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" ||
		psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || ptr.Deref(psc.FSGroup, 0) != 1 || len(psc.SupplementalGroups) != 1 {
		t.Errorf("the replacement left the plain pod as: container %+v, pod %+v", sc, psc)
	}
	// PodSecurityPolicy comes before the MutatingAdmissionPolicies in the
	// chain, so it still names the fields that they now set.
	want := `PodSecurityPolicy: policy "restricted" would set spec.containers[0].securityContext.allowPrivilegeEscalation, spec.containers[0].securityContext.capabilities.drop, spec.containers[0].securityContext.runAsNonRoot, spec.securityContext.fsGroup, spec.securityContext.seccompProfile.type, spec.securityContext.supplementalGroups`
	if len(told) != 1 || told[0] != want {
		t.Errorf("warnings %q, want %q", told, want)
	}
	// The host agent, created as the DaemonSet controller creates it.
	controller, _ := policyWarnClient(t, s, "system:serviceaccount:kube-system:daemon-set-controller", "system:serviceaccounts", "system:serviceaccounts:kube-system")
	agent := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent"}, Spec: hostAgent.Spec}
	if _, err := controller.CoreV1().Pods(infra).Create(ctx, agent, metav1.CreateOptions{}); err != nil {
		t.Errorf("the host agent, as its controller creates it: %v", err)
	}
}

// grantPods lets user do verbs on pods in namespace ns: a Role "pods" and
// its RoleBinding "<user>".
func grantPods(t *testing.T, admin kubernetes.Interface, ns, user string, verbs ...string) {
	t.Helper()
	if _, err := admin.RbacV1().Roles(ns).Create(t.Context(), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: verbs}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pods"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
