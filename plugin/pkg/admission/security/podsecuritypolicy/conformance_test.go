// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

// The 48 v1.24 decision cases (docs/podsecuritypolicy.md, "What it does"), each test named
// "case N ...". Pods go through Admit and then Validate on Admit's output,
// with the same attributes, behind admission.WithAudit; updates through
// Validate. Cases about one strategy in isolation (35, 38's level
// comparison, 44, 45) call the strategy or the provider. Where the v1.36
// port deliberately differs (spec 4.8), the expectation is the port's and
// the comment says so.

import (
	"context"
	"strings"
	"testing"

	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/errs"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/lineapi"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/hostpath"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/psptesting"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/selinux"
)

var (
	restrictive = psptesting.Restrictive
	permissive  = psptesting.Permissive
	goodPod     = psptesting.GoodPod
)

// psp returns a copy of base named name, changed by edit (may be nil).
func psp(base func() *policy.PodSecurityPolicy, name string, edit func(*policy.PodSecurityPolicySpec)) *policy.PodSecurityPolicy {
	p := psptesting.Named(base(), name)
	if edit != nil {
		edit(&p.Spec)
	}
	return p
}

// annotated adds annotations to a policy.
func annotated(p *policy.PodSecurityPolicy, kv ...string) *policy.PodSecurityPolicy {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	for i := 0; i < len(kv); i += 2 {
		p.Annotations[kv[i]] = kv[i+1]
	}
	return p
}

func psps(p ...*policy.PodSecurityPolicy) []*policy.PodSecurityPolicy { return p }

// podWith returns goodPod changed by edit.
func podWith(edit func(*api.Pod)) *api.Pod {
	p := goodPod()
	edit(p)
	return p
}

// c0 is the security context of the pod's first container.
func c0(p *api.Pod) *api.SecurityContext { return p.Spec.Containers[0].SecurityContext }

// psc is the pod's security context, allocated if needed.
func psc(p *api.Pod) *api.PodSecurityContext {
	if p.Spec.SecurityContext == nil {
		p.Spec.SecurityContext = &api.PodSecurityContext{}
	}
	return p.Spec.SecurityContext
}

// csc is a container's security context, allocated if needed.
func csc(c *api.Container) *api.SecurityContext {
	if c.SecurityContext == nil {
		c.SecurityContext = &api.SecurityContext{}
	}
	return c.SecurityContext
}

// allContainers visits init, regular and ephemeral containers.
func allContainers(p *api.Pod, f func(*api.Container)) {
	for i := range p.Spec.InitContainers {
		f(&p.Spec.InitContainers[i])
	}
	for i := range p.Spec.Containers {
		f(&p.Spec.Containers[i])
	}
	for i := range p.Spec.EphemeralContainers {
		f((*api.Container)(&p.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
}

// toInit moves the pod's containers to its init containers.
func toInit(p *api.Pod) *api.Pod {
	p.Spec.InitContainers, p.Spec.Containers = p.Spec.Containers, nil
	return p
}

// toEphemeral moves the pod's containers to its ephemeral containers.
func toEphemeral(p *api.Pod) *api.Pod {
	for _, c := range p.Spec.Containers {
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, api.EphemeralContainer{EphemeralContainerCommon: api.EphemeralContainerCommon(c)})
	}
	p.Spec.Containers = nil
	return p
}

// restrictiveDefaults sets what the restrictive fixture gives a pod that
// sets none of its fields: supplemental groups, fsGroup and SELinux level
// on the pod, UID, GID and no privilege escalation on every container.
func restrictiveDefaults(p *api.Pod) {
	sc := psc(p)
	sc.SupplementalGroups = []int64{999}
	sc.FSGroup = ptr.To[int64](999)
	sc.SELinuxOptions = &api.SELinuxOptions{Level: "s9:z0,z1"}
	allContainers(p, func(c *api.Container) {
		s := csc(c)
		s.RunAsUser = ptr.To[int64](999)
		s.RunAsGroup = ptr.To[int64](999)
		s.AllowPrivilegeEscalation = ptr.To(false)
	})
}

func runCreates(t *testing.T, cases []createCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.title(), c.run)
	}
}

func runUpdates(t *testing.T, cases []updateCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(caseName(c.spec, c.name), c.run)
	}
}

// simplePod is upstream's unprivileged pod: a service account and one
// container with an image, no security contexts.
func simplePod() *api.Pod {
	return &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "namespace"},
		Spec: api.PodSpec{
			ServiceAccountName: "default",
			Containers:         []api.Container{{Name: "mycontainer", Image: "myimage"}},
		},
	}
}

// defaultedPod is simplePod as the apiserver hands it to admission: the v1
// object with its defaults, converted to the internal type.
func defaultedPod(t *testing.T) *api.Pod {
	t.Helper()
	v1pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "namespace"},
		Spec: corev1.PodSpec{
			ServiceAccountName: "default",
			Containers:         []corev1.Container{{Name: "mycontainer", Image: "myimage"}},
		},
	}
	legacyscheme.Scheme.Default(v1pod)
	pod := &api.Pod{}
	if err := legacyscheme.Scheme.Convert(v1pod, pod, nil); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.SecurityContext == nil || pod.Spec.Containers[0].TerminationMessagePath == "" {
		t.Fatalf("pod not defaulted: %+v", pod.Spec)
	}
	return pod
}

func mustRunAsUser(uid int64) func(*policy.PodSecurityPolicySpec) {
	return func(s *policy.PodSecurityPolicySpec) {
		s.RunAsUser = policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAs, Ranges: []policy.IDRange{{Min: uid, Max: uid}}}
	}
}

// TestConformanceSelection covers cases 1-20: selection, authorization and
// the request life cycle.
func TestConformanceSelection(t *testing.T) {
	mutating1 := psp(permissive, "mutating1", mustRunAsUser(1))
	mutating2 := psp(permissive, "mutating2", mustRunAsUser(2))
	privileged := permissive()

	t.Run("case 1 no policies", func(t *testing.T) {
		p := newTestPlugin(nil)
		pod := goodPod()
		r := newRequest(t, admission.Create, pod, nil, pod.Namespace, "", testUser)
		wantForbidden(t, "Admit", r.admit(p), "PodSecurityPolicy: no providers available to validate pod request")
		wantForbidden(t, "Validate", r.validate(p), "PodSecurityPolicy: no providers available to validate pod request")
		r.wantAudit(t, "", "")
	})

	t.Run("case 2 versioned pod", func(t *testing.T) {
		p := newTestPlugin(nil, privileged)
		obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "namespace"}}
		r := newRequest(t, admission.Create, obj, nil, "namespace", "", testUser)
		wantForbidden(t, "Admit", r.admit(p), "unexpected type *v1.Pod")
		wantForbidden(t, "Validate", r.validate(p), "unexpected type *v1.Pod")
		r.wantAudit(t, "", "")

		old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "namespace", Labels: map[string]string{"old": "true"}}}
		r = newRequest(t, admission.Update, obj, old, "namespace", "", testUser)
		wantForbidden(t, "Validate of an update", r.validate(p), "unexpected type *v1.Pod")
		r.wantAudit(t, "", "")
	})

	runCreates(t, []createCase{
		{spec: 3, name: "defaulted pod, privileged policy", psps: psps(privileged), pod: defaultedPod(t), wantPSP: "privileged"},
		{spec: 3, name: "plain pod, privileged policy", psps: psps(privileged), pod: simplePod(), wantPSP: "privileged"},
		{
			spec: 4, name: "non-mutating policy preferred", psps: psps(mutating2, mutating1, privileged),
			pod: simplePod(), wantPSP: "privileged",
		},
		{
			spec: 5, name: "first mutating policy by name", psps: psps(mutating2, mutating1),
			pod: simplePod(), wantPSP: "mutating1",
			want: func(p *api.Pod) {
				p.Spec.Containers[0].SecurityContext = &api.SecurityContext{RunAsUser: ptr.To[int64](1)}
			},
		},
		{
			spec: 6, name: "annotation ignored on create and overwritten", psps: psps(mutating2, mutating1),
			pod: func() *api.Pod {
				p := simplePod()
				p.Annotations = map[string]string{podsecuritypolicy.ValidatedPSPAnnotation: "mutating2"}
				return p
			}(),
			wantPSP: "mutating1",
			want: func(p *api.Pod) {
				p.Spec.Containers[0].SecurityContext = &api.SecurityContext{RunAsUser: ptr.To[int64](1)}
			},
		},
	})

	admittedByPrivileged := simplePod()
	admittedByPrivileged.Annotations = map[string]string{podsecuritypolicy.ValidatedPSPAnnotation: "privileged"}
	imageChanged := admittedByPrivileged.DeepCopy()
	imageChanged.Spec.Containers[0].Image = "myimage2"
	gcOnly := admittedByPrivileged.DeepCopy()
	gcOnly.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ReplicaSet", Name: "rs", UID: "1"}}
	gcOnly.Finalizers = []string{"foo.com/bar"}
	labelChanged := gcOnly.DeepCopy()
	labelChanged.Labels = map[string]string{"a": "b"}
	runUpdates(t, []updateCase{
		{
			spec: 7, name: "update prefers the non-mutating policy", psps: psps(mutating2, mutating1, privileged),
			old: admittedByPrivileged, pod: imageChanged, wantPSP: "privileged",
		},
		{
			spec: 8, name: "update with only mutating policies refused", psps: psps(mutating2, mutating1),
			old: admittedByPrivileged, pod: imageChanged, wantErrs: []string{"unable to validate pod: []"},
		},
		{
			spec: 9, name: "unchanged update ignored", psps: psps(mutating2, mutating1),
			old: admittedByPrivileged, pod: admittedByPrivileged, ignored: true,
		},
		{
			spec: 10, name: "update of ownerReferences and finalizers ignored", psps: psps(mutating2, mutating1),
			old: admittedByPrivileged, pod: gcOnly, ignored: true,
		},
		{
			spec: 10, name: "contrast: a label change is judged", psps: psps(mutating2, mutating1),
			old: admittedByPrivileged, pod: labelChanged, wantErrs: []string{"unable to validate pod: []"},
		},
	})

	// Cases 11-17: who may use which policy. The pod is in namespace test
	// with service account sa; the user is "user".
	saName := "system:serviceaccount:test:sa"
	authzPod := func(sa string) *api.Pod {
		p := goodPod()
		p.Namespace = "test"
		p.Spec.ServiceAccountName = sa
		return p
	}
	userInfo := &user.DefaultInfo{Name: "user"}
	named := func(names ...string) []*policy.PodSecurityPolicy {
		var out []*policy.PodSecurityPolicy
		for _, n := range names {
			out = append(out, psp(permissive, n, nil))
		}
		return out
	}
	multiGrants := &fakeAuthorizer{grants: []grant{
		{user: saName, namespace: "test", group: "policy", policy: "policy1"},
		{user: saName, policy: "policy4"},
		{user: saName, namespace: "other", policy: "policy6"},
		{user: "user", namespace: "test", policy: "policy2"},
		{user: "user", policy: "policy5"},
		{user: "user", namespace: "other", policy: "policy7"},
	}}
	multiPolicies := named("a_policy1", "a_policy2", "policy2", "policy3", "policy4", "policy5", "policy6")
	splitGrants := func(saPolicy, userPolicy string) *fakeAuthorizer {
		return &fakeAuthorizer{grants: []grant{
			{user: saName, namespace: "test", policy: saPolicy},
			// Identities a plugin might wrongly make up for a pod without
			// a service account.
			{user: "system:serviceaccount:test:", namespace: "test", policy: saPolicy},
			{user: "system:serviceaccount:test:default", namespace: "test", policy: saPolicy},
			{user: "user", namespace: "test", policy: userPolicy},
		}}
	}
	runCreates(t, []createCase{
		{
			spec: 11, name: "user granted in group policy", psps: named("policy"), pod: authzPod("sa"), user: userInfo,
			authz: &fakeAuthorizer{grants: []grant{{user: "user", namespace: "test", group: "policy", policy: "policy"}}}, wantPSP: "policy",
		},
		{
			spec: 11, name: "user granted in group extensions", psps: named("policy"), pod: authzPod("sa"), user: userInfo,
			authz: &fakeAuthorizer{grants: []grant{{user: "user", namespace: "test", group: "extensions", policy: "policy"}}}, wantPSP: "policy",
		},
		{
			spec: 11, name: "contrast: user granted in another namespace", psps: named("policy"), pod: authzPod("sa"), user: userInfo,
			authz: &fakeAuthorizer{grants: []grant{{user: "user", namespace: "other", policy: "policy"}}}, wantErrs: []string{"pod: []"},
		},
		{
			spec: 12, name: "service account granted in group policy", psps: named("policy"), pod: authzPod("sa"), user: userInfo,
			authz: &fakeAuthorizer{grants: []grant{{user: saName, namespace: "test", group: "policy", policy: "policy"}}}, wantPSP: "policy",
		},
		{
			spec: 12, name: "service account granted in group extensions", psps: named("policy"), pod: authzPod("sa"), user: userInfo,
			authz: &fakeAuthorizer{grants: []grant{{user: saName, namespace: "test", group: "extensions", policy: "policy"}}}, wantPSP: "policy",
		},
		{
			spec: 13, name: "nobody granted", psps: named("policy"), pod: authzPod("sa"), user: userInfo,
			authz: &fakeAuthorizer{}, wantErrs: []string{"pod: []"},
		},
		{
			spec: 14, name: "multiple grants", psps: multiPolicies, pod: authzPod("sa"), user: userInfo,
			authz: multiGrants, wantPSP: "policy2",
		},
		{
			spec: 14, name: "multiple grants, namespace other", psps: multiPolicies, user: userInfo,
			pod:   func() *api.Pod { p := authzPod("sa"); p.Namespace = "other"; return p }(),
			authz: &fakeAuthorizer{grants: append([]grant{{user: "system:serviceaccount:other:sa", policy: "policy4"}}, multiGrants.grants...)}, wantPSP: "policy4",
		},
		{
			spec: 15, name: "no user, service account granted", psps: named("policy1", "policy2"), pod: authzPod("sa"), noUser: true,
			authz: splitGrants("policy1", "policy2"), wantPSP: "policy1",
		},
		{
			spec: 15, name: "no user, service account's policy sorts last", psps: named("policy1", "policy2"), pod: authzPod("sa"), noUser: true,
			authz: splitGrants("policy2", "policy1"), wantPSP: "policy2",
		},
		{
			spec: 16, name: "no service account, user granted", psps: named("policy1", "policy2"), pod: authzPod(""), user: userInfo,
			authz: splitGrants("policy1", "policy2"), wantPSP: "policy2",
		},
		{
			spec: 17, name: "no user and no service account", psps: named("policy1", "policy2"), pod: authzPod(""), noUser: true,
			authz: splitGrants("policy1", "policy2"), wantErrs: []string{"pod: []"},
		},
	})

	t.Run("case 18 errors only from policies the requester may use", func(t *testing.T) {
		policies := psps(psp(restrictive, "policy1", nil), psp(restrictive, "policy2", nil))
		for _, tc := range []struct {
			name   string
			grants []grant
			want   int
		}{
			{"nobody authorized", nil, 0},
			{"user authorized for one", []grant{{user: "user", namespace: "test", policy: "policy1"}}, 1},
			{"service account authorized for the other", []grant{{user: saName, namespace: "test", policy: "policy2"}}, 1},
			{"both", []grant{{user: "user", namespace: "test", policy: "policy1"}, {user: saName, namespace: "test", policy: "policy2"}}, 2},
		} {
			t.Run(tc.name, func(t *testing.T) {
				authz := &fakeAuthorizer{grants: tc.grants}
				pod := authzPod("sa")
				lineapi.SetPodHostNamespaces(&pod.Spec, lineapi.HostNamespaces{PID: true})
				p := newTestPlugin(authz, policies...)
				r := newRequest(t, admission.Create, pod, nil, "test", "", userInfo)
				allowed, _, errs, err := p.engine.Choose(context.Background(), *p.authz, r.attrs.GetNamespace(), r.attrs.GetUserInfo(), pod, true, "")
				if allowed != nil || err != nil {
					t.Fatalf("choose: got pod %v, error %v; want a rejection", allowed != nil, err)
				}
				if len(errs) != tc.want {
					t.Errorf("got %d errors, want %d: %v", len(errs), tc.want, errs)
				}
				admitErr := r.admit(p)
				wantForbidden(t, "Admit", admitErr)
				if admitErr != nil {
					if n := strings.Count(admitErr.Error(), "Host PID is not allowed to be used"); n != tc.want {
						t.Errorf("Admit reports %d hostPID errors, want %d: %v", n, tc.want, admitErr)
					}
				}
			})
		}
	})

	// Case 19: Validate of an update with the kubernetes.io/psp hint. The
	// pod allows privilege escalation, which the restrictive policies
	// refuse.
	hinted := func(hint string) *api.Pod {
		p := goodPod()
		p.Namespace = "ns"
		p.Spec.ServiceAccountName = "sa"
		c0(p).AllowPrivilegeEscalation = ptr.To(true)
		if hint != "" {
			p.Annotations = map[string]string{podsecuritypolicy.ValidatedPSPAnnotation: hint}
		}
		return p
	}
	before := func(p *api.Pod) *api.Pod {
		old := p.DeepCopy()
		old.Spec.Containers[0].Image = "before"
		return old
	}
	restrictives := psps(psp(restrictive, "001restrictive", nil), psp(restrictive, "002restrictive", nil))
	all := append(psps(psp(permissive, "002permissive", nil), psp(permissive, "001permissive", nil), psp(permissive, "003permissive", nil)), restrictives...)
	// 000defaults would set a seccomp profile: it accepts the pod as it
	// is, but would change it, which Validate may not do.
	defaults := psp(permissive, "000defaults", nil)
	defaults.Annotations = map[string]string{seccompDefault: "runtime/default", seccompAllowed: "*"}
	// The requesting user may use 001permissive only.
	onlyFirst := &fakeAuthorizer{grants: []grant{{user: testUser.GetName(), policy: "001permissive"}}}
	ape := "Allowing privilege escalation for containers is not allowed"
	for _, tc := range []struct {
		name, hint string
		psps       []*policy.PodSecurityPolicy
		authz      authorizer.Authorizer
		wantPSP    string
	}{
		{"no hint, name order", "", all, nil, "001permissive"},
		{"hint preferred", "002permissive", all, nil, "002permissive"},
		{"hint of a missing policy", "foo", restrictives, nil, ""},
		{"hinted policy refuses", "001restrictive", restrictives, nil, ""},
		{"hinted policy refuses, another accepts", "001restrictive", all, nil, "001permissive"},
		{"hinted policy would change the pod, another accepts", "000defaults", append(psps(defaults), all...), nil, "001permissive"},
		{"hinted policy not to be used, another accepts", "002permissive", all, onlyFirst, "001permissive"},
	} {
		pod := hinted(tc.hint)
		c := updateCase{spec: 19, name: tc.name, psps: tc.psps, authz: tc.authz, old: before(pod), pod: pod, wantPSP: tc.wantPSP}
		if tc.wantPSP == "" {
			c.wantErrs = []string{ape}
		}
		t.Run(caseName(19, tc.name), func(t *testing.T) {
			c.run(t)
			if tc.wantPSP != "" {
				return
			}
			p := newTestPlugin(nil, tc.psps...)
			r := newRequest(t, admission.Update, pod, c.old, "ns", "", testUser)
			err := r.validate(p)
			if err == nil {
				return
			}
			if n := strings.Count(err.Error(), ape); n != 2 {
				t.Errorf("got %d errors %q, want 2 (one per restrictive policy): %v", n, ape, err)
			}
		})
	}

	t.Run("case 20 policies that cannot be applied are skipped", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			edit    func(*policy.PodSecurityPolicySpec)
			wantErr string
		}{
			{"runAsUser MustRunAs without ranges", func(s *policy.PodSecurityPolicySpec) {
				s.RunAsUser = policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAs}
			}, "MustRunAs requires at least one range"},
			{"fsGroup MustRunAs without ranges", func(s *policy.PodSecurityPolicySpec) {
				s.FSGroup = policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMustRunAs}
			}, "ranges must be supplied for MustRunAs"},
			{"supplementalGroups MayRunAs without ranges", func(s *policy.PodSecurityPolicySpec) {
				s.SupplementalGroups = policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMayRunAs}
			}, "ranges must be supplied for MayRunAs"},
			{"seLinux MustRunAs without options", func(s *policy.PodSecurityPolicySpec) {
				s.SELinux = policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyMustRunAs}
			}, "MustRunAs requires SELinuxOptions"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				broken := psp(permissive, "a-broken", tc.edit)
				if _, err := podsecuritypolicy.NewProvider(broken); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("NewProvider: got %v, want %q", err, tc.wantErr)
				}
				pod := goodPod()
				r := newRequest(t, admission.Create, pod, nil, pod.Namespace, "", testUser)
				wantForbidden(t, "Admit with only the broken policy", r.admit(newTestPlugin(nil, broken)), "no providers available to validate pod request")
				c := createCase{psps: psps(broken, psp(permissive, "b-works", nil)), pod: goodPod(), wantPSP: "b-works"}
				c.run(t)
			})
		}
		allRunAsAny := psp(permissive, "any", nil)
		if _, err := podsecuritypolicy.NewProvider(allRunAsAny); err != nil {
			t.Errorf("all-RunAsAny policy: %v", err)
		}
	})
}

// TestConformanceHost covers cases 21-24: privileged, host namespaces and
// host ports.
func TestConformanceHost(t *testing.T) {
	nonPriv := psp(restrictive, "non-priv", nil)
	priv := psp(restrictive, "priv", func(s *policy.PodSecurityPolicySpec) { s.Privileged = true })
	withPriv := func(v *bool) *api.Pod { return podWith(func(p *api.Pod) { c0(p).Privileged = v }) }
	runCreates(t, []createCase{
		{spec: 21, name: "priv nil under non-priv", psps: psps(nonPriv), pod: withPriv(nil), wantPSP: "non-priv", want: restrictiveDefaults},
		{spec: 21, name: "priv nil under priv", psps: psps(priv), pod: withPriv(nil), wantPSP: "priv", want: restrictiveDefaults},
		{spec: 21, name: "priv false under non-priv", psps: psps(nonPriv), pod: withPriv(ptr.To(false)), wantPSP: "non-priv", want: restrictiveDefaults},
		{spec: 21, name: "priv false under priv", psps: psps(priv), pod: withPriv(ptr.To(false)), wantPSP: "priv", want: restrictiveDefaults},
		{
			spec: 22, name: "priv true under non-priv", psps: psps(nonPriv), pod: withPriv(ptr.To(true)),
			wantErrs: []string{"spec.containers[0].securityContext.privileged: Invalid value: true: Privileged containers are not allowed"},
		},
		{spec: 22, name: "priv true with priv present", psps: psps(nonPriv, priv), pod: withPriv(ptr.To(true)), wantPSP: "priv", want: restrictiveDefaults},
	})

	for _, ns := range []struct {
		field, message string
		set            func(*lineapi.HostNamespaces, bool)
		allow          func(*policy.PodSecurityPolicySpec)
	}{
		{"hostNetwork", "Host network is not allowed to be used", func(h *lineapi.HostNamespaces, v bool) { h.Network = v }, func(s *policy.PodSecurityPolicySpec) { s.HostNetwork = true }},
		{"hostPID", "Host PID is not allowed to be used", func(h *lineapi.HostNamespaces, v bool) { h.PID = v }, func(s *policy.PodSecurityPolicySpec) { s.HostPID = true }},
		{"hostIPC", "Host IPC is not allowed to be used", func(h *lineapi.HostNamespaces, v bool) { h.IPC = v }, func(s *policy.PodSecurityPolicySpec) { s.HostIPC = true }},
	} {
		no := psp(restrictive, "no", nil)
		yes := psp(restrictive, "yes", ns.allow)
		for _, init := range []bool{false, true} {
			where := "containers"
			if init {
				where = "initContainers"
			}
			pod := func(v bool) *api.Pod {
				p := goodPod()
				h := lineapi.PodHostNamespaces(&p.Spec)
				ns.set(&h, v)
				lineapi.SetPodHostNamespaces(&p.Spec, h)
				if init {
					toInit(p)
				}
				return p
			}
			runCreates(t, []createCase{
				{
					spec: 23, name: ns.field + " true, only no, " + where, psps: psps(no), pod: pod(true),
					wantErrs: []string{"spec.securityContext." + ns.field + ": Invalid value: true: " + ns.message},
				},
				{spec: 23, name: ns.field + " true, yes present, " + where, psps: psps(no, yes), pod: pod(true), wantPSP: "yes", want: restrictiveDefaults},
				{spec: 23, name: ns.field + " false under no, " + where, psps: psps(no), pod: pod(false), wantPSP: "no", want: restrictiveDefaults},
				{spec: 23, name: ns.field + " false under yes, " + where, psps: psps(yes), pod: pod(false), wantPSP: "yes", want: restrictiveDefaults},
			})
		}
	}

	for _, init := range []bool{false, true} {
		where, path := "containers", "spec.containers[0].hostPort"
		if init {
			where, path = "initContainers", "spec.initContainers[0].hostPort"
		}
		pod := func(port int32) *api.Pod {
			p := goodPod()
			if port != 0 {
				p.Spec.Containers[0].Ports = []api.ContainerPort{{HostPort: port, ContainerPort: 80}}
			}
			if init {
				toInit(p)
			}
			return p
		}
		oneToTen := psp(restrictive, "ports", func(s *policy.PodSecurityPolicySpec) { s.HostPorts = []policy.HostPortRange{{Min: 1, Max: 10}} })
		noPorts := psp(restrictive, "noports", nil)
		runCreates(t, []createCase{
			{
				spec: 24, name: "port 11 outside 1-10, " + where, psps: psps(oneToTen), pod: pod(11),
				wantErrs: []string{path + ": Invalid value: 11: Host port 11 is not allowed to be used. Allowed ports: [1-10]"},
			},
			{spec: 24, name: "port 5 inside 1-10, " + where, psps: psps(oneToTen), pod: pod(5), wantPSP: "ports", want: restrictiveDefaults},
			{spec: 24, name: "no port with ranges, " + where, psps: psps(oneToTen), pod: pod(0), wantPSP: "ports", want: restrictiveDefaults},
			{spec: 24, name: "no port without ranges, " + where, psps: psps(noPorts), pod: pod(0), wantPSP: "noports", want: restrictiveDefaults},
			{
				spec: 24, name: "port 5 without ranges, " + where, psps: psps(noPorts), pod: pod(5),
				wantErrs: []string{path + ": Invalid value: 5: Host port 5 is not allowed to be used. Allowed ports: []"},
			},
		})
	}
}

// TestConformanceCapabilities covers cases 25-28.
func TestConformanceCapabilities(t *testing.T) {
	caps := func(c *api.Capabilities) *api.Pod { return podWith(func(p *api.Pod) { c0(p).Capabilities = c }) }
	addFoo := &api.Capabilities{Add: []api.Capability{"foo"}}
	withCaps := func(name string, edit func(*policy.PodSecurityPolicySpec)) *policy.PodSecurityPolicy {
		return psp(restrictive, name, edit)
	}
	setCaps := func(c *api.Capabilities) func(*api.Pod) {
		return func(p *api.Pod) {
			restrictiveDefaults(p)
			c0(p).Capabilities = c
		}
	}
	runCreates(t, []createCase{
		{
			spec: 25, name: "add foo under restrictive", psps: psps(restrictive()), pod: caps(addFoo),
			wantErrs: []string{`spec.containers[0].securityContext.capabilities.add: Invalid value: "foo": capability may not be added`},
		},
		{
			spec: 25, name: "add foo, foo allowed", pod: caps(addFoo), wantPSP: "allowed", want: restrictiveDefaults,
			psps: psps(withCaps("allowed", func(s *policy.PodSecurityPolicySpec) { s.AllowedCapabilities = []api.Capability{"foo"} })),
		},
		{
			spec: 25, name: "add foo, foo added by default", pod: caps(addFoo), wantPSP: "default", want: restrictiveDefaults,
			psps: psps(withCaps("default", func(s *policy.PodSecurityPolicySpec) { s.DefaultAddCapabilities = []api.Capability{"foo"} })),
		},
		{
			spec: 26, name: "add foo, foo must be dropped", pod: caps(addFoo),
			psps:     psps(withCaps("drop", func(s *policy.PodSecurityPolicySpec) { s.RequiredDropCapabilities = []api.Capability{"foo"} })),
			wantErrs: []string{"capability may not be added"},
		},
		{
			spec: 26, name: "drop foo, foo must be dropped", pod: caps(&api.Capabilities{Drop: []api.Capability{"foo"}}), wantPSP: "drop", want: restrictiveDefaults,
			psps: psps(withCaps("drop", func(s *policy.PodSecurityPolicySpec) { s.RequiredDropCapabilities = []api.Capability{"foo"} })),
		},
		{
			spec: 27, name: "no caps, foo added by default", pod: goodPod(), wantPSP: "default",
			psps: psps(withCaps("default", func(s *policy.PodSecurityPolicySpec) { s.DefaultAddCapabilities = []api.Capability{"foo"} })),
			want: setCaps(&api.Capabilities{Add: []api.Capability{"foo"}}),
		},
		{
			spec: 27, name: "no caps, foo must be dropped", pod: goodPod(), wantPSP: "drop",
			psps: psps(withCaps("drop", func(s *policy.PodSecurityPolicySpec) { s.RequiredDropCapabilities = []api.Capability{"foo"} })),
			want: setCaps(&api.Capabilities{Drop: []api.Capability{"foo"}}),
		},
		{
			spec: 27, name: "add foo, all allowed", pod: caps(addFoo), wantPSP: "all", want: restrictiveDefaults,
			psps: psps(withCaps("all", func(s *policy.PodSecurityPolicySpec) { s.AllowedCapabilities = []api.Capability{"*"} })),
		},
	})

	// Case 28: how defaults combine with the container's own lists.
	defaults := func(defaultAdd, requiredDrop []api.Capability) []*policy.PodSecurityPolicy {
		return psps(psp(permissive, "caps", func(s *policy.PodSecurityPolicySpec) {
			s.DefaultAddCapabilities, s.RequiredDropCapabilities = defaultAdd, requiredDrop
		}))
	}
	setC0 := func(c *api.Capabilities) func(*api.Pod) { return func(p *api.Pod) { c0(p).Capabilities = c } }
	runCreates(t, []createCase{
		{
			spec: 28, name: "defaults merged sorted", psps: defaults([]api.Capability{"foo", "bar", "baz"}, nil), wantPSP: "caps",
			pod:  caps(&api.Capabilities{Add: []api.Capability{"foo"}}),
			want: setC0(&api.Capabilities{Add: []api.Capability{"bar", "baz", "foo"}}),
		},
		{
			spec: 28, name: "nothing new, duplicates kept", psps: defaults([]api.Capability{"foo", "bar"}, nil), wantPSP: "caps",
			pod: caps(&api.Capabilities{Add: []api.Capability{"foo", "foo", "bar", "baz"}}),
		},
		{
			spec: 28, name: "case-sensitive", psps: defaults([]api.Capability{"foo"}, nil), wantPSP: "caps",
			pod:  caps(&api.Capabilities{Add: []api.Capability{"FOO"}}),
			want: setC0(&api.Capabilities{Add: []api.Capability{"FOO", "foo"}}),
		},
		{
			spec: 28, name: "default add the container drops is not added", psps: defaults([]api.Capability{"foo", "bar"}, nil), wantPSP: "caps",
			pod:  caps(&api.Capabilities{Drop: []api.Capability{"foo"}}),
			want: setC0(&api.Capabilities{Add: []api.Capability{"bar"}, Drop: []api.Capability{"foo"}}),
		},
		{
			// Spec section 6: dropping ALL does not satisfy a required drop.
			spec: 28, name: "drop ALL does not satisfy a required NET_RAW drop", psps: defaults(nil, []api.Capability{"NET_RAW"}), wantPSP: "caps",
			pod:  caps(&api.Capabilities{Drop: []api.Capability{"ALL"}}),
			want: setC0(&api.Capabilities{Drop: []api.Capability{"ALL", "NET_RAW"}}),
		},
	})
}

// TestConformanceVolumes covers cases 29-35.
func TestConformanceVolumes(t *testing.T) {
	volumes := func(types ...policy.FSType) func(*policy.PodSecurityPolicySpec) {
		return func(s *policy.PodSecurityPolicySpec) { s.Volumes = types }
	}
	withVolume := func(src api.VolumeSource) *api.Pod {
		return podWith(func(p *api.Pod) { p.Spec.Volumes = []api.Volume{{Name: "v", VolumeSource: src}} })
	}

	for fsType, src := range psptesting.VolumeSources() {
		for _, init := range []bool{false, true} {
			where := "containers"
			if init {
				where = "initContainers"
			}
			pod := withVolume(src)
			if init {
				toInit(pod)
			}
			runCreates(t, []createCase{
				{
					spec: 29, name: string(fsType) + " with no volumes allowed, " + where, psps: psps(restrictive()), pod: pod,
					wantErrs: []string{"spec.volumes[0]: Invalid value: \"" + string(fsType) + "\": " + string(fsType) + " volumes are not allowed to be used"},
				},
				{spec: 29, name: string(fsType) + " allowed, " + where, psps: psps(psp(restrictive, "listed", volumes(fsType))), pod: pod, wantPSP: "listed", want: restrictiveDefaults},
				{spec: 29, name: string(fsType) + " under *, " + where, psps: psps(psp(restrictive, "all", volumes(policy.All))), pod: pod, wantPSP: "all", want: restrictiveDefaults},
			})
		}
	}

	saToken := func(configMap string) api.VolumeSource {
		return api.VolumeSource{Projected: &api.ProjectedVolumeSource{Sources: []api.VolumeProjection{
			{ServiceAccountToken: lineapi.ServiceAccountTokenProjection("token", 3607)},
			{ConfigMap: &api.ConfigMapProjection{
				LocalObjectReference: api.LocalObjectReference{Name: configMap},
				Items:                []api.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &api.DownwardAPIProjection{Items: []api.DownwardAPIVolumeFile{{
				Path: "namespace", FieldRef: &api.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		}}}
	}
	runCreates(t, []createCase{
		{
			spec: 30, name: "service account token volume, emptyDir allowed", psps: psps(psp(restrictive, "p", volumes(policy.EmptyDir))),
			pod: withVolume(saToken("kube-root-ca.crt")), wantErrs: []string{"projected volumes are not allowed to be used"},
		},
		{
			spec: 30, name: "service account token volume, secret allowed", psps: psps(psp(restrictive, "p", volumes(policy.Secret))),
			pod: withVolume(saToken("kube-root-ca.crt")), wantPSP: "p", want: restrictiveDefaults,
		},
		{
			spec: 30, name: "projected foo-ca.crt, secret allowed", psps: psps(psp(restrictive, "p", volumes(policy.Secret))),
			pod: withVolume(saToken("foo-ca.crt")), wantErrs: []string{"projected volumes are not allowed to be used"},
		},
	})

	flex := func(driver string) *api.Pod {
		return withVolume(api.VolumeSource{FlexVolume: &api.FlexVolumeSource{Driver: driver}})
	}
	flexPSP := func(types ...policy.FSType) func(*policy.PodSecurityPolicySpec) {
		return func(s *policy.PodSecurityPolicySpec) {
			s.Volumes = types
			s.AllowedFlexVolumes = []policy.AllowedFlexVolume{{Driver: "example/foo"}, {Driver: "example/bar"}}
		}
	}
	csiPod := withVolume(api.VolumeSource{CSI: &api.CSIVolumeSource{Driver: "csi.driver.foo"}})
	csiPSP := func(driver string, types ...policy.FSType) *policy.PodSecurityPolicy {
		return psp(restrictive, "p", func(s *policy.PodSecurityPolicySpec) {
			s.Volumes = types
			s.AllowedCSIDrivers = []policy.AllowedCSIDriver{{Name: driver}}
		})
	}
	ephemeralPod := withVolume(api.VolumeSource{Ephemeral: &api.EphemeralVolumeSource{}})
	runCreates(t, []createCase{
		{
			spec: 31, name: "unknown flex driver, flexVolume allowed", psps: psps(psp(restrictive, "p", flexPSP(policy.FlexVolume))), pod: flex("example/unknown"),
			wantErrs: []string{`spec.volumes[0].driver: Invalid value: "example/unknown": Flexvolume driver is not allowed to be used`},
		},
		{
			spec: 31, name: "unknown flex driver, all volumes allowed", psps: psps(psp(restrictive, "p", flexPSP(policy.All))), pod: flex("example/unknown"),
			wantErrs: []string{"Flexvolume driver is not allowed to be used"},
		},
		{spec: 31, name: "listed flex driver", psps: psps(psp(restrictive, "p", flexPSP(policy.FlexVolume))), pod: flex("example/bar"), wantPSP: "p", want: restrictiveDefaults},
		{spec: 31, name: "empty flex allowlist", psps: psps(psp(restrictive, "p", volumes(policy.FlexVolume))), pod: flex("example/unknown"), wantPSP: "p", want: restrictiveDefaults},
		{
			spec: 32, name: "csi driver not listed, csi allowed", psps: psps(csiPSP("csi.driver.disallowed", policy.CSI)), pod: csiPod,
			wantErrs: []string{`spec.volumes[0].csi.driver: Invalid value: "csi.driver.foo": Inline CSI driver is not allowed to be used`},
		},
		{
			spec: 32, name: "csi driver not listed, all volumes allowed", psps: psps(csiPSP("csi.driver.disallowed", policy.All)), pod: csiPod,
			wantErrs: []string{"Inline CSI driver is not allowed to be used"},
		},
		{
			spec: 32, name: "csi not in volumes", psps: psps(csiPSP("csi.driver.foo", policy.EmptyDir)), pod: csiPod,
			wantErrs: []string{"csi volumes are not allowed to be used"},
		},
		{spec: 32, name: "csi driver listed", psps: psps(csiPSP("csi.driver.foo", policy.CSI)), pod: csiPod, wantPSP: "p", want: restrictiveDefaults},
		{
			spec: 33, name: "ephemeral under the default policy", psps: psps(restrictive()), pod: ephemeralPod,
			wantErrs: []string{"ephemeral volumes are not allowed to be used"},
		},
		{
			spec: 33, name: "ephemeral with nfs allowed", psps: psps(psp(restrictive, "p", volumes(policy.NFS))), pod: ephemeralPod,
			wantErrs: []string{"ephemeral volumes are not allowed to be used"},
		},
		{
			spec: 33, name: "ephemeral with persistentVolumeClaim allowed", psps: psps(psp(restrictive, "p", volumes(policy.PersistentVolumeClaim))), pod: ephemeralPod,
			wantErrs: []string{"ephemeral volumes are not allowed to be used"},
		},
		{spec: 33, name: "ephemeral allowed", psps: psps(psp(restrictive, "p", volumes(policy.Ephemeral))), pod: ephemeralPod, wantPSP: "p", want: restrictiveDefaults},
		{spec: 33, name: "ephemeral under *", psps: psps(psp(restrictive, "p", volumes(policy.All))), pod: ephemeralPod, wantPSP: "p", want: restrictiveDefaults},
	})

	// Case 34: hostPath prefixes, read-only and read-write.
	hostPaths := func(s *policy.PodSecurityPolicySpec) {
		s.Volumes = []policy.FSType{policy.HostPath}
		s.AllowedHostPaths = []policy.AllowedHostPath{
			{PathPrefix: "/foo/bar/baz", ReadOnly: true},
			{PathPrefix: "/foo", ReadOnly: true},
			{PathPrefix: "/foo/bar"},
		}
	}
	hostPathVolume := func(name, path string) api.Volume {
		return api.Volume{Name: name, VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: path}}}
	}
	allowedHostPaths := podWith(func(p *api.Pod) {
		p.Spec.Volumes = []api.Volume{
			hostPathVolume("rw", "/foo/bar"),
			hostPathVolume("ro1", "/foo/bar/baz"),
			hostPathVolume("ro2", "/foo/"),
			hostPathVolume("ro3", "/foo/readonly/child"),
		}
		mounts := []api.VolumeMount{
			{Name: "rw", MountPath: "/rw"},
			{Name: "ro1", MountPath: "/ro1", ReadOnly: true},
			{Name: "ro2", MountPath: "/ro2", ReadOnly: true},
			{Name: "ro3", MountPath: "/ro3", ReadOnly: true},
		}
		p.Spec.Containers[0].VolumeMounts = mounts
		p.Spec.InitContainers = []api.Container{{Name: "init", SecurityContext: &api.SecurityContext{}, VolumeMounts: mounts}}
	})
	oneHostPath := func(path string, readOnly bool) *api.Pod {
		return podWith(func(p *api.Pod) {
			p.Spec.Volumes = []api.Volume{hostPathVolume("v", path)}
			p.Spec.InitContainers = []api.Container{{Name: "init", SecurityContext: &api.SecurityContext{}, VolumeMounts: []api.VolumeMount{{Name: "v", MountPath: "/v", ReadOnly: readOnly}}}}
			p.Spec.Containers[0].VolumeMounts = []api.VolumeMount{{Name: "v", MountPath: "/v", ReadOnly: readOnly}}
		})
	}
	runCreates(t, []createCase{
		{spec: 34, name: "allowed prefixes, read-only where required", psps: psps(psp(restrictive, "p", hostPaths)), pod: allowedHostPaths, wantPSP: "p", want: restrictiveDefaults},
		{
			spec: 34, name: "path outside every prefix", pod: oneHostPath("/fail", true),
			psps: psps(psp(restrictive, "p", func(s *policy.PodSecurityPolicySpec) {
				s.Volumes = []policy.FSType{policy.HostPath}
				s.AllowedHostPaths = []policy.AllowedHostPath{{PathPrefix: "/foo/bar"}}
			})),
			wantErrs: []string{`spec.volumes[0].hostPath.pathPrefix: Invalid value: "/fail": is not allowed to be used`},
		},
		{
			spec: 34, name: "read-only prefix, read-write mounts", pod: oneHostPath("/foo", false),
			psps: psps(psp(restrictive, "p", func(s *policy.PodSecurityPolicySpec) {
				s.Volumes = []policy.FSType{policy.HostPath}
				s.AllowedHostPaths = []policy.AllowedHostPath{{PathPrefix: "/foo", ReadOnly: true}}
			})),
			wantErrs: []string{
				"spec.initContainers[0].volumeMounts[0].readOnly: Invalid value: false: must be read-only",
				"spec.containers[0].volumeMounts[0].readOnly: Invalid value: false: must be read-only",
			},
		},
		{
			spec: 34, name: "read-only prefix, read-only mounts", pod: oneHostPath("/foo", true), wantPSP: "p", want: restrictiveDefaults,
			psps: psps(psp(restrictive, "p", func(s *policy.PodSecurityPolicySpec) {
				s.Volumes = []policy.FSType{policy.HostPath}
				s.AllowedHostPaths = []policy.AllowedHostPath{{PathPrefix: "/foo", ReadOnly: true}}
			})),
		},
		{
			spec: 34, name: "empty path, hostPath not allowed", pod: oneHostPath("", true), psps: psps(restrictive()),
			wantErrs: []string{"hostPath volumes are not allowed to be used"},
		},
	})

	t.Run("case 35 AllowsHostVolumePath", func(t *testing.T) {
		for _, tc := range []struct {
			name                  string
			prefixes              []policy.AllowedHostPath
			path                  string
			wantAllowed, wantRead bool
		}{
			{"no prefixes", nil, "/foo", true, false},
			{"/foo vs /foobar", []policy.AllowedHostPath{{PathPrefix: "/foo"}}, "/foobar", false, false},
			{"/foo read-only vs /foo", []policy.AllowedHostPath{{PathPrefix: "/foo", ReadOnly: true}}, "/foo", true, true},
			{"/foo vs /foo/", []policy.AllowedHostPath{{PathPrefix: "/foo"}}, "/foo/", true, false},
			{"/foo/ vs /foo", []policy.AllowedHostPath{{PathPrefix: "/foo/"}}, "/foo", true, false},
			{"/foo/ read-only vs /foo/bar", []policy.AllowedHostPath{{PathPrefix: "/foo/", ReadOnly: true}}, "/foo/bar", true, true},
			{"/foo/bar vs /foo", []policy.AllowedHostPath{{PathPrefix: "/foo/bar"}}, "/foo", false, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				allowed, readOnly := hostpath.Allows(tc.prefixes, tc.path)
				if allowed != tc.wantAllowed || (allowed && readOnly != tc.wantRead) {
					t.Errorf("Allows(%v, %q) = %v, read-only %v; want %v, read-only %v", tc.prefixes, tc.path, allowed, readOnly, tc.wantAllowed, tc.wantRead)
				}
			})
		}
	})
}

// TestConformanceUsersGroupsSELinux covers cases 36-38.
func TestConformanceUsersGroupsSELinux(t *testing.T) {
	runAsUser := func(rule policy.RunAsUserStrategy, ranges ...policy.IDRange) []*policy.PodSecurityPolicy {
		return psps(psp(permissive, "p", func(s *policy.PodSecurityPolicySpec) {
			s.RunAsUser = policy.RunAsUserStrategyOptions{Rule: rule, Ranges: ranges}
		}))
	}
	users := func(pod, container *int64) *api.Pod {
		return podWith(func(p *api.Pod) {
			p.Spec.SecurityContext.RunAsUser = pod
			c0(p).RunAsUser = container
		})
	}
	uid := func(i int64) *int64 { return &i }
	r999 := policy.IDRange{Min: 999, Max: 1000}
	any, must, nonRoot := runAsUser(policy.RunAsUserStrategyRunAsAny), runAsUser(policy.RunAsUserStrategyMustRunAs, r999), runAsUser(policy.RunAsUserStrategyMustRunAsNonRoot)
	runCreates(t, []createCase{
		{spec: 36, name: "RunAsAny, nothing set", psps: any, pod: users(nil, nil), wantPSP: "p"},
		{spec: 36, name: "RunAsAny, pod and container set", psps: any, pod: users(uid(0), uid(1)), wantPSP: "p"},
		{
			spec: 36, name: "MustRunAs, pod 1", psps: must, pod: users(uid(1), nil),
			wantErrs: []string{"spec.containers[0].securityContext.runAsUser: Invalid value: 1: must be in the ranges: [{999 1000}]"},
		},
		{spec: 36, name: "MustRunAs, container 1", psps: must, pod: users(nil, uid(1)), wantErrs: []string{"must be in the ranges: [{999 1000}]"}},
		{spec: 36, name: "MustRunAs, pod 999", psps: must, pod: users(uid(999), nil), wantPSP: "p"},
		{spec: 36, name: "MustRunAs, container 999", psps: must, pod: users(nil, uid(999)), wantPSP: "p"},
		{spec: 36, name: "MustRunAs, pod 999 container 1000", psps: must, pod: users(uid(999), uid(1000)), wantPSP: "p"},
		{
			spec: 36, name: "MustRunAs, nothing set", psps: must, pod: users(nil, nil), wantPSP: "p",
			want: func(p *api.Pod) { c0(p).RunAsUser = uid(999) },
		},
		{
			spec: 36, name: "MustRunAsNonRoot, nothing set", psps: nonRoot, pod: users(nil, nil), wantPSP: "p",
			want: func(p *api.Pod) { c0(p).RunAsNonRoot = ptr.To(true) },
		},
		{
			spec: 36, name: "MustRunAsNonRoot, pod 0", psps: nonRoot, pod: users(uid(0), nil),
			wantErrs: []string{"spec.containers[0].securityContext.runAsUser: Invalid value: 0: running with the root UID is forbidden"},
		},
		{spec: 36, name: "MustRunAsNonRoot, pod 1", psps: nonRoot, pod: users(uid(1), nil), wantPSP: "p"},
		{spec: 36, name: "MustRunAsNonRoot, container 0", psps: nonRoot, pod: users(nil, uid(0)), wantErrs: []string{"running with the root UID is forbidden"}},
		{spec: 36, name: "MustRunAsNonRoot, pod 1 container 2", psps: nonRoot, pod: users(uid(1), uid(2)), wantPSP: "p"},
		{
			spec: 36, name: "MustRunAsNonRoot, runAsNonRoot false", psps: nonRoot,
			pod:      podWith(func(p *api.Pod) { c0(p).RunAsNonRoot = ptr.To(false) }),
			wantErrs: []string{"spec.containers[0].securityContext.runAsNonRoot: Invalid value: false: must be true"},
		},
	})

	type groupField struct {
		name    string
		set     func(*api.PodSecurityContext, int64)
		policy  func(*policy.PodSecurityPolicySpec, string, []policy.IDRange)
		path    string
		empty   func(*api.PodSecurityContext) // sets the field to an empty, non-nil value; nil if none
		rejects string
	}
	for _, g := range []groupField{
		{
			name: "supplementalGroups",
			set:  func(s *api.PodSecurityContext, id int64) { s.SupplementalGroups = []int64{id} },
			policy: func(s *policy.PodSecurityPolicySpec, rule string, r []policy.IDRange) {
				s.SupplementalGroups = policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyType(rule), Ranges: r}
			},
			path:  "spec.securityContext.supplementalGroups",
			empty: func(s *api.PodSecurityContext) { s.SupplementalGroups = []int64{} },
		},
		{
			name: "fsGroup",
			set:  func(s *api.PodSecurityContext, id int64) { s.FSGroup = &id },
			policy: func(s *policy.PodSecurityPolicySpec, rule string, r []policy.IDRange) {
				s.FSGroup = policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyType(rule), Ranges: r}
			},
			path: "spec.securityContext.fsGroup",
		},
	} {
		rule := func(rule string, r ...policy.IDRange) []*policy.PodSecurityPolicy {
			return psps(psp(permissive, "p", func(s *policy.PodSecurityPolicySpec) { g.policy(s, rule, r) }))
		}
		withGroup := func(id int64) *api.Pod { return podWith(func(p *api.Pod) { g.set(p.Spec.SecurityContext, id) }) }
		noSC := podWith(func(p *api.Pod) { p.Spec.SecurityContext = nil })
		cases := []createCase{
			{spec: 37, name: g.name + " RunAsAny, nil pod security context", psps: rule("RunAsAny"), pod: noSC, wantPSP: "p"},
			{spec: 37, name: g.name + " RunAsAny, empty pod security context", psps: rule("RunAsAny"), pod: goodPod(), wantPSP: "p"},
			{spec: 37, name: g.name + " RunAsAny, group 1", psps: rule("RunAsAny"), pod: withGroup(1), wantPSP: "p"},
			{
				spec: 37, name: g.name + " MustRunAs, none", psps: rule("MustRunAs", r999), pod: goodPod(), wantPSP: "p",
				want: func(p *api.Pod) { g.set(p.Spec.SecurityContext, 999) },
			},
			{
				spec: 37, name: g.name + " MustRunAs, nil pod security context", psps: rule("MustRunAs", r999), pod: noSC, wantPSP: "p",
				want: func(p *api.Pod) { g.set(psc(p), 999) },
			},
			{
				spec: 37, name: g.name + " MustRunAs, group 1", psps: rule("MustRunAs", r999), pod: withGroup(1),
				wantErrs: []string{g.path + ": Invalid value: [1]: group 1 must be in the ranges: [{999 1000}]"},
			},
			{spec: 37, name: g.name + " MustRunAs, group 999", psps: rule("MustRunAs", r999), pod: withGroup(999), wantPSP: "p"},
			{spec: 37, name: g.name + " MayRunAs, none", psps: rule("MayRunAs", r999), pod: goodPod(), wantPSP: "p"},
			{spec: 37, name: g.name + " MayRunAs, group 1", psps: rule("MayRunAs", r999), pod: withGroup(1), wantErrs: []string{"group 1 must be in the ranges"}},
		}
		if g.empty != nil {
			empty := podWith(func(p *api.Pod) { g.empty(p.Spec.SecurityContext) })
			cases = append(cases,
				createCase{spec: 37, name: g.name + " RunAsAny, empty list", psps: rule("RunAsAny"), pod: empty, wantPSP: "p"},
				// An explicitly empty list is not regenerated (spec 4.6), so
				// MustRunAs refuses it.
				createCase{
					spec: 37, name: g.name + " MustRunAs, empty list", psps: rule("MustRunAs", r999), pod: empty,
					wantErrs: []string{g.path + ": Invalid value: []: unable to validate empty groups against required ranges"},
				},
			)
		}
		runCreates(t, cases)
	}

	// Case 38: SELinux.
	opts := &api.SELinuxOptions{User: "user", Role: "role", Type: "type", Level: "level"}
	seLinux := func(rule policy.SELinuxStrategy, o *api.SELinuxOptions) []*policy.PodSecurityPolicy {
		return psps(psp(permissive, "p", func(s *policy.PodSecurityPolicySpec) {
			s.SELinux = policy.SELinuxStrategyOptions{Rule: rule, SELinuxOptions: o}
		}))
	}
	withSELinux := func(pod, container *api.SELinuxOptions) *api.Pod {
		return podWith(func(p *api.Pod) {
			p.Spec.SecurityContext = nil
			p.Spec.Containers[0].SecurityContext = nil
			if pod != nil {
				p.Spec.SecurityContext = &api.PodSecurityContext{SELinuxOptions: pod}
			}
			if container != nil {
				p.Spec.Containers[0].SecurityContext = &api.SecurityContext{SELinuxOptions: container}
			}
		})
	}
	foo := &api.SELinuxOptions{User: "foo", Role: "role", Type: "type", Level: "level"}
	runCreates(t, []createCase{
		{spec: 38, name: "RunAsAny, nothing set", psps: seLinux(policy.SELinuxStrategyRunAsAny, nil), pod: withSELinux(nil, nil), wantPSP: "p"},
		{spec: 38, name: "RunAsAny, empty pod security context", psps: seLinux(policy.SELinuxStrategyRunAsAny, nil), pod: goodPod(), wantPSP: "p"},
		{spec: 38, name: "RunAsAny, pod options", psps: seLinux(policy.SELinuxStrategyRunAsAny, nil), pod: withSELinux(foo, nil), wantPSP: "p"},
		{
			spec: 38, name: "MustRunAs, pod user foo", psps: seLinux(policy.SELinuxStrategyMustRunAs, opts), pod: withSELinux(foo, nil),
			wantErrs: []string{`spec.securityContext.seLinuxOptions.user: Invalid value: "foo": must be user`},
		},
		{
			spec: 38, name: "MustRunAs, container user foo", psps: seLinux(policy.SELinuxStrategyMustRunAs, opts), pod: withSELinux(nil, foo),
			wantErrs: []string{`spec.containers[0].securityContext.seLinuxOptions.user: Invalid value: "foo": must be user`},
		},
		{
			spec: 38, name: "MustRunAs, nothing set", psps: seLinux(policy.SELinuxStrategyMustRunAs, opts), pod: withSELinux(nil, nil), wantPSP: "p",
			want: func(p *api.Pod) { p.Spec.SecurityContext = &api.PodSecurityContext{SELinuxOptions: opts.DeepCopy()} },
		},
		{spec: 38, name: "MustRunAs, exact pod options", psps: seLinux(policy.SELinuxStrategyMustRunAs, opts), pod: withSELinux(opts.DeepCopy(), nil), wantPSP: "p"},
	})

	t.Run("case 38 level comparison", func(t *testing.T) {
		for _, tc := range []struct {
			required, got string
			equal         bool
		}{
			{"s0:c0,c6", "s0:c6,c0", true},
			{"s0:c6,c0", "s0:c0,c6", true},
			{"s0", "s0", true},
			{"s0", "s0:c1,c2", false},
			{"s0:c6", "s1:c6", false},
			{"s0:c0,c8", "s0:c1,c7", false},
		} {
			s, err := selinux.New(policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyMustRunAs, SELinuxOptions: &api.SELinuxOptions{Level: tc.required}})
			if err != nil {
				t.Fatal(err)
			}
			errs := errs.All(func(c *errs.Collector) { s.Validate(c, field.NewPath("sc"), &api.SELinuxOptions{Level: tc.got}) })
			if (len(errs) == 0) != tc.equal {
				t.Errorf("level %q against required %q: errors %v, want equal=%v", tc.got, tc.required, errs, tc.equal)
			}
			if !tc.equal && (len(errs) != 1 || errs[0].Field != "sc.seLinuxOptions.level" || errs[0].Detail != "must be "+tc.required) {
				t.Errorf("level %q against required %q: got %v, want one level error", tc.got, tc.required, errs)
			}
		}
	})
}

const (
	appArmorKey       = "container.apparmor.security.beta.kubernetes.io/test-c"
	seccompPodKey     = "seccomp.security.alpha.kubernetes.io/pod"
	seccompTestCKey   = "container.seccomp.security.alpha.kubernetes.io/test-c"
	appArmorDefault   = policy.AppArmorDefaultProfileAnnotationKey
	appArmorAllowed   = policy.AppArmorAllowedProfilesAnnotationKey
	seccompDefault    = policy.SeccompDefaultProfileAnnotationKey
	seccompAllowed    = policy.SeccompAllowedProfilesAnnotationKey
	runtimeDefaultAA  = "runtime/default"
	localhostFooAA    = "localhost/foo"
	privEscalationMsg = "Allowing privilege escalation for containers is not allowed"
)

func podAnnotated(kv ...string) *api.Pod {
	return podWith(func(p *api.Pod) {
		p.Annotations = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			p.Annotations[kv[i]] = kv[i+1]
		}
	})
}

// TestConformanceProfilesAndMisc covers cases 39-48.
func TestConformanceProfilesAndMisc(t *testing.T) {
	aa := func(kv ...string) []*policy.PodSecurityPolicy {
		return psps(annotated(psp(permissive, "p", nil), kv...))
	}
	runtimeDefaultField := func(p *api.Pod) {
		c0(p).AppArmorProfile = &api.AppArmorProfile{Type: api.AppArmorProfileTypeRuntimeDefault}
	}
	runCreates(t, []createCase{
		{spec: 39, name: "unconstrained, no profile", psps: aa(), pod: goodPod(), wantPSP: "p"},
		{spec: 39, name: "unconstrained, runtime/default", psps: aa(), pod: podAnnotated(appArmorKey, runtimeDefaultAA), wantPSP: "p"},
		// Port decision (spec 4.8.4): the default goes into the container's
		// appArmorProfile field, not an annotation.
		{spec: 39, name: "default runtime/default", psps: aa(appArmorDefault, runtimeDefaultAA), pod: goodPod(), wantPSP: "p", want: runtimeDefaultField},
		{
			spec: 39, name: "allowed runtime/default, no profile", psps: aa(appArmorAllowed, runtimeDefaultAA), pod: goodPod(),
			wantErrs: []string{"pod.metadata.annotations[" + appArmorKey + "]: Forbidden: AppArmor profile must be set"},
		},
		{
			spec: 39, name: "allowed runtime/default,localhost/foo with default, no profile", pod: goodPod(), wantPSP: "p", want: runtimeDefaultField,
			psps: aa(appArmorAllowed, "runtime/default,localhost/foo", appArmorDefault, runtimeDefaultAA),
		},
		{
			spec: 39, name: "allowed runtime/default,localhost/foo with default, pod localhost/foo", pod: podAnnotated(appArmorKey, localhostFooAA), wantPSP: "p",
			psps: aa(appArmorAllowed, "runtime/default,localhost/foo", appArmorDefault, runtimeDefaultAA),
		},
		{
			spec: 39, name: "allowed runtime/default, pod localhost/bar", psps: aa(appArmorAllowed, runtimeDefaultAA), pod: podAnnotated(appArmorKey, "localhost/bar"),
			wantErrs: []string{`localhost/bar is not an allowed profile. Allowed values: "runtime/default"`},
		},
	})

	sc := func(kv ...string) []*policy.PodSecurityPolicy {
		return psps(annotated(psp(restrictive, "p", nil), kv...))
	}
	withRuntimeDefault := func(p *api.Pod) {
		restrictiveDefaults(p)
		p.Spec.SecurityContext.SeccompProfile = &api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault}
	}
	seccompField := func(typ api.SeccompProfileType, localhost string) *api.Pod {
		return podWith(func(p *api.Pod) {
			p.Spec.SecurityContext.SeccompProfile = &api.SeccompProfile{Type: typ}
			if localhost != "" {
				p.Spec.SecurityContext.SeccompProfile.LocalhostProfile = &localhost
			}
		})
	}
	runCreates(t, []createCase{
		{spec: 40, name: "no policy annotation, no pod profile", psps: sc(), pod: goodPod(), wantPSP: "p", want: restrictiveDefaults},
		{
			spec: 40, name: "no policy annotation, pod annotation foo", psps: sc(), pod: podAnnotated(seccompPodKey, "foo"),
			wantErrs: []string{"pod.metadata.annotations[" + seccompPodKey + "]: Forbidden: seccomp may not be set"},
		},
		{
			spec: 40, name: "no policy annotation, container annotation foo", psps: sc(), pod: podAnnotated(seccompTestCKey, "foo"),
			wantErrs: []string{"pod.metadata.annotations[" + seccompTestCKey + "]: Forbidden: seccomp may not be set"},
		},
		{spec: 40, name: "allowed *, pod foo", psps: sc(seccompAllowed, "*"), pod: podAnnotated(seccompPodKey, "foo"), wantPSP: "p", want: restrictiveDefaults},
		{spec: 40, name: "allowed *, container foo", psps: sc(seccompAllowed, "*"), pod: podAnnotated(seccompTestCKey, "foo"), wantPSP: "p", want: restrictiveDefaults},
		{
			spec: 40, name: "allowed foo, pod bar", psps: sc(seccompAllowed, "foo"), pod: podAnnotated(seccompPodKey, "bar"),
			wantErrs: []string{"bar is not an allowed seccomp profile. Valid values are foo"},
		},
		// Upstream's variant uses the default "foo", which no seccompProfile
		// field can express: such a policy is refused by the API and skipped
		// by the port (see TestPortSeccompDefaultField), so the default here
		// is localhost/foo.
		{
			spec: 40, name: "default and allowed localhost/foo, container localhost/bar", pod: podAnnotated(seccompTestCKey, "localhost/bar"),
			psps:     sc(seccompDefault, "localhost/foo", seccompAllowed, "localhost/foo"),
			wantErrs: []string{"pod.metadata.annotations[" + seccompTestCKey + "]: Forbidden: localhost/bar is not an allowed seccomp profile. Valid values are localhost/foo"},
		},
		{spec: 40, name: "allowed foo,bar, pod foo, container bar", psps: sc(seccompAllowed, "foo,bar"), pod: podAnnotated(seccompPodKey, "foo", seccompTestCKey, "bar"), wantPSP: "p", want: restrictiveDefaults},
		{
			// The pod-level profile is judged too (spec 4.7.3): none is not
			// in the list.
			spec: 40, name: "allowed foo,bar, only container bar", psps: sc(seccompAllowed, "foo,bar"), pod: podAnnotated(seccompTestCKey, "bar"),
			wantErrs: []string{"pod.metadata.annotations[" + seccompPodKey + "]: Forbidden:  is not an allowed seccomp profile. Valid values are foo,bar"},
		},
		{
			spec: 40, name: "allowed foo, pod field localhost foo", psps: sc(seccompAllowed, "foo"), pod: seccompField(api.SeccompProfileTypeLocalhost, "foo"),
			wantErrs: []string{"localhost/foo is not an allowed seccomp profile. Valid values are foo"},
		},
		{spec: 40, name: "allowed localhost/foo, pod field localhost foo", psps: sc(seccompAllowed, "localhost/foo"), pod: seccompField(api.SeccompProfileTypeLocalhost, "foo"), wantPSP: "p", want: restrictiveDefaults},
		// The port writes an annotation that a field can express into the
		// field, so that the profile the policy allowed is the one nodes
		// apply (they ignore the annotation since v1.25).
		{spec: 40, name: "allowed docker/default, pod annotation runtime/default", psps: sc(seccompAllowed, "docker/default"), pod: podAnnotated(seccompPodKey, "runtime/default"), wantPSP: "p", want: withRuntimeDefault},
		{spec: 40, name: "allowed docker/default, pod field RuntimeDefault", psps: sc(seccompAllowed, "docker/default"), pod: seccompField(api.SeccompProfileTypeRuntimeDefault, ""), wantPSP: "p", want: restrictiveDefaults},
		{spec: 40, name: "allowed runtime/default, pod annotation docker/default", psps: sc(seccompAllowed, "runtime/default"), pod: podAnnotated(seccompPodKey, "docker/default"), wantPSP: "p", want: withRuntimeDefault},
	})

	readOnly := func(required bool) []*policy.PodSecurityPolicy {
		return psps(psp(permissive, "p", func(s *policy.PodSecurityPolicySpec) { s.ReadOnlyRootFilesystem = required }))
	}
	rootFS := func(v *bool) *api.Pod { return podWith(func(p *api.Pod) { c0(p).ReadOnlyRootFilesystem = v }) }
	runCreates(t, []createCase{
		{spec: 41, name: "not required, true", psps: readOnly(false), pod: rootFS(ptr.To(true)), wantPSP: "p"},
		{spec: 41, name: "not required, false", psps: readOnly(false), pod: rootFS(ptr.To(false)), wantPSP: "p"},
		{spec: 41, name: "not required, nil", psps: readOnly(false), pod: rootFS(nil), wantPSP: "p"},
		{
			spec: 41, name: "required, false", psps: readOnly(true), pod: rootFS(ptr.To(false)),
			wantErrs: []string{"spec.containers[0].securityContext.readOnlyRootFilesystem: Invalid value: false: ReadOnlyRootFilesystem must be set to true"},
		},
		{spec: 41, name: "required, true", psps: readOnly(true), pod: rootFS(ptr.To(true)), wantPSP: "p"},
		{
			spec: 41, name: "required, nil", psps: readOnly(true), pod: rootFS(nil), wantPSP: "p",
			want: func(p *api.Pod) { c0(p).ReadOnlyRootFilesystem = ptr.To(true) },
		},
	})

	sysctls := func(allowedUnsafe, forbidden []string) []*policy.PodSecurityPolicy {
		return psps(psp(permissive, "p", func(s *policy.PodSecurityPolicySpec) {
			s.AllowedUnsafeSysctls, s.ForbiddenSysctls = allowedUnsafe, forbidden
		}))
	}
	withSysctls := func(names ...string) *api.Pod {
		return podWith(func(p *api.Pod) {
			for _, n := range names {
				p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, api.Sysctl{Name: n, Value: "1"})
			}
		})
	}
	l := func(s ...string) []string { return s }
	runCreates(t, []createCase{
		{spec: 42, name: "no sysctls, default policy", psps: sysctls(nil, nil), pod: withSysctls(), wantPSP: "p"},
		{spec: 42, name: "no sysctls, all forbidden", psps: sysctls(nil, l("*")), pod: withSysctls(), wantPSP: "p"},
		{spec: 42, name: "no sysctls, all unsafe allowed", psps: sysctls(l("*"), nil), pod: withSysctls(), wantPSP: "p"},
		{spec: 42, name: "safe sysctls, default policy", psps: sysctls(nil, nil), pod: withSysctls("kernel.shm_rmid_forced", "net.ipv4.tcp_syncookies"), wantPSP: "p"},
		{
			spec: 42, name: "unsafe a,b, all forbidden", psps: sysctls(nil, l("*")), pod: withSysctls("a", "b"),
			wantErrs: []string{`spec.securityContext.sysctls[0]: Forbidden: sysctl "a" is not allowed`, `spec.securityContext.sysctls[1]: Forbidden: sysctl "b" is not allowed`},
		},
		{
			spec: 42, name: "allowed a, a and b", psps: sysctls(l("a"), nil), pod: withSysctls("a", "b"),
			wantErrs: []string{`spec.securityContext.sysctls[1]: Forbidden: unsafe sysctl "b" is not allowed`},
		},
		{spec: 42, name: "allowed a, b", psps: sysctls(l("a"), nil), pod: withSysctls("b"), wantErrs: []string{`unsafe sysctl "b" is not allowed`}},
		{spec: 42, name: "allowed a, a", psps: sysctls(l("a"), nil), pod: withSysctls("a"), wantPSP: "p"},
		{spec: 42, name: "allowed a, safe sysctl", psps: sysctls(l("a"), nil), pod: withSysctls("net.ipv4.ip_local_port_range"), wantPSP: "p"},
		{
			spec: 42, name: "all forbidden, safe sysctl", psps: sysctls(nil, l("*")), pod: withSysctls("net.ipv4.ip_local_port_range"),
			wantErrs: []string{`sysctl "net.ipv4.ip_local_port_range" is not allowed`},
		},
		{spec: 42, name: "forbidden net.*, allowed a.* b.*, safe and allowed", psps: sysctls(l("a.*", "b.*"), l("net.*")), pod: withSysctls("kernel.shm_rmid_forced", "a.b", "b.a"), wantPSP: "p"},
		{
			spec: 42, name: "forbidden net.*, allowed a.* b.*, e", psps: sysctls(l("a.*", "b.*"), l("net.*")), pod: withSysctls("kernel.shm_rmid_forced", "a.b", "b.a", "e"),
			wantErrs: []string{`spec.securityContext.sysctls[3]: Forbidden: unsafe sysctl "e" is not allowed`},
		},
		{
			spec: 42, name: "forbidden net.* beats safe", psps: sysctls(l("a.*", "b.*"), l("net.*")), pod: withSysctls("kernel.shm_rmid_forced", "a.b", "b.a", "net.ipv4.ip_local_port_range"),
			wantErrs: []string{`spec.securityContext.sysctls[3]: Forbidden: sysctl "net.ipv4.ip_local_port_range" is not allowed`},
		},
		{spec: 42, name: "all unsafe allowed, safe and f", psps: sysctls(l("*"), nil), pod: withSysctls("net.ipv4.ip_local_port_range", "f"), wantPSP: "p"},
		{
			spec: 42, name: "forbidden kernel.shm_rmid_forced", psps: sysctls(nil, l("kernel.shm_rmid_forced")), pod: withSysctls("kernel.shm_rmid_forced"),
			wantErrs: []string{`sysctl "kernel.shm_rmid_forced" is not allowed`},
		},
		{
			spec: 42, name: "no unsafe allowed, kernel.sem", psps: sysctls(l(), nil), pod: withSysctls("kernel.sem"),
			wantErrs: []string{`unsafe sysctl "kernel.sem" is not allowed`},
		},
	})

	// Case 43: allowPrivilegeEscalation matrix, for a regular and for an
	// ephemeral container.
	for _, tc := range []struct {
		allow       bool
		dflt, pod   *bool
		ok          bool
		want        *bool
		description string
	}{
		{true, nil, nil, true, nil, "T,nil,nil"},
		{true, nil, ptr.To(false), true, ptr.To(false), "T,nil,F"},
		{true, nil, ptr.To(true), true, ptr.To(true), "T,nil,T"},
		{true, ptr.To(false), nil, true, ptr.To(false), "T,F,nil"},
		{true, ptr.To(false), ptr.To(false), true, ptr.To(false), "T,F,F"},
		{true, ptr.To(false), ptr.To(true), true, ptr.To(true), "T,F,T"},
		{true, ptr.To(true), nil, true, ptr.To(true), "T,T,nil"},
		{true, ptr.To(true), ptr.To(false), true, ptr.To(false), "T,T,F"},
		{true, ptr.To(true), ptr.To(true), true, ptr.To(true), "T,T,T"},
		{false, nil, nil, true, ptr.To(false), "F,nil,nil"},
		{false, nil, ptr.To(false), true, ptr.To(false), "F,nil,F"},
		{false, nil, ptr.To(true), false, nil, "F,nil,T"},
		{false, ptr.To(false), nil, true, ptr.To(false), "F,F,nil"},
		{false, ptr.To(false), ptr.To(false), true, ptr.To(false), "F,F,F"},
		{false, ptr.To(false), ptr.To(true), false, nil, "F,F,T"},
	} {
		policies := psps(psp(permissive, "p", func(s *policy.PodSecurityPolicySpec) {
			s.AllowPrivilegeEscalation, s.DefaultAllowPrivilegeEscalation = ptr.To(tc.allow), tc.dflt
		}))
		for _, ephemeral := range []bool{false, true} {
			pod := podWith(func(p *api.Pod) { c0(p).AllowPrivilegeEscalation = tc.pod })
			where, path := "container", "spec.containers[0]"
			if ephemeral {
				toEphemeral(pod)
				where, path = "ephemeral container", "spec.ephemeralContainers[0]"
			}
			c := createCase{spec: 43, name: tc.description + " " + where, psps: policies, pod: pod}
			if tc.ok {
				c.wantPSP = "p"
				c.want = func(p *api.Pod) {
					allContainers(p, func(c *api.Container) { c.SecurityContext.AllowPrivilegeEscalation = tc.want })
				}
			} else {
				c.wantErrs = []string{path + ".securityContext.allowPrivilegeEscalation: Invalid value: true: " + privEscalationMsg}
			}
			t.Run(c.title(), c.run)
		}
	}

	t.Run("case 44 runtime class", func(t *testing.T) {
		for _, tc := range []struct {
			name      string
			strategy  *policy.RuntimeClassStrategyOptions
			pod       *string
			want      *string
			wantValid bool
		}{
			{"default foo, unset", &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"foo"}, DefaultRuntimeClassName: ptr.To("foo")}, nil, ptr.To("foo"), true},
			{"nil strategy, unset", nil, nil, nil, true},
			{"empty strategy, unset", &policy.RuntimeClassStrategyOptions{}, nil, nil, true},
			{"no default, unset", &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"foo"}}, nil, nil, true},
			{"default foo, tim", &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"*"}, DefaultRuntimeClassName: ptr.To("foo")}, ptr.To("tim"), ptr.To("tim"), true},
			{"default foo not allowing tim, tim", &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"foo"}, DefaultRuntimeClassName: ptr.To("foo")}, ptr.To("tim"), ptr.To("tim"), false},
			{"nil strategy, tim", nil, ptr.To("tim"), ptr.To("tim"), true},
			{"empty list, tim", &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{}}, ptr.To("tim"), ptr.To("tim"), false},
			{"*, tim", &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"*"}}, ptr.To("tim"), ptr.To("tim"), true},
			{"[good], unset", &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"good"}}, nil, nil, true},
			{"[good], good", &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"good"}}, ptr.To("good"), ptr.To("good"), true},
			{"[good], bad", &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"good"}}, ptr.To("bad"), ptr.To("bad"), false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				pr, err := podsecuritypolicy.NewProvider(psp(permissive, "p", func(s *policy.PodSecurityPolicySpec) { s.RuntimeClass = tc.strategy }))
				if err != nil {
					t.Fatal(err)
				}
				pod := goodPod()
				pod.Spec.RuntimeClassName = tc.pod
				s := podsecuritypolicy.NewSubject(pod)
				if got := pr.Mutates(&s); got != (tc.pod == nil && tc.want != nil) {
					t.Errorf("Mutates = %v", got)
				}
				pr.MutatePod(pod)
				if diff := cmp.Diff(tc.want, pod.Spec.RuntimeClassName); diff != "" {
					t.Errorf("runtimeClassName (-want +got):\n%s", diff)
				}
				errs := pr.ValidatePod(pod)
				if (len(errs) == 0) != tc.wantValid {
					t.Errorf("ValidatePod: %v, want valid=%v", errs, tc.wantValid)
				}
				if !tc.wantValid && (len(errs) != 1 || errs[0].Field != "spec.runtimeClassName" || errs[0].Type != field.ErrorTypeInvalid) {
					t.Errorf("ValidatePod: %v, want one Invalid error at spec.runtimeClassName", errs)
				}
			})
		}
	})

	t.Run("case 45 all-RunAsAny policy mutates nothing", func(t *testing.T) {
		pr, err := podsecuritypolicy.NewProvider(annotated(permissive(), seccompAllowed, "*"))
		if err != nil {
			t.Fatal(err)
		}
		for name, pod := range map[string]*api.Pod{
			"container security context nil": podWith(func(p *api.Pod) { p.Spec.Containers[0].SecurityContext = nil }),
			"container runAsNonRoot false": podWith(func(p *api.Pod) {
				p.Spec.Containers[0].SecurityContext = &api.SecurityContext{RunAsNonRoot: ptr.To(false)}
			}),
			"empty security contexts everywhere": goodPod(),
		} {
			mutated := pod.DeepCopy()
			if s := podsecuritypolicy.NewSubject(pod); pr.Mutates(&s) {
				t.Errorf("%s: Mutates = true", name)
			}
			pr.MutatePod(mutated)
			if diff := cmp.Diff(pod, mutated); diff != "" {
				t.Errorf("%s: MutatePod changed the pod (-before +after):\n%s", name, diff)
			}
			if errs := pr.ValidatePod(mutated); len(errs) != 0 {
				t.Errorf("%s: ValidatePod: %v", name, errs)
			}
		}
	})

	runCreates(t, []createCase{
		{
			spec: 46, name: "good and privileged container", psps: psps(restrictive()),
			pod: podWith(func(p *api.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, api.Container{Name: "bad", SecurityContext: &api.SecurityContext{Privileged: ptr.To(true)}})
			}),
			wantErrs: []string{"spec.containers[1].securityContext.privileged: Invalid value: true: Privileged containers are not allowed"},
		},
		{
			spec: 46, name: "contrast: good containers only", psps: psps(restrictive()), wantPSP: "restrictive", want: restrictiveDefaults,
			pod: podWith(func(p *api.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, api.Container{Name: "good", SecurityContext: &api.SecurityContext{Privileged: ptr.To(false)}})
			}),
		},
		{
			spec: 47, name: "procMount Unmasked", psps: psps(restrictive()),
			pod:      podWith(func(p *api.Pod) { c0(p).ProcMount = ptr.To(api.UnmaskedProcMount) }),
			wantErrs: []string{`spec.containers[0].securityContext.procMount: Invalid value: "Unmasked": ProcMountType is not allowed`},
		},
		{
			spec: 47, name: "procMount Unmasked allowed", wantPSP: "p", want: restrictiveDefaults,
			psps: psps(psp(restrictive, "p", func(s *policy.PodSecurityPolicySpec) {
				s.AllowedProcMountTypes = []api.ProcMountType{api.DefaultProcMount, api.UnmaskedProcMount}
			})),
			pod: podWith(func(p *api.Pod) { c0(p).ProcMount = ptr.To(api.UnmaskedProcMount) }),
		},
		{spec: 47, name: "procMount Default", psps: psps(restrictive()), wantPSP: "restrictive", want: restrictiveDefaults, pod: podWith(func(p *api.Pod) { c0(p).ProcMount = ptr.To(api.DefaultProcMount) })},
	})

	t.Run("case 48 audit annotations", func(t *testing.T) {
		p := newTestPlugin(nil, restrictive())
		pod := goodPod()
		r := newRequest(t, admission.Create, pod, nil, pod.Namespace, "", testUser)
		if err := r.admit(p); err != nil {
			t.Fatalf("Admit: %v", err)
		}
		r.wantAudit(t, "restrictive", "")
		if err := r.validate(p); err != nil {
			t.Fatalf("Validate: %v", err)
		}
		r.wantAudit(t, "restrictive", "restrictive")

		refused := goodPod()
		lineapi.SetPodHostNamespaces(&refused.Spec, lineapi.HostNamespaces{PID: true})
		r = newRequest(t, admission.Create, refused, nil, refused.Namespace, "", testUser)
		wantForbidden(t, "Admit", r.admit(p))
		wantForbidden(t, "Validate", r.validate(p))
		r.wantAudit(t, "", "")

		// A pod Admit accepted but that changed before Validate (as a later
		// mutating plugin might) gets only admit-policy.
		pod = goodPod()
		r = newRequest(t, admission.Create, pod, nil, pod.Namespace, "", testUser)
		if err := r.admit(p); err != nil {
			t.Fatalf("Admit: %v", err)
		}
		c0(pod).Privileged = ptr.To(true)
		wantForbidden(t, "Validate", r.validate(p), "Privileged containers are not allowed")
		r.wantAudit(t, "restrictive", "")
	})
}
