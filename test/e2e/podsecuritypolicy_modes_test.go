// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

// pspModeConfig writes, in dir, an AdmissionConfiguration that gives
// PodSecurityPolicy its configuration file, and returns its path and a
// function that writes the plugin's mode (which the apiserver reloads).
func pspModeConfig(t *testing.T, dir string) (string, func(mode string)) {
	t.Helper()
	config, mode := filepath.Join(dir, "admission.yaml"), filepath.Join(dir, "psp.yaml")
	writeMode := func(m string) {
		t.Helper()
		data := "apiVersion: podsecuritypolicy.admission.turnstile.dev/v1alpha1\nkind: PodSecurityPolicyConfiguration\nmode: " + m + "\n"
		if err := os.WriteFile(mode, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(config, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurityPolicy\n  path: psp.yaml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return config, writeMode
}

// PodSecurityPolicy's modes through the real binary and a reload: in warn
// a privileged pod and a pod that needs the policy's defaults are stored
// as sent, and the client is told, per policy and field, what enforce would
// have refused and set; in audit the same goes to the audit log instead;
// written back to enforce, the privileged pod is refused again.
func TestPodSecurityPolicyModes(t *testing.T) {
	t.Parallel() // its own apiserver: see "Running in parallel" in README.md
	dir := t.TempDir()
	config, writeMode := pspModeConfig(t, dir)
	writeMode("warn")
	auditLog := filepath.Join(dir, "audit.log")
	s, admin := startServer(t, "psp-modes", "--enable-admission-plugins=PodSecurityPolicy", "--admission-control-config-file="+config,
		"--audit-policy-file="+policyTestdata(t, "audit-policy.yaml"), "--audit-log-path="+auditLog)
	ctx := context.Background()

	// The example policies and grants: restricted for every user.
	applyExamplePolicies(t, s)
	ns := createNamespace(t, admin)
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pods"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "e2e-modes"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	user, warnings := policyWarnClient(t, s, "e2e-modes")
	privileged := func(name string) *corev1.Pod {
		p := pausePod(name, "")
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		return p
	}
	// create creates pod as the user and returns the error and the
	// PodSecurityPolicy warnings it got.
	create := func(pod *corev1.Pod) (*corev1.Pod, error, []string) {
		warnings.mu.Lock()
		warnings.warnings = nil
		warnings.mu.Unlock()
		created, err := user.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		warnings.mu.Lock()
		defer warnings.mu.Unlock()
		var got []string
		for _, w := range warnings.warnings {
			if strings.HasPrefix(w.text, "PodSecurityPolicy: ") {
				got = append(got, w.text)
			}
		}
		return created, err, got
	}

	t.Run("warn", func(t *testing.T) {
		var stored *corev1.Pod
		var told []string
		policyEventually(t, "a privileged pod admitted with a warning", func() (bool, error) {
			var err error
			stored, err, told = create(privileged("warned"))
			return err == nil, err
		})
		want := `PodSecurityPolicy: unable to admit pod: policy "restricted": [spec.containers[0].securityContext.privileged: Invalid value: true: Privileged containers are not allowed`
		if len(told) != 1 || !strings.HasPrefix(told[0], want) {
			t.Errorf("warnings %q, want one starting %q", told, want)
		}
		if stored.Annotations[pspAnnotation] != "" || !ptr.Deref(stored.Spec.Containers[0].SecurityContext.Privileged, false) {
			t.Errorf("warn changed the pod: annotations %v, securityContext %+v", stored.Annotations, stored.Spec.Containers[0].SecurityContext)
		}
		stored, err, told := create(pausePod("defaults-told", ""))
		if err != nil {
			t.Fatal(err)
		}
		want = `PodSecurityPolicy: policy "restricted" would set spec.containers[0].securityContext.allowPrivilegeEscalation, spec.containers[0].securityContext.capabilities.drop, spec.containers[0].securityContext.runAsNonRoot, spec.securityContext.fsGroup`
		if len(told) != 1 || !strings.HasPrefix(told[0], want) {
			t.Errorf("warnings %q, want one starting %q", told, want)
		}
		if stored.Annotations[pspAnnotation] != "" || stored.Spec.Containers[0].SecurityContext != nil || stored.Spec.SecurityContext.FSGroup != nil {
			t.Errorf("warn applied defaults: annotations %v, securityContext %+v, pod's %+v", stored.Annotations, stored.Spec.Containers[0].SecurityContext, stored.Spec.SecurityContext)
		}
	})

	t.Run("audit, reloaded", func(t *testing.T) {
		writeMode("audit")
		policyEventually(t, "a privileged pod admitted without a warning", func() (bool, error) {
			_, err, told := create(privileged("audited-" + utilrand.String(5)))
			return err == nil && len(told) == 0, err
		})
		policyEventually(t, "the audit log records what enforce would have refused", func() (bool, error) {
			data, err := os.ReadFile(auditLog)
			for _, line := range strings.Split(string(data), "\n") {
				if strings.Contains(line, `"name":"audited-`) && strings.Contains(line, `"podsecuritypolicy.policy.k8s.io/audit-violations":"unable to admit pod: policy \"restricted\": [spec.containers[0].securityContext.privileged`) {
					return true, nil
				}
			}
			return false, err
		})
	})

	t.Run("enforce, reloaded", func(t *testing.T) {
		writeMode("enforce")
		policyEventually(t, "a privileged pod refused", func() (bool, error) {
			_, err, _ := create(privileged("enforced-" + utilrand.String(5)))
			return err != nil && strings.Contains(err.Error(), pspCannotAdmit), nil
		})
	})
}
