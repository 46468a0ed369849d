// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// OwnerReferencesPermissionEnforcement: changing an object's
// metadata.ownerReferences needs delete permission on the object (creating
// it with owners does not), and setting blockOwnerDeletion needs update on
// the owner's finalizers subresource. The users are certificate users with
// narrow RBAC on ConfigMaps.
func nodecertOwnerReferencesPermissionEnforcement(t *testing.T, s *nodecertServer) {
	ctx := context.Background()
	ns := createNamespace(t, s.admin)
	const editor, deleter, finalizer = "nc-gc-editor", "nc-gc-deleter", "nc-gc-finalizer"
	verbs := []string{"get", "create", "update", "patch"}
	configMaps := func(verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}
	}
	attrs := func(verb, sub string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Namespace: ns, Resource: "configmaps", Subresource: sub, Verb: verb, Name: "owner"}
	}
	s.grant(t, "gc-editor", editor, attrs("update", ""), configMaps(verbs...))
	s.grant(t, "gc-deleter", deleter, attrs("delete", ""), configMaps(append(verbs, "delete")...))
	s.grant(t, "gc-finalizer", finalizer, attrs("update", "finalizers"), configMaps(append(verbs, "delete")...),
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps/finalizers"}, ResourceNames: []string{"owner"}, Verbs: []string{"update"}})
	s.waitAuthorized(t, editor, attrs("delete", ""), false)
	s.waitAuthorized(t, deleter, attrs("update", "finalizers"), false)

	owner, err := s.admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := func(block bool) metav1.OwnerReference {
		r := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
		if block {
			r.BlockOwnerDeletion = ptr.To(true)
		}
		return r
	}
	create := func(user, name string, refs ...metav1.OwnerReference) error {
		_, err := s.as(t, user).CoreV1().ConfigMaps(ns).Create(ctx,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: refs}}, metav1.CreateOptions{})
		return err
	}
	// setOwner gives an existing ConfigMap the owner through user's update.
	setOwner := func(user, name string, block bool) error {
		cm, err := s.admin.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.OwnerReferences = []metav1.OwnerReference{ref(block)}
		_, err = s.as(t, user).CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	}
	for _, name := range []string{"orphan-1", "orphan-2"} {
		if _, err := s.admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	admittedNodecert(t, "creating an object with an owner, without delete permission", create(editor, "born-owned", ref(false)))
	s.judged(t, "adding an owner to an object one cannot delete", setOwner(editor, "orphan-1", false),
		"cannot set an ownerRef on a resource you can't delete")
	_, err = s.as(t, editor).CoreV1().ConfigMaps(ns).Patch(ctx, "born-owned", types.MergePatchType, []byte(`{"metadata":{"ownerReferences":null}}`), metav1.PatchOptions{})
	s.judged(t, "removing the owners of an object one cannot delete", err, "cannot set an ownerRef on a resource you can't delete")
	_, err = s.as(t, editor).CoreV1().ConfigMaps(ns).Patch(ctx, "orphan-2", types.MergePatchType, []byte(`{"data":{"k":"v"}}`), metav1.PatchOptions{})
	admittedNodecert(t, "an update that leaves the owners alone, without delete permission", err)
	admittedNodecert(t, "adding an owner to an object one can delete", setOwner(deleter, "orphan-2", false))

	want := "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on"
	s.judged(t, "creating an object that blocks its owner's deletion, without update on the owner's finalizers",
		create(deleter, "blocking-deleter", ref(true)), want)
	s.judged(t, "turning on blockOwnerDeletion without update on the owner's finalizers",
		setOwner(deleter, "orphan-2", true), want)
	admittedNodecert(t, "creating an object that blocks its owner's deletion, with update on the owner's finalizers",
		create(finalizer, "blocking-finalizer", ref(true)))
}
