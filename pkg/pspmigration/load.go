// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package pspmigration

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"

	policyv1beta1 "github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
	pspclient "github.com/turnstile-k8s/turnstile/pkg/client/clientset/versioned"
)

// Policies lists the cluster's PodSecurityPolicies, saying what to do when
// the cluster does not serve them.
func Policies(ctx context.Context, c pspclient.Interface) ([]*policyv1beta1.PodSecurityPolicy, error) {
	list, err := c.PolicyV1beta1().PodSecurityPolicies().List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, errors.New("the cluster does not serve policy/v1beta1 podsecuritypolicies: kubectl psp needs Turnstile's kube-apiserver with the PodSecurityPolicy admission plugin enabled, or --runtime-config=policy/v1beta1/podsecuritypolicies=true")
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("cannot list podsecuritypolicies: %w", err)
	case err != nil:
		return nil, fmt.Errorf("listing podsecuritypolicies: %w", err)
	}
	out := make([]*policyv1beta1.PodSecurityPolicy, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// RBAC is the cluster's RBAC as kubectl psp reads it.
type RBAC struct {
	// Authorizer is upstream's RBAC authorizer over the cluster's Roles,
	// ClusterRoles and bindings, as the apiserver's answers `use` (an
	// apiserver with webhook authorization may answer more).
	Authorizer authorizer.Authorizer
	// Subjects are the principals the bindings name, by the namespace of
	// their RoleBinding ("" for ClusterRoleBindings): the only ones RBAC
	// can grant anything to.
	Subjects map[string][]Principal
}

// ReadRBAC reads the cluster's RBAC. Reading it needs list on all four
// kinds cluster-wide; without it the report could not tell who may use
// which policy, so it says which it could not read.
func ReadRBAC(ctx context.Context, c kubernetes.Interface) (*RBAC, error) {
	indexer := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	roles, roleBindings, clusterRoles, clusterRoleBindings := indexer(), indexer(), indexer(), indexer()
	opts := metav1.ListOptions{}
	r, err := c.RbacV1().Roles("").List(ctx, opts)
	if err := fill(roles, "roles", r, err, func(l *rbacv1.RoleList) []rbacv1.Role { return l.Items }); err != nil {
		return nil, err
	}
	rb, err := c.RbacV1().RoleBindings("").List(ctx, opts)
	if err := fill(roleBindings, "rolebindings", rb, err, func(l *rbacv1.RoleBindingList) []rbacv1.RoleBinding { return l.Items }); err != nil {
		return nil, err
	}
	cr, err := c.RbacV1().ClusterRoles().List(ctx, opts)
	if err := fill(clusterRoles, "clusterroles", cr, err, func(l *rbacv1.ClusterRoleList) []rbacv1.ClusterRole { return l.Items }); err != nil {
		return nil, err
	}
	crb, err := c.RbacV1().ClusterRoleBindings().List(ctx, opts)
	if err := fill(clusterRoleBindings, "clusterrolebindings", crb, err, func(l *rbacv1.ClusterRoleBindingList) []rbacv1.ClusterRoleBinding { return l.Items }); err != nil {
		return nil, err
	}
	out := &RBAC{
		Authorizer: rbac.New(
			&rbac.RoleGetter{Lister: rbaclisters.NewRoleLister(roles)},
			&rbac.RoleBindingLister{Lister: rbaclisters.NewRoleBindingLister(roleBindings)},
			&rbac.ClusterRoleGetter{Lister: rbaclisters.NewClusterRoleLister(clusterRoles)},
			&rbac.ClusterRoleBindingLister{Lister: rbaclisters.NewClusterRoleBindingLister(clusterRoleBindings)},
		),
		Subjects: map[string][]Principal{},
	}
	for _, b := range rb.Items {
		out.addSubjects(b.Namespace, b.Subjects)
	}
	for _, b := range crb.Items {
		out.addSubjects("", b.Subjects)
	}
	return out, nil
}

// fill adds a list's items to an indexer, or says which RBAC objects could
// not be read.
func fill[L, T any](to cache.Indexer, what string, list L, err error, items func(L) []T) error {
	if err != nil {
		return fmt.Errorf("cannot read RBAC (%s), which tells who may use which policy: %w", what, err)
	}
	all := items(list)
	for i := range all {
		if err := to.Add(&all[i]); err != nil {
			return err
		}
	}
	return nil
}
