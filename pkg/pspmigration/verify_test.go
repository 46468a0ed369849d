// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package pspmigration

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/openapi/openapitest"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"

	policyv1beta1 "github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
	pspfake "github.com/turnstile-k8s/turnstile/pkg/client/clientset/versioned/fake"
	pspengine "github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy"
)

// withTestdata is the examples and testdata/policies.yaml: every field
// the conversion handles, granted cluster-wide and in one namespace.
func withTestdata(t testing.TB) ([]runtime.Object, []runtime.Object) {
	return decode(t, "../../examples/podsecuritypolicy/policies.yaml", "../../examples/podsecuritypolicy/rbac.yaml", "testdata/policies.yaml")
}

// verifySetup loads the examples and testdata/policies.yaml, converts
// them for three namespaces (kube-system, team, apps), and loads the
// replacement into a Judge that the test closes.
func verifySetup(t testing.TB) (*pspengine.Decider, *RBAC, *Judge) {
	t.Helper()
	decider, rbac := load(t, withTestdata)
	report := &Report{Namespaces: []Namespace{
		{Name: "kube-system", Enforce: psaapi.LevelPrivileged},
		{Name: "team", Enforce: psaapi.LevelPrivileged},
		{Name: "apps", Enforce: psaapi.LevelRestricted},
	}}
	r, err := Convert(decider.Policies(), report, true)
	if err != nil {
		t.Fatal(err)
	}
	judge, err := NewJudge(r, upstreamSchemas(t), rbac.Authorizer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(judge.Close)
	return decider, rbac, judge
}

// The generated replacement, run by upstream's admission policy plugins
// and Pod Security Admission, decides every corpus pod of every policy as
// PodSecurityPolicy does, for each principal each policy is granted to;
// only Pod Security Admission's per-namespace level may differ, and is
// named.
func TestVerify(t *testing.T) {
	t.Parallel() // each compiles its own replacement: seconds of CPU
	ctx := context.Background()
	decider, rbac, judge := verifySetup(t)
	v, err := Verify(ctx, decider, judge, rbac, nil, []string{"kube-system", "team", "apps"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	unavoidable := 0
	for _, d := range v.Disagreements {
		if d.Unavoidable != "" {
			unavoidable++
			continue
		}
		t.Errorf("%s in %s as %s:\n  PodSecurityPolicy: %s\n  replacement: %s %v", d.Case, d.Namespace, d.Requester, d.PodSecurityPolicy, d.Replacement, d.Fields)
	}
	t.Logf("%d cases, %d unavoidable disagreements", v.Cases, unavoidable)
}

// The replacement asks the authorizer at every request, as
// PodSecurityPolicy does, so RBAC changed after the conversion counts: a
// grant revoked (its RoleBinding deleted, or its namespace made again), a
// grant made to someone new, for a user and for a pod's service account.
// Each is decided both ways, against the RBAC of the moment.
func TestReplacementFollowsRBAC(t *testing.T) {
	t.Parallel() // each compiles its own replacement: seconds of CPU
	ctx := context.Background()
	policyObjects, rbacObjects := withTestdata(t)
	rbacOf := func(objects ...runtime.Object) authorizer.Authorizer {
		r, err := ReadRBAC(ctx, fake.NewClientset(objects...))
		if err != nil {
			t.Fatal(err)
		}
		return r.Authorizer
	}
	authz := &switchable{current: rbacOf(rbacObjects...)}
	policies, err := Policies(ctx, pspfake.NewSimpleClientset(policyObjects...))
	if err != nil {
		t.Fatal(err)
	}
	decider, _ := pspengine.NewDecider(policies, authz.authorizer())
	r, err := Convert(decider.Policies(), &Report{Namespaces: []Namespace{{Name: "team", Enforce: psaapi.LevelPrivileged}}}, true)
	if err != nil {
		t.Fatal(err)
	}
	judge, err := NewJudge(r, upstreamSchemas(t), authz.authorizer())
	if err != nil {
		t.Fatal(err)
	}
	defer judge.Close()

	// testdata grants tenant (hostPath under /srv) in team to alice and
	// to the service account builder, through the extensions group.
	var without []runtime.Object // the RBAC with team's grant gone
	for _, o := range rbacObjects {
		if b, ok := o.(*rbacv1.RoleBinding); !ok || b.Namespace != "team" {
			without = append(without, o)
		}
	}
	bob := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bob", Namespace: "team"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "psp:team"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "bob"}},
	}
	hostPath := func(sa string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "srv"}, Spec: corev1.PodSpec{
			ServiceAccountName: sa,
			Containers:         []corev1.Container{{Name: "c", Image: "x", SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000)}}},
			Volumes:            []corev1.Volume{{Name: "srv", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/data"}}}},
		}}
		return p
	}
	member := func(name string) user.Info {
		return &user.DefaultInfo{Name: name, Groups: []string{user.AllAuthenticated}}
	}
	for _, step := range []struct {
		name string
		rbac []runtime.Object
		// admitted are the cases both must admit; the others both must
		// refuse.
		admitted []string
	}{
		{"as converted", rbacObjects, []string{"alice", "builder"}},
		{"team's grant revoked (or team made again)", without, nil},
		{"a grant made to bob", append(slices.Clone(without), bob), []string{"bob"}},
	} {
		authz.set(rbacOf(step.rbac...))
		for _, c := range []struct {
			name      string
			requester user.Info
			pod       *corev1.Pod
		}{
			{"alice", member("alice"), hostPath("")},
			{"bob", member("bob"), hostPath("")},
			{"builder", member("ci"), hostPath("builder")},
		} {
			v := &Verification{}
			if err := v.add(compare(ctx, decider, judge, c.name, "team", c.requester, true, c.pod)); err != nil {
				t.Fatal(err)
			}
			for _, d := range v.Disagreements {
				t.Errorf("%s: %s's pod: PodSecurityPolicy %s, the replacement %s", step.name, c.name, d.PodSecurityPolicy, d.Replacement)
			}
			verdict, err := judge.Decide(ctx, "team", c.requester, c.pod)
			if err != nil {
				t.Fatal(err)
			}
			if want := slices.Contains(step.admitted, c.name); (verdict.Refusal == "") != want {
				t.Errorf("%s: %s's hostPath pod: replacement refusal %q, want admitted %t", step.name, c.name, verdict.Refusal, want)
			}
		}
	}
}

// A pod that passes the checks of 100 policies that none of its principals
// may use, before the one that admits it (the last by name, usable by the
// pod's service account through the extensions group, the last of the four
// authorizer calls), is admitted by that policy as PodSecurityPolicy admits
// it, created by someone who may use nothing and by the controller of a
// Deployment; with the grant gone it is refused, as PodSecurityPolicy
// refuses it. No request runs out of CEL's budget, as one policy that
// tried them all did past six.
func TestManyUnusablePolicies(t *testing.T) {
	t.Parallel() // each compiles its own replacement: seconds of CPU
	ctx := context.Background()
	permissive := func(name string) *policyv1beta1.PodSecurityPolicy {
		return &policyv1beta1.PodSecurityPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: policyv1beta1.PodSecurityPolicySpec{
			Privileged: true, Volumes: []policyv1beta1.FSType{policyv1beta1.All},
			SELinux:            policyv1beta1.SELinuxStrategyOptions{Rule: policyv1beta1.SELinuxStrategyRunAsAny},
			RunAsUser:          policyv1beta1.RunAsUserStrategyOptions{Rule: policyv1beta1.RunAsUserStrategyRunAsAny},
			SupplementalGroups: policyv1beta1.SupplementalGroupsStrategyOptions{Rule: policyv1beta1.SupplementalGroupsStrategyRunAsAny},
			FSGroup:            policyv1beta1.FSGroupStrategyOptions{Rule: policyv1beta1.FSGroupStrategyRunAsAny},
		}}
	}
	// zz sets a default, so that the pod comes out changed.
	usable := permissive("zz")
	usable.Spec.DefaultAllowPrivilegeEscalation = ptr.To(false)
	objects := []runtime.Object{usable}
	for i := range 100 {
		objects = append(objects, permissive(fmt.Sprintf("a%03d", i)))
	}
	policies, err := Policies(ctx, pspfake.NewSimpleClientset(objects...))
	if err != nil {
		t.Fatal(err)
	}
	grant := []runtime.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "use-zz"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"extensions"}, Resources: []string{"podsecuritypolicies"}, Verbs: []string{"use"}, ResourceNames: []string{"zz"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "use-zz", Namespace: "t"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "use-zz"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "builder", Namespace: "t"}}},
	}
	authz := &switchable{}
	decider, _ := pspengine.NewDecider(policies, authz.authorizer())
	r, err := Convert(decider.Policies(), &Report{}, true)
	if err != nil {
		t.Fatal(err)
	}
	judge, err := NewJudge(r, upstreamSchemas(t), authz.authorizer())
	if err != nil {
		t.Fatal(err)
	}
	defer judge.Close()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{ServiceAccountName: "builder",
		Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	requesters := []user.Info{
		&user.DefaultInfo{Name: "someone", Groups: []string{user.AllAuthenticated}},
		&user.DefaultInfo{Name: "system:serviceaccount:kube-system:replicaset-controller",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", user.AllAuthenticated}},
	}
	for _, granted := range []bool{true, false} {
		rbacObjects := grant
		if !granted {
			rbacObjects = nil
		}
		rbac, err := ReadRBAC(ctx, fake.NewClientset(rbacObjects...))
		if err != nil {
			t.Fatal(err)
		}
		authz.set(rbac.Authorizer)
		for _, requester := range requesters {
			v := &Verification{}
			if err := v.add(compare(ctx, decider, judge, "100 unusable policies first", "t", requester, true, pod)); err != nil {
				t.Fatal(err)
			}
			for _, d := range v.Disagreements {
				t.Errorf("granted %t, as %s: PodSecurityPolicy: %s; replacement: %s %v", granted, d.Requester, d.PodSecurityPolicy, d.Replacement, d.Fields)
			}
			verdict, err := judge.Decide(ctx, "t", requester, pod)
			if err != nil {
				t.Fatal(err)
			}
			if got := verdict.Pod.Annotations["kubernetes.io/psp"]; granted && got != "zz" {
				t.Errorf("as %s: kubernetes.io/psp %q, want zz (refusal %q)", requester.GetName(), got, verdict.Refusal)
			}
			t.Logf("granted %t, as %s: kubernetes.io/psp %q, refusal %q", granted, requester.GetName(), verdict.Pod.Annotations["kubernetes.io/psp"], verdict.Refusal)
			if strings.Contains(verdict.Refusal, "budget") {
				t.Errorf("as %s: %s", requester.GetName(), verdict.Refusal)
			}
		}
	}
}

// switchable is an authorizer whose RBAC a test replaces.
type switchable struct {
	mu      sync.Mutex
	current authorizer.Authorizer
}

func (s *switchable) set(a authorizer.Authorizer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current = a
}

// authorizer asks whichever RBAC is current.
func (s *switchable) authorizer() authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		s.mu.Lock()
		current := s.current
		s.mu.Unlock()
		return current.Authorize(ctx, a)
	})
}

// upstreamSchemas serves the OpenAPI v3 documents k8s.io/kubernetes
// publishes for its release (api/openapi-spec/v3), the ones its apiserver
// serves, from the module this tree builds against.
func upstreamSchemas(t testing.TB) openapi.Client {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatalf("finding the k8s.io/kubernetes module: %v", err)
	}
	return openapitest.NewFileClient(filepath.Join(strings.TrimSpace(string(out)), "api", "openapi-spec", "v3"))
}

// Where the cluster serves no MutatingAdmissionPolicies, convert writes no
// mutating policy and says, per workload, what its manifest must set; and
// with no policy to convert it writes nothing.
func TestConvertWithoutMutatingPolicies(t *testing.T) {
	decider, _ := load(t, examples)
	report := &Report{
		Namespaces: []Namespace{{Name: "apps", Enforce: psaapi.LevelRestricted}},
		Workloads:  []Entry{{Kind: "Deployment", Namespace: "apps", Name: "web", Changes: []string{"spec.containers[0].securityContext.runAsNonRoot"}}},
	}
	r, err := Convert(decider.Policies(), report, false)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := WriteYAML(&out, r); err != nil {
		t.Fatal(err)
	}
	yaml := out.String()
	for _, want := range []string{
		"#   Deployment/apps/web: spec.containers[0].securityContext.runAsNonRoot\n",
		"kind: ValidatingAdmissionPolicy\n",
		"kind: ValidatingAdmissionPolicyBinding\n",
		"pod-security.kubernetes.io/enforce: restricted\n",
	} {
		if !strings.Contains(yaml, want) {
			t.Errorf("convert's output lacks %q:\n%s", want, yaml)
		}
	}
	if strings.Contains(yaml, "MutatingAdmissionPolicy") {
		t.Errorf("a mutating policy for a cluster that serves none:\n%s", yaml)
	}
	if _, err := Convert(nil, report, true); err == nil || !strings.Contains(err.Error(), "no PodSecurityPolicy can be applied") {
		t.Errorf("converting no policy: %v", err)
	}
}

// BenchmarkVerify is one kubectl psp verify of the example policies and
// testdata/policies.yaml (1,928 decisions, each made twice), the
// replacement already loaded.
func BenchmarkVerify(b *testing.B) {
	ctx := context.Background()
	decider, rbac, judge := verifySetup(b)
	for b.Loop() {
		if _, err := Verify(ctx, decider, judge, rbac, nil, []string{"kube-system", "team", "apps"}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// add counts a creation that compare decided, with its disagreement.
func (v *Verification) add(d *Disagreement, err error) error {
	v.Cases++
	if d != nil {
		v.Disagreements = append(v.Disagreements, *d)
	}
	return err
}

// A seccomp profile of a type the annotations have no name for (OCI,
// Kubernetes v1.38's profile from a registry) is admitted only by a policy
// that allows every profile, by PodSecurityPolicy and by the replacement
// alike; a policy that allows none refuses it, where v1.24's rules would
// have taken it for no profile at all.
func TestOCISeccompProfile(t *testing.T) {
	t.Parallel() // each compiles its own replacement: seconds of CPU
	ctx := context.Background()
	policy := func(name, profiles string) *policyv1beta1.PodSecurityPolicy {
		p := &policyv1beta1.PodSecurityPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: policyv1beta1.PodSecurityPolicySpec{
			Volumes:            []policyv1beta1.FSType{policyv1beta1.All},
			SELinux:            policyv1beta1.SELinuxStrategyOptions{Rule: policyv1beta1.SELinuxStrategyRunAsAny},
			RunAsUser:          policyv1beta1.RunAsUserStrategyOptions{Rule: policyv1beta1.RunAsUserStrategyRunAsAny},
			SupplementalGroups: policyv1beta1.SupplementalGroupsStrategyOptions{Rule: policyv1beta1.SupplementalGroupsStrategyRunAsAny},
			FSGroup:            policyv1beta1.FSGroupStrategyOptions{Rule: policyv1beta1.FSGroupStrategyRunAsAny},
		}}
		if profiles != "" {
			p.Annotations = map[string]string{"seccomp.security.alpha.kubernetes.io/allowedProfileNames": profiles}
		}
		return p
	}
	use := func(policy string, subject rbacv1.Subject) []runtime.Object {
		return []runtime.Object{
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "use-" + policy}, Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{"policy"}, Resources: []string{"podsecuritypolicies"}, Verbs: []string{"use"}, ResourceNames: []string{policy}}}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "use-" + policy, Namespace: "t"},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "use-" + policy}, Subjects: []rbacv1.Subject{subject}},
		}
	}
	objects := func(testing.TB) ([]runtime.Object, []runtime.Object) {
		return []runtime.Object{policy("any-profile", "*"), policy("no-profile", ""), policy("runtime-default", "runtime/default")},
			append(append(use("no-profile", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:authenticated"}),
				use("runtime-default", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:authenticated"})...),
				use("any-profile", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "User", Name: "admin"})...)
	}
	decider, rbac := load(t, objects)
	r, err := Convert(decider.Policies(), &Report{Namespaces: []Namespace{{Name: "t", Enforce: psaapi.LevelPrivileged}}}, true)
	if err != nil {
		t.Fatal(err)
	}
	judge, err := NewJudge(r, upstreamSchemas(t), rbac.Authorizer)
	if err != nil {
		t.Fatal(err)
	}
	defer judge.Close()
	oci := corev1.SeccompProfile{Type: "OCI"}
	for _, tc := range []struct {
		name  string
		who   string
		pod   func(*corev1.Pod)
		admit string // the policy that admits it, "" for refused
	}{
		{"the pod's profile, as a developer", "dev", func(p *corev1.Pod) { p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &oci} }, ""},
		{"a container's profile, as a developer", "dev", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SeccompProfile: &oci}
		}, ""},
		{"the pod's profile, as an admin", "admin", func(p *corev1.Pod) { p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &oci} }, "any-profile"},
		{"no profile, as a developer", "dev", func(*corev1.Pod) {}, "no-profile"},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		tc.pod(pod)
		requester := &user.DefaultInfo{Name: tc.who, Groups: []string{user.AllAuthenticated}}
		v := &Verification{}
		if err := v.add(compare(ctx, decider, judge, tc.name, "t", requester, true, pod)); err != nil {
			t.Fatal(err)
		}
		for _, d := range v.Disagreements {
			t.Errorf("%s: PodSecurityPolicy %s, the replacement %s %v", tc.name, d.PodSecurityPolicy, d.Replacement, d.Fields)
		}
		internal := &api.Pod{}
		if err := corev1conversion.Convert_v1_Pod_To_core_Pod(pod, internal, nil); err != nil {
			t.Fatal(err)
		}
		d, err := decider.Decide(ctx, "t", requester, internal)
		if err != nil {
			t.Fatal(err)
		}
		if d.Policy != tc.admit {
			t.Errorf("%s: PodSecurityPolicy admitted it by %q (%s), want %q", tc.name, d.Policy, d.Refusal, tc.admit)
		}
	}
}
