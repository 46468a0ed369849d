// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package ha

import (
	"context"
	"maps"
	"math/rand/v2"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// store is etcd as the load sees it through an apiserver: ConfigMaps by
// name at a revision, an update refused unless it carries the stored
// resourceVersion.
type store struct {
	rev     int64
	objects map[string]*corev1.ConfigMap
}

func (s *store) react(action k8stesting.Action) (bool, runtime.Object, error) {
	gr := schema.GroupResource{Resource: "configmaps"}
	switch action.GetVerb() {
	case "create":
		cm := action.(k8stesting.CreateAction).GetObject().(*corev1.ConfigMap).DeepCopy()
		if _, ok := s.objects[cm.Name]; ok {
			return true, nil, apierrors.NewAlreadyExists(gr, cm.Name)
		}
		s.rev++
		cm.ResourceVersion = strconv.FormatInt(s.rev, 10)
		s.objects[cm.Name] = cm
		return true, cm.DeepCopy(), nil
	case "update":
		cm := action.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap).DeepCopy()
		stored, ok := s.objects[cm.Name]
		if !ok {
			return true, nil, apierrors.NewNotFound(gr, cm.Name)
		}
		if cm.ResourceVersion != stored.ResourceVersion {
			return true, nil, apierrors.NewConflict(gr, cm.Name, nil)
		}
		s.rev++
		cm.ResourceVersion = strconv.FormatInt(s.rev, 10)
		s.objects[cm.Name] = cm
		return true, cm.DeepCopy(), nil
	case "get":
		name := action.(k8stesting.GetAction).GetName()
		stored, ok := s.objects[name]
		if !ok {
			return true, nil, apierrors.NewNotFound(gr, name)
		}
		return true, stored.DeepCopy(), nil
	}
	return false, nil, nil
}

// After a restore, a worker reads its keys again before it writes them:
// the resourceVersion it kept for a deliberately stale update may be the
// current one again, which the server rightly accepts, and the ledger
// would call a stale update accepted.
func TestLoadAfterRestore(t *testing.T) {
	for seed := range uint64(20) {
		etcd := &store{objects: map[string]*corev1.ConfigMap{}}
		client := fake.NewClientset()
		client.PrependReactor("*", "configmaps", etcd.react)
		l := &Load{Clients: []kubernetes.Interface{client}, Namespace: "ns", Workers: 1, Ledger: &Ledger{}}
		s := &worker{rng: rand.New(rand.NewPCG(seed, 1))}
		ctx := context.Background()
		for range 100 {
			l.step(ctx, s)
		}
		snapshot, objects := etcd.rev, maps.Clone(etcd.objects)
		for range 15 { // few enough that many keys have one update after the snapshot
			l.step(ctx, s)
		}
		// etcdutl's restore: the snapshot's objects, the revision bumped.
		etcd.objects, etcd.rev = objects, etcd.rev+1_000_000
		l.Restored(snapshot, etcd.rev)
		for range 200 {
			l.step(ctx, s)
		}
		for _, a := range l.Ledger.All() {
			if a.Deliberate && a.Outcome == Acked {
				t.Fatalf("seed %d: a deliberately stale update of %s (attempt %s) was sent with a resourceVersion the restore made current again, and acknowledged at %d", seed, a.Key, a.ID, a.RV)
			}
		}
		pending, _ := l.Ledger.Pending()
		if errs := CheckState(l.Ledger.All(), versions(etcd.objects)); len(errs) > 0 || len(pending) == 0 {
			t.Fatalf("seed %d: after the restore, %d attempts pending, the state: %v", seed, len(pending), errs)
		}
	}
}

func versions(objects map[string]*corev1.ConfigMap) map[string]Version {
	out := map[string]Version{}
	for name, cm := range objects {
		rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
		out[name] = Version{Key: name, ID: cm.Data[AttemptKey], Rev: rv}
	}
	return out
}
