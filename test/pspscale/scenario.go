// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package pspscale builds the clusters on which PodSecurityPolicy is
// measured at scale, side by side with v1.24's own plugin (test/psp124):
// a multi-tenant cluster of 1 to 1,000 team policies (pkg/pspmigration/
// teams) among 100 or 10,000 other RoleBindings and ClusterRoleBindings, and the
// pod of the last team by name, created by three requesters. Both sides
// read the same scenarios, ours in-process and v1.24's from the JSON files
// Write leaves, so that they decide the same objects. Only benchmarks and
// make bench-psp import it.
package pspscale

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/turnstile-k8s/turnstile/pkg/pspmigration/teams"
)

// Sizes are the numbers of policies, and of bindings besides the policies'
// grants, the benchmark runs: each at each.
var (
	PolicyCounts  = []int{1, 10, 100, 1000}
	BindingCounts = []int{100, 10000}
)

// Scenario is one cluster and the pod creations decided on it.
type Scenario struct {
	Name      string           `json:"name"`    // policies=N/bindings=M
	Objects   []runtime.Object `json:"objects"` // each in its wire form, with its kind
	Creations []Creation       `json:"creations"`
}

// Creation is a pod created by a requester.
type Creation struct {
	// Requester is "service account" (the team's own, creating its pod),
	// "controller" (the ReplicaSet controller, which may use no policy,
	// creating the team's pod) or "admin" (a member of system:masters,
	// bound to cluster-admin, which may use every policy).
	Requester string      `json:"requester"`
	User      User        `json:"user"`
	Pod       *corev1.Pod `json:"pod"`
}

// User is the requester as the authenticator gave it.
type User struct {
	Name   string   `json:"name"`
	Groups []string `json:"groups"`
}

// Requesters are the requesters of every scenario, in order.
var Requesters = []string{"service account", "controller", "admin"}

// Scenarios are every number of policies at every number of bindings.
func Scenarios() []Scenario {
	var out []Scenario
	for _, p := range PolicyCounts {
		for _, b := range BindingCounts {
			out = append(out, New(p, b))
		}
	}
	return out
}

// New is a cluster of n teams' policies with their grants and bindings
// more RoleBindings and ClusterRoleBindings, and the last team's
// restrictive pod created by each requester. Every team's
// service account may use its team's policy and the one before it (two
// policies; one when n is 1), through RoleBindings in its namespace; a
// ClusterRoleBinding makes system:masters cluster-admin; the other bindings
// grant something else (a ClusterRole that reads pods), half
// ClusterRoleBindings to users and half RoleBindings across the teams'
// namespaces, as a cluster with thousands of users has them.
func New(n, bindings int) Scenario {
	s := Scenario{Name: fmt.Sprintf("policies=%d/bindings=%d", n, bindings)}
	for _, p := range teams.Policies(n) {
		p.TypeMeta = metav1.TypeMeta{APIVersion: "policy/v1beta1", Kind: "PodSecurityPolicy"}
		s.Objects = append(s.Objects, p)
	}
	grants := teams.RBAC(n)
	last := teams.Of(n-1, n)
	if n > 1 {
		grants = append(grants, binding("RoleBinding", "psp:"+teams.Of(n-2, n).Policy+":next", last.Namespace, "psp:"+teams.Of(n-2, n).Policy,
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: last.ServiceAccount, Namespace: last.Namespace}))
	}
	grants = append(grants,
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
		},
		binding("ClusterRoleBinding", "cluster-admin", "", "cluster-admin", rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:masters"}))
	var namespaces []string
	for i := range n {
		namespaces = append(namespaces, teams.Of(i, n).Namespace)
	}
	grants = append(grants, OtherBindings(bindings, namespaces)...)
	s.Objects = append(s.Objects, grants...)
	pod := teams.RestrictivePod(last)
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	for _, r := range Requesters {
		c := Creation{Requester: r, Pod: pod}
		switch r {
		case "service account":
			c.User = User{"system:serviceaccount:" + last.Namespace + ":" + last.ServiceAccount,
				[]string{"system:serviceaccounts", "system:serviceaccounts:" + last.Namespace, "system:authenticated"}}
		case "controller":
			c.User = User{"system:serviceaccount:kube-system:replicaset-controller",
				[]string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
		case "admin":
			c.User = User{"admin", []string{"system:masters", "system:authenticated"}}
		}
		s.Creations = append(s.Creations, c)
	}
	return s
}

// OtherBindings are n bindings that grant something other than a policy,
// as a cluster with thousands of users has them: a ClusterRole that reads
// pods, first, then bindings of it to users, half ClusterRoleBindings and
// half RoleBindings across namespaces. make bench-psp's clusters have them,
// and so does make bench's with -psp-bindings.
func OtherBindings(n int, namespaces []string) []runtime.Object {
	if n == 0 {
		return nil
	}
	out := []runtime.Object{&rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}, Verbs: []string{"get", "list", "watch"}}},
	}}
	for i := range n {
		user := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: fmt.Sprintf("user-%05d", i)}
		if i%2 == 0 {
			out = append(out, binding("ClusterRoleBinding", fmt.Sprintf("pod-reader:%05d", i), "", "pod-reader", user))
		} else {
			out = append(out, binding("RoleBinding", fmt.Sprintf("pod-reader:%05d", i), namespaces[i%len(namespaces)], "pod-reader", user))
		}
	}
	return out
}

func binding(kind, name, namespace, clusterRole string, subject rbacv1.Subject) runtime.Object {
	meta := metav1.ObjectMeta{Name: name, Namespace: namespace}
	typ := metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: kind}
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole}
	if kind == "RoleBinding" {
		return &rbacv1.RoleBinding{TypeMeta: typ, ObjectMeta: meta, RoleRef: ref, Subjects: []rbacv1.Subject{subject}}
	}
	return &rbacv1.ClusterRoleBinding{TypeMeta: typ, ObjectMeta: meta, RoleRef: ref, Subjects: []rbacv1.Subject{subject}}
}

// Write leaves each scenario in dir as <n>.json, in the order given, for
// v1.24's side (test/psp124), which decodes the objects with its own scheme.
func Write(dir string, scenarios []Scenario) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, s := range scenarios {
		data, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d.json", i)), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
