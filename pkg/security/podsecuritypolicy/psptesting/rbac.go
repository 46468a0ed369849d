// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package psptesting

import (
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"

	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"
)

// RBACAuthorizer is upstream's RBAC authorizer over the given Roles,
// ClusterRoles and their bindings, read through listers as in the
// apiserver.
func RBACAuthorizer(t testing.TB, objects ...interface{}) authorizer.Authorizer {
	t.Helper()
	indexer := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	roles, roleBindings, clusterRoles, clusterRoleBindings := indexer(), indexer(), indexer(), indexer()
	for _, obj := range objects {
		var err error
		switch obj.(type) {
		case *rbacv1.Role:
			err = roles.Add(obj)
		case *rbacv1.RoleBinding:
			err = roleBindings.Add(obj)
		case *rbacv1.ClusterRole:
			err = clusterRoles.Add(obj)
		case *rbacv1.ClusterRoleBinding:
			err = clusterRoleBindings.Add(obj)
		default:
			err = fmt.Errorf("not an RBAC object: %T", obj)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return rbac.New(
		&rbac.RoleGetter{Lister: rbaclisters.NewRoleLister(roles)},
		&rbac.RoleBindingLister{Lister: rbaclisters.NewRoleBindingLister(roleBindings)},
		&rbac.ClusterRoleGetter{Lister: rbaclisters.NewClusterRoleLister(clusterRoles)},
		&rbac.ClusterRoleBindingLister{Lister: rbaclisters.NewClusterRoleBindingLister(clusterRoleBindings)},
	)
}
