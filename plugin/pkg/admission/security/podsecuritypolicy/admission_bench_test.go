// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"context"
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/lineapi"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/psptesting"
	"github.com/turnstile-k8s/turnstile/test/fixtures"
)

// The benchmark cluster has one namespace per team, team-000 to
// team-<n-1>. Each team has a restricted-style policy of its own, with its
// own UID range, that its service account "app" may use through a
// RoleBinding in the team's namespace; each team's admins group may use it
// everywhere through a ClusterRoleBinding. The pod is created by the
// ReplicaSet controller, which may use no policy, for the last team by
// name: every other policy is tried first and refuses it.
func benchCluster(b *testing.B, n int) (*Plugin, *api.Pod, user.Info) {
	b.Helper()
	var grants []interface{}
	p := NewPlugin()
	for i := range n {
		team := fmt.Sprintf("team-%03d", i)
		p.engine.Set(psptesting.TeamPolicy(team, int64(10000+1000*i)))
		grants = append(grants, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "psp:" + team},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{"policy"}, Resources: []string{"podsecuritypolicies"}, Verbs: []string{"use"}, ResourceNames: []string{team},
			}},
		})
		role := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "psp:" + team}
		grants = append(grants, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "psp:" + team, Namespace: team},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "app", Namespace: team}},
			RoleRef:    role,
		}, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "psp:" + team + ":admins"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: team + ":admins"}},
			RoleRef:    role,
		})
	}
	p.SetAuthorizer(psptesting.RBACAuthorizer(b, grants...))
	last := fmt.Sprintf("team-%03d", n-1)
	controller := &user.DefaultInfo{Name: "system:serviceaccount:kube-system:replicaset-controller", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
	return p, benchPod(last, int64(10000+1000*(n-1))), controller
}

// benchPod is a Deployment's pod as it reaches the plugin: one container,
// the service account token volume, and a security context that the
// team's policy accepts as it is.
func benchPod(namespace string, uid int64) *api.Pod {
	return &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7887448d46-85tzk", Namespace: namespace, Labels: map[string]string{"app": "web"}},
		Spec: api.PodSpec{
			ServiceAccountName: "app",
			SecurityContext: &api.PodSecurityContext{
				RunAsUser: ptr.To(uid), FSGroup: ptr.To(uid), RunAsNonRoot: ptr.To(true),
				SeccompProfile: &api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []api.Container{{
				Name: "web", Image: "registry.example/web:1.0",
				Ports:        []api.ContainerPort{{ContainerPort: 8080, Protocol: api.ProtocolTCP}},
				VolumeMounts: []api.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
				SecurityContext: &api.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &api.Capabilities{Drop: []api.Capability{"ALL"}},
				},
			}},
			Volumes: []api.Volume{{Name: "kube-api-access", VolumeSource: api.VolumeSource{Projected: &api.ProjectedVolumeSource{Sources: []api.VolumeProjection{
				{ServiceAccountToken: lineapi.ServiceAccountTokenProjection("token", 3607)},
				{ConfigMap: &api.ConfigMapProjection{LocalObjectReference: api.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []api.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &api.DownwardAPIProjection{Items: []api.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &api.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
			}}}}},
		},
	}
}

// BenchmarkAdmit, BenchmarkValidate and BenchmarkCreate measure the
// plugin's two phases for one pod creation, alone and together (the
// apiserver runs Validate on Admit's result).
func BenchmarkAdmit(b *testing.B)    { benchPhases(b, true, false) }
func BenchmarkValidate(b *testing.B) { benchPhases(b, false, true) }
func BenchmarkCreate(b *testing.B)   { benchPhases(b, true, true) }

func benchPhases(b *testing.B, admit, validate bool) {
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			p, pod, requester := benchCluster(b, n)
			ctx := context.Background()
			a := admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("version"), pod.Namespace, pod.Name,
				api.Resource("pods").WithVersion("version"), "", admission.Create, &metav1.CreateOptions{}, false, requester)
			if !admit { // Validate sees the pod as Admit left it.
				must(b, p.Admit(ctx, a, nil))
			}
			b.ReportAllocs()
			for b.Loop() {
				if admit {
					delete(pod.Annotations, podsecuritypolicy.ValidatedPSPAnnotation)
					must(b, p.Admit(ctx, a, nil))
				}
				if validate {
					must(b, p.Validate(ctx, a, nil))
				}
			}
		})
	}
}

// BenchmarkAdmitHarderCases are the team cluster with 100 policies and
// pods that cost more: one that every policy accepts unchanged but only the
// last one's grant covers (the authorizer is asked for each policy, four
// times: two identities, two API groups), and one without user, groups or
// seccomp profile, which only policies that default them accept (each
// policy is tried on a copy).
func BenchmarkAdmitHarderCases(b *testing.B) {
	cases := map[string]func(p *Plugin, pod *api.Pod){
		"every-policy-accepts-last-granted": func(p *Plugin, pod *api.Pod) {
			for _, name := range p.engine.Policies() {
				psp := psptesting.TeamPolicy(name, 10000)
				psp.Spec.RunAsUser.Ranges[0].Max = 1 << 30
				psp.Spec.FSGroup.Ranges[0].Max = 1 << 30
				p.engine.Set(psp)
			}
		},
		"mutated-by-last": func(p *Plugin, pod *api.Pod) {
			pod.Spec.SecurityContext = nil
		},
	}
	for name, setup := range cases {
		b.Run(name, func(b *testing.B) {
			p, pod, requester := benchCluster(b, 100)
			setup(p, pod)
			ctx := context.Background()
			a := admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("version"), pod.Namespace, pod.Name,
				api.Resource("pods").WithVersion("version"), "", admission.Create, &metav1.CreateOptions{}, false, requester)
			original := pod.DeepCopy()
			b.ReportAllocs()
			for b.Loop() {
				*pod = *original.DeepCopy()
				must(b, p.Admit(ctx, a, nil))
			}
			if got := pod.Annotations[podsecuritypolicy.ValidatedPSPAnnotation]; got != "team-099" {
				b.Fatalf("admitted by %q, want team-099", got)
			}
		})
	}
}

// BenchmarkCreateAsAdmin is a pod create of make bench's pod load (its
// figures are in docs/performance.md): the requester may use every policy
// (a system:masters user; RBAC lists its rules as a wildcard), and every
// policy but the last by name would change the pod, so each is asked
// whether it would before the last admits the pod as it is. The cost is
// the order v1.24 defined, not authorization.
func BenchmarkCreateAsAdmin(b *testing.B) {
	for _, n := range []int{10, 43, 100} {
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			p, a := adminCreate(b, n, benchPod("bench", 0))
			b.ReportAllocs()
			for b.Loop() {
				createAsAdmin(b, p, a)
			}
		})
	}
}

// A pod create of BenchmarkCreateAsAdmin, with make bench's pod (an init
// container and three containers: test/fixtures), allocates nothing: the
// Subject and the requester stay on the stack (see Subject). A count, not
// a time, so it holds on any machine.
func TestCreateAsAdminAllocatesNothing(t *testing.T) {
	pod := &api.Pod{}
	if err := corev1conversion.Convert_v1_Pod_To_core_Pod(fixtures.Pod("bench", "bench"), pod, nil); err != nil {
		t.Fatal(err)
	}
	p, a := adminCreate(t, 10, pod)
	if allocs := testing.AllocsPerRun(100, func() { createAsAdmin(t, p, a) }); allocs != 0 {
		t.Errorf("a pod create allocates %v objects in the plugin, want 0", allocs)
	}
}

// adminCreate is a plugin with n policies, of which only the last by name
// admits pod unchanged, and the create of pod by a system:masters user.
func adminCreate(tb testing.TB, n int, pod *api.Pod) (*Plugin, admission.Attributes) {
	p := NewPlugin()
	for i := range n - 1 {
		p.engine.Set(psptesting.TeamPolicy(fmt.Sprintf("team-%03d", i), int64(10000+1000*i)))
	}
	p.engine.Set(privilegedPolicy("zz-privileged"))
	p.SetAuthorizer(psptesting.RBACAuthorizer(tb,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"},
		}}},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: user.SystemPrivilegedGroup}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		}))
	admin := &user.DefaultInfo{Name: "bench", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
	pod.Spec.SecurityContext = nil
	a := admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("version"), pod.Namespace, pod.Name,
		api.Resource("pods").WithVersion("version"), "", admission.Create, &metav1.CreateOptions{}, false, admin)
	return p, a
}

// createAsAdmin admits and validates adminCreate's pod, again.
func createAsAdmin(tb testing.TB, p *Plugin, a admission.Attributes) {
	pod := a.GetObject().(*api.Pod)
	delete(pod.Annotations, podsecuritypolicy.ValidatedPSPAnnotation)
	ctx := context.Background()
	must(tb, p.Admit(ctx, a, nil))
	must(tb, p.Validate(ctx, a, nil))
	if got := pod.Annotations[podsecuritypolicy.ValidatedPSPAnnotation]; got != "zz-privileged" {
		tb.Fatalf("admitted by %q, want zz-privileged", got)
	}
}

// privilegedPolicy allows everything and defaults nothing, as the
// documentation's privileged example.
func privilegedPolicy(name string) *policy.PodSecurityPolicy {
	return &policy.PodSecurityPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{policy.SeccompAllowedProfilesAnnotationKey: policy.SeccompAllowAny}},
		Spec: policy.PodSecurityPolicySpec{
			Privileged:               true,
			AllowPrivilegeEscalation: ptr.To(true),
			AllowedCapabilities:      []api.Capability{policy.AllowAllCapabilities},
			Volumes:                  []policy.FSType{policy.All},
			HostNetwork:              true,
			HostPorts:                []policy.HostPortRange{{Min: 0, Max: 65535}},
			HostIPC:                  true,
			HostPID:                  true,
			RunAsUser:                policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyRunAsAny},
			SELinux:                  policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyRunAsAny},
			SupplementalGroups:       policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyRunAsAny},
			FSGroup:                  policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyRunAsAny},
		},
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
