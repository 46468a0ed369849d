// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package teams builds a multi-tenant cluster's PodSecurityPolicies: one
// policy per team, usable by its team's service account in its namespace,
// that a restrictive pod of any team passes. The replacement's tests and
// benchmarks run on it at 10, 50 and 200 teams, where a team's pod passes
// the checks of every other team's policy, sorted before its own, that it
// may not use. Only tests and benchmarks import it.
package teams

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	policyv1beta1 "github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
)

// Team is team number i's names: its policy, the namespace its grant is
// in, and its service account, which may use the policy there.
type Team struct {
	Policy, Namespace, ServiceAccount string
}

// Of is team i of n; names sort in team order.
func Of(i, n int) Team {
	name := fmt.Sprintf("team-%0*d", len(fmt.Sprint(n-1)), i)
	return Team{Policy: name, Namespace: name, ServiceAccount: "app"}
}

// Policies are n teams' policies, in three shapes by team number:
//   - web (i%3 == 0) takes a pod only as it is: non-root, no privilege
//     escalation, every capability dropped but NET_BIND_SERVICE, the
//     runtime's seccomp profile;
//   - batch (i%3 == 1) sets defaults: no privilege escalation, capabilities
//     dropped, the runtime's seccomp profile, fsGroup and supplemental
//     groups, non-root;
//   - data (i%3 == 2) is web that also allows host paths under
//     /data/<team>, read-only.
//
// Each allows the common volumes, and user and group IDs from 1 up.
func Policies(n int) []*policyv1beta1.PodSecurityPolicy {
	out := make([]*policyv1beta1.PodSecurityPolicy, n)
	for i := range n {
		team := Of(i, n)
		p := &policyv1beta1.PodSecurityPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: team.Policy, Annotations: map[string]string{
				"seccomp.security.alpha.kubernetes.io/allowedProfileNames": "runtime/default,docker/default",
			}},
			Spec: policyv1beta1.PodSecurityPolicySpec{
				AllowPrivilegeEscalation: ptr.To(false),
				AllowedCapabilities:      []corev1.Capability{"NET_BIND_SERVICE"},
				RequiredDropCapabilities: []corev1.Capability{"ALL"},
				Volumes: []policyv1beta1.FSType{policyv1beta1.ConfigMap, policyv1beta1.Secret, policyv1beta1.EmptyDir,
					policyv1beta1.Projected, policyv1beta1.PersistentVolumeClaim, policyv1beta1.DownwardAPI},
				RunAsUser:          policyv1beta1.RunAsUserStrategyOptions{Rule: policyv1beta1.RunAsUserStrategyMustRunAsNonRoot},
				SELinux:            policyv1beta1.SELinuxStrategyOptions{Rule: policyv1beta1.SELinuxStrategyRunAsAny},
				SupplementalGroups: policyv1beta1.SupplementalGroupsStrategyOptions{Rule: policyv1beta1.SupplementalGroupsStrategyMayRunAs, Ranges: []policyv1beta1.IDRange{{Min: 1, Max: 65535}}},
				FSGroup:            policyv1beta1.FSGroupStrategyOptions{Rule: policyv1beta1.FSGroupStrategyMayRunAs, Ranges: []policyv1beta1.IDRange{{Min: 1, Max: 65535}}},
			},
		}
		switch i % 3 {
		case 1:
			p.Annotations["seccomp.security.alpha.kubernetes.io/defaultProfileName"] = "runtime/default"
			p.Spec.DefaultAllowPrivilegeEscalation = ptr.To(false)
			p.Spec.SupplementalGroups.Rule = policyv1beta1.SupplementalGroupsStrategyMustRunAs
			p.Spec.FSGroup.Rule = policyv1beta1.FSGroupStrategyMustRunAs
		case 2:
			p.Spec.Volumes = append(p.Spec.Volumes, policyv1beta1.HostPath)
			p.Spec.AllowedHostPaths = []policyv1beta1.AllowedHostPath{{PathPrefix: "/data/" + team.Policy, ReadOnly: true}}
		}
		out[i] = p
	}
	return out
}

// RBAC are the grants of n teams: a ClusterRole that may use the team's
// policy, bound in the team's namespace to its service account.
func RBAC(n int) []runtime.Object {
	var out []runtime.Object
	for i := range n {
		team := Of(i, n)
		role := "psp:" + team.Policy
		out = append(out,
			&rbacv1.ClusterRole{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
				ObjectMeta: metav1.ObjectMeta{Name: role},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{"policy"}, Resources: []string{"podsecuritypolicies"},
					Verbs: []string{"use"}, ResourceNames: []string{team.Policy}}},
			},
			&rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: team.Namespace},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: team.ServiceAccount, Namespace: team.Namespace}},
			})
	}
	return out
}

// RestrictivePod is a pod of team that every web and batch policy takes as
// it is: non-root, no privilege escalation, capabilities dropped but
// NET_BIND_SERVICE (which the restricted example refuses), the runtime's
// seccomp profile.
func RestrictivePod(team Team) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "restrictive"},
		Spec: corev1.PodSpec{
			ServiceAccountName: team.ServiceAccount,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](1000),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1", SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}},
			}}},
		},
	}
}

// DefaultedPod is a pod of team that leaves its security context to the
// policy: only the batch policies take it, with their defaults.
func DefaultedPod(team Team) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "defaulted"},
		Spec: corev1.PodSpec{
			ServiceAccountName: team.ServiceAccount,
			SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000)},
			Containers:         []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		},
	}
}

// DataPod is a restrictive pod of team that reads its team's host path:
// only its own policy, if a data one, takes it.
func DataPod(team Team) *corev1.Pod {
	pod := RestrictivePod(team)
	pod.Name = "data"
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/" + team.Policy + "/in"}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/in", ReadOnly: true}}
	return pod
}
