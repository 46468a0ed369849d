// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package pspmigration

import (
	"context"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Principal is a user or a group, as the generated policies name them:
// "user:NAME" or "group:NAME" (a service account is the user
// system:serviceaccount:NAMESPACE:NAME).
type Principal string

// User and Group are the principals of a user's name and of a group.
func User(name string) Principal  { return Principal("user:" + name) }
func Group(name string) Principal { return Principal("group:" + name) }

func (p Principal) info() user.Info {
	if name, ok := strings.CutPrefix(string(p), "user:"); ok {
		return &user.DefaultInfo{Name: name}
	}
	return &user.DefaultInfo{Name: "kubectl-psp:nobody", Groups: []string{strings.TrimPrefix(string(p), "group:")}}
}

func (r *RBAC) addSubjects(namespace string, subjects []rbacv1.Subject) {
	for _, s := range subjects {
		var p Principal
		switch s.Kind {
		case rbacv1.UserKind:
			p = User(s.Name)
		case rbacv1.GroupKind:
			p = Group(s.Name)
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = namespace
			}
			p = User(serviceaccount.MakeUsername(ns, s.Name))
		default:
			continue
		}
		if !slices.Contains(r.Subjects[namespace], p) {
			r.Subjects[namespace] = append(r.Subjects[namespace], p)
		}
	}
}

// Grants are who may use one policy: everywhere (through
// ClusterRoleBindings), and in single namespaces (through RoleBindings).
type Grants struct {
	Cluster    []Principal
	Namespaces map[string][]Principal
}

// Grants asks the authorizer, for each principal a binding names, whether
// it may use the policy, as PodSecurityPolicy asks: verb use on
// podsecuritypolicies in the groups policy or extensions, in the pod's
// namespace. RBAC grants each principal its own rules, and a request's
// user and groups add up, so asking principal by principal is exact.
func (r *RBAC) Grants(ctx context.Context, policy string) Grants {
	g := Grants{Namespaces: map[string][]Principal{}}
	for _, p := range r.Subjects[""] {
		if r.mayUse(ctx, p, "", policy) {
			g.Cluster = append(g.Cluster, p)
		}
	}
	for ns, subjects := range r.Subjects {
		if ns == "" {
			continue
		}
		for _, p := range subjects {
			if slices.Contains(g.Cluster, p) {
				continue
			}
			if r.mayUse(ctx, p, ns, policy) {
				g.Namespaces[ns] = append(g.Namespaces[ns], p)
			}
		}
	}
	slices.Sort(g.Cluster)
	for _, ps := range g.Namespaces {
		slices.Sort(ps)
	}
	return g
}

// mayUse is the authorizer's answer. As in the plugin, an error (a binding
// to a missing role) is no grant.
func (r *RBAC) mayUse(ctx context.Context, p Principal, namespace, policy string) bool {
	for _, group := range []string{"policy", "extensions"} {
		decision, _, _ := r.Authorizer.Authorize(ctx, authorizer.AttributesRecord{
			User: p.info(), Verb: "use", Namespace: namespace, APIGroup: group, APIVersion: "*",
			Resource: "podsecuritypolicies", Name: policy, ResourceRequest: true,
		})
		if decision == authorizer.DecisionAllow {
			return true
		}
	}
	return false
}
