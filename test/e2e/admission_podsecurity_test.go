// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const (
	psaWarningPrefix = "would violate PodSecurity "
	psaExemptUser    = "e2e-psa-exempt-user" // the exemptions of testdata/policy/admission-config.yaml
	psaExemptRC      = "e2e-psa-exempt-rc"
	psaExemptNS      = "e2e-psa-exempt"
)

// testPolicyPodSecurity checks the three modes set by namespace labels, the
// defaults of testdata/policy/admission-config.yaml for namespaces without
// labels (enforce baseline, audit and warn restricted), and its exemptions
// (a user, a RuntimeClass, a namespace); each through the response, the
// Warning headers and the pod-security.kubernetes.io/* audit annotations.
// On the server without PodSecurity every pod is admitted, unannotated.
func testPolicyPodSecurity(t *testing.T, s *policyServers) {
	ctx := context.Background()
	type clients struct {
		c        kubernetes.Interface
		warnings *policyWarnings
	}
	newClients := func(user string, groups ...string) map[string]clients {
		onC, onW := policyWarnClient(t, s.on, user, groups...)
		offC, offW := policyWarnClient(t, s.off, user, groups...)
		return map[string]clients{"on": {onC, onW}, "off": {offC, offW}}
	}
	users := map[string]map[string]clients{
		"":                   newClients("e2e-admin", "system:masters"),
		psaExemptUser:        newClients(psaExemptUser, policyUsersGroup),
		"e2e-psa-plain-user": newClients("e2e-psa-plain-user", policyUsersGroup),
	}
	admin := users[""]["on"]

	ns := func(enforce, audit, warn string) string {
		return policyNamespace(t, admin.c, map[string]string{
			"pod-security.kubernetes.io/enforce": enforce,
			"pod-security.kubernetes.io/audit":   audit,
			"pod-security.kubernetes.io/warn":    warn,
		})
	}
	nsEnforce := ns("restricted", "privileged", "privileged")
	nsWarn := ns("privileged", "privileged", "baseline")
	nsAudit := ns("privileged", "baseline", "privileged")
	nsDefault := policyNamespace(t, admin.c, nil)
	admin.warnings.take(t, "")
	createNamespaceFrom(t, admin.c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: psaExemptNS, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}})
	want := `namespace "` + psaExemptNS + `" is exempt from Pod Security, and the policy (enforce=restricted:latest) will be ignored`
	if got := admin.warnings.take(t, "namespace "); len(got) != 1 || got[0] != want {
		t.Errorf("creating the exempt namespace: warnings %q, want %q", got, want)
	}
	for _, name := range []string{psaExemptRC, "e2e-psa-plain-rc"} {
		rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: "runc"}
		if _, err := admin.c.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = admin.c.NodeV1().RuntimeClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}

	const (
		violatesRestricted = `violates PodSecurity "restricted:latest": `
		baselinePrivileged = `"baseline:latest": privileged (container "pause" must not set securityContext.privileged=true)`
		violatesBaseline   = "violates PodSecurity " + baselinePrivileged
	)
	cases := []struct {
		name, server, user, ns, pod, runtimeClass string
		denied                                    string // "" admits
		warning                                   string // the PodSecurity warning's prefix; "" expects none
		// pod-security.kubernetes.io/<key> audit annotations: each listed
		// one contains the value, the others are absent.
		audit map[string]string
	}{
		{name: "enforce-admits", server: "on", ns: nsEnforce, pod: "restricted", audit: map[string]string{"enforce-policy": "restricted:latest"}},
		{name: "enforce-baseline", server: "on", ns: nsEnforce, pod: "baseline", denied: violatesRestricted, audit: map[string]string{"enforce-policy": "restricted:latest"}},
		{name: "enforce-privileged", server: "on", ns: nsEnforce, pod: "privileged", denied: violatesRestricted, audit: map[string]string{"enforce-policy": "restricted:latest"}},
		{name: "warn", server: "on", ns: nsWarn, pod: "privileged", warning: psaWarningPrefix + baselinePrivileged, audit: map[string]string{"enforce-policy": "privileged:latest"}},
		{name: "warn-compliant", server: "on", ns: nsWarn, pod: "baseline", audit: map[string]string{"enforce-policy": "privileged:latest"}},
		{name: "audit", server: "on", ns: nsAudit, pod: "privileged", audit: map[string]string{
			"enforce-policy": "privileged:latest", "audit-violations": psaWarningPrefix + baselinePrivileged,
		}},
		{name: "default-enforce", server: "on", ns: nsDefault, pod: "privileged", denied: violatesBaseline, audit: map[string]string{
			"enforce-policy": "baseline:latest", "audit-violations": psaWarningPrefix + `"restricted:latest"`,
		}},
		{name: "default-warn-audit", server: "on", ns: nsDefault, pod: "baseline", warning: psaWarningPrefix + `"restricted:latest": `, audit: map[string]string{
			"enforce-policy": "baseline:latest", "audit-violations": psaWarningPrefix + `"restricted:latest": `,
		}},
		{name: "exempt-user", server: "on", user: psaExemptUser, ns: nsEnforce, pod: "privileged", audit: map[string]string{"exempt": "user"}},
		{name: "plain-user", server: "on", user: "e2e-psa-plain-user", ns: nsEnforce, pod: "privileged", denied: violatesRestricted, audit: map[string]string{"enforce-policy": "restricted:latest"}},
		{name: "exempt-runtimeclass", server: "on", ns: nsEnforce, pod: "privileged", runtimeClass: psaExemptRC, audit: map[string]string{"exempt": "runtimeClass"}},
		{name: "plain-runtimeclass", server: "on", ns: nsEnforce, pod: "privileged", runtimeClass: "e2e-psa-plain-rc", denied: violatesRestricted, audit: map[string]string{"enforce-policy": "restricted:latest"}},
		{name: "exempt-namespace", server: "on", ns: psaExemptNS, pod: "privileged", audit: map[string]string{"exempt": "namespace"}},

		{name: "off-enforce", server: "off", ns: nsEnforce, pod: "privileged"},
		{name: "off-warn", server: "off", ns: nsWarn, pod: "privileged"},
		{name: "off-audit", server: "off", ns: nsAudit, pod: "privileged"},
		{name: "off-default", server: "off", ns: nsDefault, pod: "privileged"},
		{name: "off-plain-user", server: "off", user: "e2e-psa-plain-user", ns: nsEnforce, pod: "privileged"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := users[tc.user][tc.server]
			client.warnings.take(t, "")
			pod := psaPod(tc.name, tc.pod)
			if tc.runtimeClass != "" {
				pod.Spec.RuntimeClassName = ptr.To(tc.runtimeClass)
			}
			_, err := client.c.CoreV1().Pods(tc.ns).Create(ctx, pod, metav1.CreateOptions{})
			switch {
			case tc.denied == "" && err != nil:
				t.Errorf("create: %v, want admitted", err)
			case tc.denied != "" && !(apierrors.IsForbidden(err) && strings.Contains(err.Error(), `pods "`+tc.name+`" is forbidden: `+tc.denied)):
				t.Errorf("create: %v, want 403 %q", err, tc.denied)
			}
			warnings := client.warnings.take(t, psaWarningPrefix)
			if tc.warning == "" && len(warnings) > 0 || tc.warning != "" && (len(warnings) != 1 || !strings.HasPrefix(warnings[0], tc.warning)) {
				t.Errorf("warnings %q, want %q", warnings, tc.warning)
			}
			auditLog := map[string]string{"on": s.onAudit, "off": s.offAudit}[tc.server]
			event := policyAuditEvent(t, auditLog, "create", "pods", tc.ns, tc.name)
			for _, key := range []string{"enforce-policy", "audit-violations", "exempt"} {
				got, ok := event.Annotations["pod-security.kubernetes.io/"+key]
				want, wanted := tc.audit[key]
				if ok != wanted || !strings.Contains(got, want) {
					t.Errorf("audit annotation pod-security.kubernetes.io/%s = %q (present: %v), want %q (present: %v)", key, got, ok, want, wanted)
				}
			}
		})
	}
}

// psaPod is a pause pod that meets the restricted level, only the baseline
// one, or neither (a privileged container).
func psaPod(name, level string) *corev1.Pod {
	pod := pausePod(name, "")
	switch level {
	case "restricted":
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
		pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	case "privileged":
		pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	}
	return pod
}
