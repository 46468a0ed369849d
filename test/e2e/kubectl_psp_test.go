// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/pspmigration"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// kubectl psp report on a cluster with the example policies and workloads
// of every kind, none of them running (scaled to zero, suspended, or with
// no controller to run them): each workload's level is the one upstream's
// Pod Security Admission gives a pod of it as PodSecurityPolicy admits it.
// The oracle creates that pod as the workload's controller would (the
// controller's service account, impersonated), then asks PSA by a server
// dry run of the namespace's enforce label, as `kubectl label --dry-run=server`
// does, which pods each level would refuse.
func TestKubectlPSPReport(t *testing.T) {
	t.Parallel() // its own apiserver: see "Running in parallel" in README.md
	s, admin := startServer(t, "kubectl-psp", "--enable-admission-plugins=PodSecurityPolicy")
	ctx := context.Background()
	kubeconfig, kubectl := applyExamplePolicies(t, s)
	restricted, baseline, privileged := createNamespace(t, admin), createNamespace(t, admin), createNamespace(t, admin)
	bare := createNamespace(t, admin)
	// baseline for every service account of one namespace; privileged for
	// one service account of another.
	bind := func(ns, name, clusterRole string, subject rbacv1.Subject) {
		t.Helper()
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
			Subjects:   []rbacv1.Subject{subject},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bind(baseline, "psp-baseline", "psp:baseline", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:serviceaccounts:" + baseline})
	if _, err := admin.CoreV1().ServiceAccounts(privileged).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "agent"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind(privileged, "psp-privileged", "psp:privileged", rbacv1.Subject{Kind: "ServiceAccount", Name: "agent", Namespace: privileged})

	spec := func(edit func(*corev1.PodSpec)) corev1.PodTemplateSpec {
		tpl := corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
		}
		if edit != nil {
			edit(&tpl.Spec)
		}
		return tpl
	}
	plain := spec(nil)
	root := spec(func(s *corev1.PodSpec) {
		s.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}
	})
	netAdmin := spec(func(s *corev1.PodSpec) {
		s.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
	})
	hostAgent := spec(func(s *corev1.PodSpec) {
		s.ServiceAccountName, s.HostNetwork = "agent", true
		s.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	})
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	create := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("creating %s: %v", what, err)
		}
	}
	opts := metav1.CreateOptions{}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
	_, err := admin.AppsV1().Deployments(restricted).Create(ctx, &appsv1.Deployment{ObjectMeta: meta("web"), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: selector, Template: plain}}, opts)
	create("deployment", err)
	_, err = admin.BatchV1().CronJobs(restricted).Create(ctx, &batchv1.CronJob{ObjectMeta: meta("nightly"), Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", Suspend: ptr.To(true),
		JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: withRestartNever(plain)}}}}, opts)
	create("cronjob", err)
	_, err = admin.AppsV1().StatefulSets(baseline).Create(ctx, &appsv1.StatefulSet{ObjectMeta: meta("db"), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0), Selector: selector, Template: root}}, opts)
	create("statefulset", err)
	_, err = admin.BatchV1().Jobs(baseline).Create(ctx, &batchv1.Job{ObjectMeta: meta("migrate"), Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: withRestartNever(plain)}}, opts)
	create("job", err)
	_, err = admin.AppsV1().ReplicaSets(baseline).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: meta("cache"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: selector, Template: netAdmin}}, opts)
	create("replicaset", err)
	_, err = admin.AppsV1().DaemonSets(privileged).Create(ctx, &appsv1.DaemonSet{ObjectMeta: meta("agent"), Spec: appsv1.DaemonSetSpec{Selector: selector, Template: hostAgent}}, opts)
	create("daemonset", err)
	_, err = admin.CoreV1().ReplicationControllers(privileged).Create(ctx, &corev1.ReplicationController{ObjectMeta: meta("legacy"), Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](0), Selector: map[string]string{"app": "x"}, Template: &plain}}, opts)
	create("replicationcontroller", err)
	// A pod an admin created with the host's PID namespace: privileged
	// admitted it; only its service account's grants count now.
	debug := &corev1.Pod{ObjectMeta: meta("debug"), Spec: spec(func(s *corev1.PodSpec) { s.HostPID = true }).Spec}
	_, err = admin.CoreV1().Pods(bare).Create(ctx, debug, opts)
	create("pod", err)

	var stderr strings.Builder
	cmd := exec.Command(filepath.Join(filepath.Dir(kubectl), "kubectl-psp"), "--kubeconfig", kubeconfig, "report", "-o", "json")
	cmd.Stderr = &stderr
	reportJSON, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("kubectl psp report: %v\n%s\nstderr: %s", err, reportJSON, stderr.String())
	}
	var report pspmigration.Report
	if err := json.Unmarshal(reportJSON, &report); err != nil {
		t.Fatalf("kubectl psp report -o json: %v\n%s", err, reportJSON)
	}
	entries := map[string]pspmigration.Entry{}
	for _, e := range report.Workloads {
		entries[e.Kind+"/"+e.Namespace+"/"+e.Name] = e
	}

	cases := []struct {
		kind, namespace, name string
		template              corev1.PodTemplateSpec
		controller            string // its pods' creator; "" for the pod itself
	}{
		{"Deployment", restricted, "web", plain, "replicaset-controller"},
		{"CronJob", restricted, "nightly", withRestartNever(plain), "job-controller"},
		{"StatefulSet", baseline, "db", root, "statefulset-controller"},
		{"Job", baseline, "migrate", withRestartNever(plain), "job-controller"},
		{"ReplicaSet", baseline, "cache", netAdmin, "replicaset-controller"},
		{"DaemonSet", privileged, "agent", hostAgent, "daemon-set-controller"},
		{"ReplicationController", privileged, "legacy", plain, "replication-controller"},
		{"Pod", bare, "debug", corev1.PodTemplateSpec{}, ""},
	}
	lowest := map[string]string{}
	for _, tc := range cases {
		ref := tc.kind + "/" + tc.namespace + "/" + tc.name
		t.Run(tc.kind, func(t *testing.T) {
			e, ok := entries[ref]
			if !ok {
				t.Fatalf("the report has no %s:\n%s", ref, reportJSON)
			}
			podName := "debug"
			if tc.controller != "" {
				// The pod the controller would create, as it would.
				podName = "oracle-" + strings.ToLower(tc.kind)
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName}, Spec: tc.template.Spec}
				creator := impersonating(t, s, "system:serviceaccount:kube-system:"+tc.controller, "system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")
				created, err := creator.CoreV1().Pods(tc.namespace).Create(ctx, pod, metav1.CreateOptions{})
				if err != nil {
					if e.Policy != "" || e.Refusal == "" || !strings.Contains(err.Error(), e.Refusal) {
						t.Errorf("the controller's pod was refused (%v); the report says policy %q, refusal %q", err, e.Policy, e.Refusal)
					}
					return // refused now: the namespace's label need not admit it
				}
				defer func() { _ = admin.CoreV1().Pods(tc.namespace).Delete(ctx, podName, metav1.DeleteOptions{}) }()
				if got := created.Annotations["kubernetes.io/psp"]; got != e.Policy {
					t.Errorf("PodSecurityPolicy admitted the controller's pod under %q; the report says %q", got, e.Policy)
				}
			} else if e.Admitted == nil || e.Admitted[0] != "privileged" || e.Policy != "" || e.Refusal == "" {
				t.Errorf("pod debug: admitted %v, policy now %q (%s); want admitted by privileged, refused now", e.Admitted, e.Policy, e.Refusal)
			}
			level := psaLevel(t, s, tc.namespace, podName)
			if string(e.Level) != level {
				t.Errorf("the report gives level %s; Pod Security Admission refuses the pod at every level stricter than %s (violations: %v)", e.Level, level, e.Violations)
			}
			if e.Refusal != "" {
				return // refused now: the namespace's label need not admit it
			}
			if lowest[tc.namespace] == "" || rankOf(level) < rankOf(lowest[tc.namespace]) {
				lowest[tc.namespace] = level
			}
		})
	}
	for _, ns := range report.Namespaces {
		if want, ok := lowest[ns.Name]; ok && string(ns.Enforce) != want {
			t.Errorf("namespace %s: the report says enforce=%s admits everything; by Pod Security Admission it is %s", ns.Name, ns.Enforce, want)
		}
	}
	if t.Failed() {
		t.Logf("kubectl psp report -o json:\n%s", reportJSON)
	}
	table, err := exec.Command(filepath.Join(filepath.Dir(kubectl), "kubectl-psp"), "--kubeconfig", kubeconfig, "report").CombinedOutput()
	if err != nil || !strings.Contains(string(table), "namespace "+restricted+": pod-security.kubernetes.io/enforce=restricted admits the 2 of 2 workload(s) PodSecurityPolicy admits") {
		t.Errorf("kubectl psp report: %v\n%s", err, table)
	}
	t.Logf("kubectl psp report:\n%s", table)
}

func withRestartNever(tpl corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	tpl = *tpl.DeepCopy()
	tpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	return tpl
}

// impersonating is a system:masters client acting as user in groups.
func impersonating(t *testing.T, s *framework.APIServer, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	config, err := s.Config("e2e-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	config.Impersonate.UserName, config.Impersonate.Groups = user, groups
	return kubernetes.NewForConfigOrDie(config)
}

// psaLevel is the strictest Pod Security Standards level whose enforce
// label, tried on the namespace by a server dry run, draws no warning
// about pod.
func psaLevel(t *testing.T, s *framework.APIServer, namespace, pod string) string {
	t.Helper()
	c, warnings := policyWarnClient(t, s, "e2e-admin", "system:masters")
	level := "privileged"
	for _, l := range []string{"baseline", "restricted"} {
		warnings.reset()
		patch := fmt.Sprintf(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":%q}}}`, l)
		if _, err := c.CoreV1().Namespaces().Patch(context.Background(), namespace, types.MergePatchType, []byte(patch), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatal(err)
		}
		if warnings.mention(pod) {
			break
		}
		level = l
	}
	return level
}

func rankOf(level string) int {
	return map[string]int{"privileged": 0, "baseline": 1, "restricted": 2}[level]
}

func (w *policyWarnings) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = nil
}

// mention reports whether a warning names pod, as Pod Security Admission
// names the pods a level would refuse ("pod: reasons", "pod (and 2 other
// pods): reasons").
func (w *policyWarnings) mention(pod string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, warning := range w.warnings {
		if strings.HasPrefix(warning.text, pod+":") || strings.HasPrefix(warning.text, pod+" (and") {
			return true
		}
	}
	return false
}

// applyExamplePolicies applies examples/podsecuritypolicy to s as an admin
// with kubectl, and returns the admin's kubeconfig and kubectl's path.
func applyExamplePolicies(t *testing.T, s *framework.APIServer) (kubeconfig, kubectl string) {
	t.Helper()
	kubeconfig = filepath.Join(t.TempDir(), "admin.conf")
	if err := s.WriteKubeconfig(kubeconfig, "e2e-admin", "system:masters"); err != nil {
		t.Fatal(err)
	}
	kubectl, err := framework.Binary("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "-f", "../../examples/podsecuritypolicy/").CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	return kubeconfig, kubectl
}
