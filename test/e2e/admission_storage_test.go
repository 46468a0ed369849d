// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// simpleClaim is a 1Gi ReadWriteOnce claim; class nil leaves
// storageClassName unset.
func simpleClaim(name string, class *string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			StorageClassName: class,
		},
	}
}

// simpleStorageClass creates a StorageClass named prefix plus a random
// suffix and deletes it afterwards.
func simpleStorageClass(t *testing.T, c kubernetes.Interface, prefix string, isDefault bool, expandable *bool) *storagev1.StorageClass {
	t.Helper()
	sc := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{GenerateName: prefix},
		Provisioner:          "example.com/e2e",
		AllowVolumeExpansion: expandable,
	}
	if isDefault {
		sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	}
	sc, err := c.StorageV1().StorageClasses().Create(context.Background(), sc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating StorageClass %s: %v", prefix, err)
	}
	t.Cleanup(func() {
		_ = c.StorageV1().StorageClasses().Delete(context.Background(), sc.Name, metav1.DeleteOptions{})
	})
	return sc
}

// DefaultStorageClass: a new claim without a storageClassName gets the
// default StorageClass, the newest one when several are marked default; a
// claim that names a class, even "", keeps it.
func testSimpleDefaultStorageClass(t *testing.T, s simpleServers) {
	ctx := context.Background()
	ns := simpleNamespace(t, s.on, "", nil)
	className := func(c *corev1.PersistentVolumeClaim) string { return ptr.Deref(c.Spec.StorageClassName, "<unset>") }
	defaultedTo := func(want string) {
		t.Helper()
		simpleEventually(t, "on: a claim without a class gets "+want, func() (bool, string) {
			got, err := s.on.CoreV1().PersistentVolumeClaims(ns).Create(ctx, simpleClaim("probe", nil), simpleDryRun)
			if err != nil {
				return false, err.Error()
			}
			return className(got) == want, className(got)
		})
	}

	// Names sort the other way round from creation, so a tie on the
	// creation second (broken by name) could not pass for "newest".
	older := simpleStorageClass(t, s.on, "e2e-dsc-a-", true, nil)
	defaultedTo(older.Name)
	got, err := s.on.CoreV1().PersistentVolumeClaims(ns).Create(ctx, simpleClaim("defaulted", nil), metav1.CreateOptions{})
	if err != nil || className(got) != older.Name {
		t.Errorf("on: claim without a class: %v, class %s, want %s", err, className(got), older.Name)
	}
	got, err = s.on.CoreV1().PersistentVolumeClaims(ns).Create(ctx, simpleClaim("no-class", ptr.To("")), metav1.CreateOptions{})
	if err != nil || className(got) != "" {
		t.Errorf(`on: claim with storageClassName "": %v, class %s, want ""`, err, className(got))
	}
	got, err = s.off.CoreV1().PersistentVolumeClaims(ns).Create(ctx, simpleClaim("as-asked", nil), metav1.CreateOptions{})
	if err != nil || got.Spec.StorageClassName != nil {
		t.Errorf("off: claim without a class: %v, class %s, want unset", err, className(got))
	}

	simpleAfterSecond(t, older.CreationTimestamp)
	newer := simpleStorageClass(t, s.on, "e2e-dsc-b-", true, nil)
	if !newer.CreationTimestamp.After(older.CreationTimestamp.Time) {
		t.Fatalf("%s created at %v, not after %s at %v", newer.Name, newer.CreationTimestamp, older.Name, older.CreationTimestamp)
	}
	defaultedTo(newer.Name)
}

// PersistentVolumeClaimResize: a bound claim may grow only when its
// StorageClass has allowVolumeExpansion: true. (The plugin's own refusal of
// unbound claims is unreachable: validation, which runs first, already
// refuses to change an unbound claim's spec.)
func testSimplePersistentVolumeClaimResize(t *testing.T, s simpleServers) {
	ctx := context.Background()
	ns := simpleNamespace(t, s.on, "", nil)
	fixed := simpleStorageClass(t, s.on, "e2e-fixed-", false, nil)
	expandable := simpleStorageClass(t, s.on, "e2e-expandable-", false, ptr.To(true))
	for name, class := range map[string]string{"fixed": fixed.Name, "expandable": expandable.Name} {
		pvc, err := s.on.CoreV1().PersistentVolumeClaims(ns).Create(ctx, simpleClaim(name, ptr.To(class)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// What the PV controller would write once the claim is bound.
		pvc.Status = corev1.PersistentVolumeClaimStatus{
			Phase:       corev1.ClaimBound,
			AccessModes: pvc.Spec.AccessModes,
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		}
		if _, err := s.on.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	grow := func(c kubernetes.Interface, name string) error {
		_, err := c.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, name, types.MergePatchType,
			[]byte(`{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	simpleEventually(t, "on: growing a claim of an expandable class", func() (bool, string) {
		err := grow(s.on, "expandable")
		return err == nil, simpleErrString(err)
	})
	simpleForbidden(t, "on: growing a claim of a class without allowVolumeExpansion", grow(s.on, "fixed"),
		"only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize")
	if err := grow(s.off, "fixed"); err != nil {
		t.Errorf("off: growing a claim of a class without allowVolumeExpansion: %v, want admitted", err)
	}
}

// simpleErrString is err's message, or "<nil>".
func simpleErrString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// StorageObjectInUseProtection: new claims and volumes get the
// kubernetes.io/pvc-protection and kubernetes.io/pv-protection finalizers,
// so a deleted claim stays until the finalizer goes (the PVC protection
// controller's job; here the test's).
func testSimpleStorageObjectInUseProtection(t *testing.T, s simpleServers) {
	ctx := context.Background()
	ns := simpleNamespace(t, s.on, "", nil)
	noClass := ptr.To("")
	pv := func(prefix string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{GenerateName: prefix},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/e2e"}},
			},
		}
	}
	dropFinalizers := []byte(`{"metadata":{"finalizers":null}}`)
	createPV := func(c kubernetes.Interface, prefix string) *corev1.PersistentVolume {
		t.Helper()
		got, err := c.CoreV1().PersistentVolumes().Create(ctx, pv(prefix), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.CoreV1().PersistentVolumes().Delete(context.Background(), got.Name, metav1.DeleteOptions{})
			_, _ = c.CoreV1().PersistentVolumes().Patch(context.Background(), got.Name, types.MergePatchType, dropFinalizers, metav1.PatchOptions{})
		})
		return got
	}

	claim, err := s.on.CoreV1().PersistentVolumeClaims(ns).Create(ctx, simpleClaim("protected", noClass), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("on: %v", err)
	}
	if !slices.Equal(claim.Finalizers, []string{"kubernetes.io/pvc-protection"}) {
		t.Errorf("on: claim finalizers %v, want [kubernetes.io/pvc-protection]", claim.Finalizers)
	}
	if vol := createPV(s.on, "e2e-protected-"); !slices.Equal(vol.Finalizers, []string{"kubernetes.io/pv-protection"}) {
		t.Errorf("on: volume finalizers %v, want [kubernetes.io/pv-protection]", vol.Finalizers)
	}
	if err := s.on.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.on.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim.Name, metav1.GetOptions{}); err != nil || got.DeletionTimestamp == nil {
		t.Errorf("on: deleted claim: %v, want it kept, terminating, until its finalizer goes", err)
	}
	if _, err := s.on.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, claim.Name, types.MergePatchType, dropFinalizers, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.on.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("on: claim after its finalizer went: %v, want NotFound", err)
	}

	claim, err = s.off.CoreV1().PersistentVolumeClaims(ns).Create(ctx, simpleClaim("unprotected", noClass), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("off: %v", err)
	}
	if len(claim.Finalizers) > 0 {
		t.Errorf("off: claim finalizers %v, want none", claim.Finalizers)
	}
	if vol := createPV(s.off, "e2e-unprotected-"); len(vol.Finalizers) > 0 {
		t.Errorf("off: volume finalizers %v, want none", vol.Finalizers)
	}
	if err := s.off.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.off.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("off: deleted claim: %v, want NotFound at once", err)
	}
}
