// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package ha

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Reader is one apiserver a checkpoint reads the stored state back
// through.
type Reader struct {
	Name   string
	Client kubernetes.Interface
}

// Target is the control plane a checkpoint checks: etcd's history, and
// the apiservers that serve now.
type Target interface {
	// History returns every version of the namespace's ConfigMaps that
	// etcd stored from revision from up to and including until.
	History(ctx context.Context, namespace string, from, until int64) ([]Version, error)
	// Readers are the apiservers serving now, at least one.
	Readers(ctx context.Context) ([]Reader, error)
}

// Checkpoint holds the load, then checks every write the ledger has not
// checked yet against etcd's history, and the stored state through every
// serving apiserver against every write so far. Each failed check is an
// error of t; it returns how many there were.
func Checkpoint(ctx context.Context, t testing.TB, target Target, load *Load, ns string) (problems int) {
	t.Helper()
	load.Hold(func() {
		pending, from := load.Ledger.Pending()
		all := load.Ledger.All()
		readers, err := target.Readers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		marker, err := readers[0].Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "checkpoint-"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("writing the checkpoint marker through %s: %v", readers[0].Name, err)
		}
		until, err := strconv.ParseInt(marker.ResourceVersion, 10, 64)
		if err != nil {
			t.Fatalf("the checkpoint marker's resourceVersion %q: %v", marker.ResourceVersion, err)
		}
		history, err := target.History(ctx, ns, from, until)
		if err != nil {
			t.Fatal(err)
		}
		errs := CheckHistory(pending, history)
		if applied, unknown := UnknownApplied(pending, history); unknown > 0 {
			t.Logf("ledger: of %d writes with an unknown outcome, %d were applied", unknown, applied)
		}
		for _, r := range readers {
			state, err := ReadState(ctx, r.Client, ns)
			if err != nil {
				t.Fatalf("through %s: %v", r.Name, err)
			}
			for _, e := range CheckState(all, state) {
				errs = append(errs, fmt.Errorf("through %s: %w", r.Name, e))
			}
		}
		for _, e := range errs {
			t.Error(e)
		}
		problems = len(errs)
		if len(errs) == 0 {
			t.Logf("ledger: %d writes checked against %d stored versions (revisions %d to %d) and through %d apiservers", len(pending), len(history), from, until, len(readers))
		}
		load.Ledger.MarkChecked(len(pending))
	})
	return problems
}

// ReadState lists the namespace's ConfigMaps through one apiserver.
func ReadState(ctx context.Context, client kubernetes.Interface, namespace string) (map[string]Version, error) {
	list, err := client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]Version{}
	for _, cm := range list.Items {
		rev, err := strconv.ParseInt(cm.ResourceVersion, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: resourceVersion %q: %w", cm.Name, cm.ResourceVersion, err)
		}
		out[cm.Name] = Version{Key: cm.Name, ID: cm.Data[AttemptKey], Rev: rev}
	}
	return out, nil
}
