// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package pspmigration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"

	policyv1beta1 "github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
	pspfake "github.com/turnstile-k8s/turnstile/pkg/client/clientset/versioned/fake"
	pspscheme "github.com/turnstile-k8s/turnstile/pkg/client/clientset/versioned/scheme"
	pspengine "github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy"
)

// examples decodes examples/podsecuritypolicy: the policies, and the RBAC
// objects for a fake cluster.
func examples(t testing.TB) ([]runtime.Object, []runtime.Object) {
	return decode(t, "../../examples/podsecuritypolicy/policies.yaml", "../../examples/podsecuritypolicy/rbac.yaml")
}

// decode reads YAML files of policies and RBAC objects.
func decode(t testing.TB, files ...string) ([]runtime.Object, []runtime.Object) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := pspscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	var policies, rbac []runtime.Object
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			obj, _, err := decoder.Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if _, ok := obj.(*policyv1beta1.PodSecurityPolicy); ok {
				policies = append(policies, obj)
			} else {
				rbac = append(rbac, obj)
			}
		}
	}
	return policies, rbac
}

// newDecider reads the policies and RBAC as kubectl psp does, from fake
// clients holding the examples.
func newDecider(t testing.TB) *pspengine.Decider {
	t.Helper()
	d, _ := load(t, examples)
	return d
}

// load reads policies and RBAC as kubectl psp does, from fake clients
// holding what objects gives.
func load(t testing.TB, objects func(testing.TB) ([]runtime.Object, []runtime.Object)) (*pspengine.Decider, *RBAC) {
	t.Helper()
	policyObjects, rbacObjects := objects(t)
	policies, err := Policies(context.Background(), pspfake.NewSimpleClientset(policyObjects...))
	if err != nil {
		t.Fatal(err)
	}
	rbac, err := ReadRBAC(context.Background(), fake.NewClientset(rbacObjects...))
	if err != nil {
		t.Fatal(err)
	}
	d, skipped := pspengine.NewDecider(policies, rbac.Authorizer)
	if len(skipped) != 0 {
		t.Fatalf("policies skipped: %v", skipped)
	}
	return d, rbac
}

func newEvaluator(t testing.TB) psapolicy.Evaluator {
	t.Helper()
	e, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func controlledBy(uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "X", Name: "owner", UID: uid, Controller: ptr.To(true)}}
}

func template(edit func(*corev1.PodSpec)) corev1.PodTemplateSpec {
	t := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if edit != nil {
		edit(&t.Spec)
	}
	return t
}

// Collect finds the top-level workloads of every kind, and gives each the
// policies its pods' kubernetes.io/psp name, through ReplicaSets and Jobs.
func TestCollect(t *testing.T) {
	meta := func(name string, uid types.UID, owner types.UID) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid}
		if owner != "" {
			m.OwnerReferences = controlledBy(owner)
		}
		return m
	}
	pod := func(name string, uid, owner types.UID, policy string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: meta(name, uid, owner), Spec: template(nil).Spec}
		if policy != "" {
			p.Annotations = map[string]string{"kubernetes.io/psp": policy}
		}
		return p
	}
	client := fake.NewClientset(
		&appsv1.Deployment{ObjectMeta: meta("web", "d1", ""), Spec: appsv1.DeploymentSpec{Template: template(nil)}},
		&appsv1.ReplicaSet{ObjectMeta: meta("web-1", "r1", "d1"), Spec: appsv1.ReplicaSetSpec{Template: template(nil)}},
		&appsv1.ReplicaSet{ObjectMeta: meta("web-2", "r2", "d1"), Spec: appsv1.ReplicaSetSpec{Template: template(nil)}},
		pod("web-1-a", "p1", "r1", "restricted"),
		pod("web-2-a", "p2", "r2", "baseline"),
		pod("web-2-b", "p3", "r2", "restricted"),
		&appsv1.ReplicaSet{ObjectMeta: meta("orphan", "r3", "gone"), Spec: appsv1.ReplicaSetSpec{Template: template(nil)}},
		&batchv1.CronJob{ObjectMeta: meta("nightly", "c1", ""), Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: template(nil)}}}},
		&batchv1.Job{ObjectMeta: meta("nightly-1", "j1", "c1"), Spec: batchv1.JobSpec{Template: template(nil)}},
		pod("nightly-1-a", "p4", "j1", "privileged"),
		&appsv1.StatefulSet{ObjectMeta: meta("db", "s1", ""), Spec: appsv1.StatefulSetSpec{Template: template(nil)}},
		&appsv1.DaemonSet{ObjectMeta: meta("agent", "ds1", ""), Spec: appsv1.DaemonSetSpec{Template: template(nil)}},
		&corev1.ReplicationController{ObjectMeta: meta("legacy", "rc1", ""), Spec: corev1.ReplicationControllerSpec{Template: ptr.To(template(nil))}},
		&corev1.ReplicationController{ObjectMeta: meta("no-template", "rc2", "")},
		pod("bare", "p5", "", "restricted"),
	)
	workloads, err := Collect(context.Background(), client, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range workloads {
		got = append(got, fmt.Sprintf("%s %s %v", w.Ref(), w.Creator, w.Admitted))
	}
	want := []string{
		"CronJob/ns/nightly system:serviceaccount:kube-system:job-controller [privileged]",
		"DaemonSet/ns/agent system:serviceaccount:kube-system:daemon-set-controller []",
		"Deployment/ns/web system:serviceaccount:kube-system:replicaset-controller [baseline restricted]",
		"Pod/ns/bare  [restricted]",
		"ReplicaSet/ns/orphan system:serviceaccount:kube-system:replicaset-controller []",
		"ReplicationController/ns/legacy system:serviceaccount:kube-system:replication-controller []",
		"StatefulSet/ns/db system:serviceaccount:kube-system:statefulset-controller []",
	}
	if !slices.Equal(got, want) {
		t.Errorf("workloads:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// Each workload gets the policy the plugin's own procedure picks for its
// creator, the fields the defaults set, and the level upstream's checks
// give the pod as admitted; each namespace the level that admits all of it
// that PodSecurityPolicy admits now.
func TestBuild(t *testing.T) {
	workloads := []*Workload{
		{Kind: "Deployment", Namespace: "team-a", Name: "web", Creator: "system:serviceaccount:kube-system:replicaset-controller", Template: template(nil)},
		{Kind: "Deployment", Namespace: "team-a", Name: "root", Creator: "system:serviceaccount:kube-system:replicaset-controller",
			Template: template(func(s *corev1.PodSpec) {
				s.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}
			})},
		{Kind: "DaemonSet", Namespace: "kube-system", Name: "proxy", Creator: "system:serviceaccount:kube-system:daemon-set-controller",
			Template: template(func(s *corev1.PodSpec) { s.ServiceAccountName, s.HostNetwork = "kube-proxy", true })},
	}
	r, err := Build(context.Background(), workloads, newDecider(t), newEvaluator(t))
	if err != nil {
		t.Fatal(err)
	}
	type verdict struct {
		policy  string
		level   psaapi.Level
		changes int
		refused bool
	}
	want := map[string]verdict{
		"web":   {policy: "restricted", level: psaapi.LevelRestricted, changes: 6},
		"root":  {level: psaapi.LevelBaseline, refused: true}, // restricted refuses root; nobody in team-a has baseline
		"proxy": {policy: "privileged", level: psaapi.LevelPrivileged},
	}
	for _, e := range r.Workloads {
		w := want[e.Name]
		got := verdict{policy: e.Policy, level: e.Level, changes: len(e.Changes), refused: e.Refusal != ""}
		if got != w {
			t.Errorf("%s: %+v (changes %v, refusal %q, violations %v), want %+v", e.Name, got, e.Changes, e.Refusal, e.Violations, w)
		}
	}
	namespaces := map[string]Namespace{}
	for _, ns := range r.Namespaces {
		namespaces[ns.Name] = ns
	}
	// root is refused now, so restricted, which refuses it too, is the
	// label.
	if ns := namespaces["team-a"]; ns.Enforce != psaapi.LevelRestricted || ns.Stricter != "" || len(ns.Breaks) != 0 || ns.Workloads != 2 {
		t.Errorf("team-a: %+v", ns)
	}
	if ns := namespaces["kube-system"]; ns.Enforce != psaapi.LevelPrivileged || len(ns.Breaks) != 1 {
		t.Errorf("kube-system: %+v", ns)
	}
}

// A cluster without the API, and RBAC the user cannot read, are errors
// that say what is missing.
func TestLoadErrors(t *testing.T) {
	psp := pspfake.NewSimpleClientset()
	psp.PrependReactor("list", "podsecuritypolicies", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "policy", Resource: "podsecuritypolicies"}, "")
	})
	if _, err := Policies(context.Background(), psp); err == nil || !strings.Contains(err.Error(), "the cluster does not serve policy/v1beta1 podsecuritypolicies") {
		t.Errorf("without the API: %v", err)
	}
	kube := fake.NewClientset()
	kube.PrependReactor("list", "clusterrolebindings", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}, "", errors.New("no"))
	})
	if _, err := ReadRBAC(context.Background(), kube); err == nil || !strings.Contains(err.Error(), "cannot read RBAC (clusterrolebindings)") {
		t.Errorf("without RBAC: %v", err)
	}
}

// The cost of judging a cluster of 1,000 workloads (100 in each of 10
// namespaces, templates of three kinds), once its objects are read.
func BenchmarkBuild1000(b *testing.B) {
	decider, evaluator := newDecider(b), newEvaluator(b)
	var workloads []*Workload
	for i := range 1000 {
		w := &Workload{Kind: "Deployment", Namespace: fmt.Sprintf("team-%d", i%10), Name: fmt.Sprintf("w%d", i),
			Creator: "system:serviceaccount:kube-system:replicaset-controller", Template: template(nil)}
		switch i % 3 {
		case 1:
			w.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}
		case 2:
			w.Template.Spec.HostNetwork = true
		}
		workloads = append(workloads, w)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(ctx, workloads, decider, evaluator); err != nil {
			b.Fatal(err)
		}
	}
}
