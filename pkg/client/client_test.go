// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	policyv1beta1 "github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
	"github.com/turnstile-k8s/turnstile/pkg/client/clientset/versioned"
	"github.com/turnstile-k8s/turnstile/pkg/client/clientset/versioned/fake"
	"github.com/turnstile-k8s/turnstile/pkg/client/clientset/versioned/scheme"
	"github.com/turnstile-k8s/turnstile/pkg/client/informers/externalversions"
)

var pspGVR = schema.GroupVersionResource{Group: "policy", Version: "v1beta1", Resource: "podsecuritypolicies"}

func newPSP(name string) *policyv1beta1.PodSecurityPolicy {
	return &policyv1beta1.PodSecurityPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1beta1.PodSecurityPolicySpec{
			SELinux:            policyv1beta1.SELinuxStrategyOptions{Rule: policyv1beta1.SELinuxStrategyRunAsAny},
			RunAsUser:          policyv1beta1.RunAsUserStrategyOptions{Rule: policyv1beta1.RunAsUserStrategyMustRunAsNonRoot},
			SupplementalGroups: policyv1beta1.SupplementalGroupsStrategyOptions{Rule: policyv1beta1.SupplementalGroupsStrategyRunAsAny},
			FSGroup:            policyv1beta1.FSGroupStrategyOptions{Rule: policyv1beta1.FSGroupStrategyRunAsAny},
			Volumes:            []policyv1beta1.FSType{policyv1beta1.ConfigMap, policyv1beta1.Secret},
		},
	}
}

func TestSchemeKnowsPodSecurityPolicy(t *testing.T) {
	for _, obj := range []runtime.Object{&policyv1beta1.PodSecurityPolicy{}, &policyv1beta1.PodSecurityPolicyList{}} {
		gvks, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil {
			t.Fatalf("%T: %v", obj, err)
		}
		if len(gvks) != 1 || gvks[0].GroupVersion() != policyv1beta1.SchemeGroupVersion {
			t.Errorf("%T: kinds %v, want one in %v", obj, gvks, policyv1beta1.SchemeGroupVersion)
		}
	}
}

func TestFakeClientsetCRUD(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewSimpleClientset(newPSP("seeded"))
	psps := cs.PolicyV1beta1().PodSecurityPolicies()

	if _, err := psps.Create(ctx, newPSP("restricted"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	got, err := psps.Get(ctx, "restricted", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.Spec.RunAsUser.Rule != policyv1beta1.RunAsUserStrategyMustRunAsNonRoot {
		t.Errorf("get: runAsUser rule %q", got.Spec.RunAsUser.Rule)
	}
	got.Spec.Privileged = true
	if _, err := psps.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update: %v", err)
	}
	list, err := psps.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	names := map[string]bool{}
	for _, p := range list.Items {
		names[p.Name] = p.Spec.Privileged
	}
	if len(names) != 2 || !names["restricted"] || names["seeded"] {
		t.Errorf("list: got name->privileged %v, want seeded:false restricted:true", names)
	}
	if err := psps.Delete(ctx, "seeded", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := psps.Get(ctx, "seeded", metav1.GetOptions{}); err == nil {
		t.Errorf("get after delete: no error")
	}

	var verbs []string
	for _, a := range cs.Actions() {
		if a.GetResource() != pspGVR || a.GetNamespace() != "" {
			t.Errorf("action %s on %v in namespace %q, want %v cluster-scoped", a.GetVerb(), a.GetResource(), a.GetNamespace(), pspGVR)
		}
		verbs = append(verbs, a.GetVerb())
	}
	if want := "create get update list delete get"; strings.Join(verbs, " ") != want {
		t.Errorf("verbs %q, want %q", strings.Join(verbs, " "), want)
	}
}

// An informer over the fake clientset sees objects created before it started
// and objects created through the client afterwards, and its lister finds
// them by name.
func TestInformerListerRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cs := fake.NewSimpleClientset()
	if _, err := cs.PolicyV1beta1().PodSecurityPolicies().Create(ctx, newPSP("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The fake's watch has no resource versions: an object created between
	// the informer's list and its watch would be missed, so wait for the watch.
	watching := make(chan struct{})
	var once sync.Once
	cs.PrependWatchReactor("podsecuritypolicies", func(clienttesting.Action) (bool, watch.Interface, error) {
		once.Do(func() { close(watching) })
		return false, nil, nil
	})

	factory := externalversions.NewSharedInformerFactory(cs, 0)
	informer := factory.Policy().V1beta1().PodSecurityPolicies()
	lister := informer.Lister() // registers the informer before Start
	stop := make(chan struct{})
	factory.Start(stop)
	defer factory.Shutdown() // after close(stop): Shutdown waits for the informers to stop
	defer close(stop)
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("cache for %v did not sync", typ)
		}
	}

	if got, err := lister.Get("before"); err != nil || got.Name != "before" {
		t.Fatalf("lister.Get(before) = %v, %v", got, err)
	}

	select {
	case <-watching:
	case <-ctx.Done():
		t.Fatal("informer never watched")
	}
	if _, err := cs.PolicyV1beta1().PodSecurityPolicies().Create(ctx, newPSP("after"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		_, err := lister.Get("after")
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("lister never saw the PSP created after the informer started: %v", err)
	}
	all, err := lister.List(labels.Everything())
	if err != nil || len(all) != 2 {
		t.Errorf("lister.List: %d objects, %v; want 2", len(all), err)
	}
}

type recorded struct {
	method, path, accept string
}

// The real clientset talks to /apis/policy/v1beta1/podsecuritypolicies,
// prefers protobuf, and decodes JSON and protobuf responses with its scheme.
func TestClientsetRequests(t *testing.T) {
	var mu sync.Mutex
	var reqs []recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reqs = append(reqs, recorded{r.Method, r.URL.Path, r.Header.Get("Accept")})
		mu.Unlock()
		switch r.URL.Path {
		case "/apis/policy/v1beta1/podsecuritypolicies":
			list := &policyv1beta1.PodSecurityPolicyList{
				TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1beta1", Kind: "PodSecurityPolicyList"},
				ListMeta: metav1.ListMeta{ResourceVersion: "7"},
				Items:    []policyv1beta1.PodSecurityPolicy{*newPSP("a"), *newPSP("b")},
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(list)
		case "/apis/policy/v1beta1/podsecuritypolicies/restricted":
			psp := newPSP("restricted")
			psp.TypeMeta = metav1.TypeMeta{APIVersion: "policy/v1beta1", Kind: "PodSecurityPolicy"}
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(psp, w); err != nil {
				t.Errorf("encode: %v", err)
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	cs, err := versioned.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	list, err := cs.PolicyV1beta1().PodSecurityPolicies().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(list.Items) != 2 || list.Items[0].Name != "a" || list.Items[1].Spec.SELinux.Rule != policyv1beta1.SELinuxStrategyRunAsAny || list.ResourceVersion != "7" {
		t.Errorf("list: got %+v", list)
	}
	psp, err := cs.PolicyV1beta1().PodSecurityPolicies().Get(ctx, "restricted", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if psp.Name != "restricted" || psp.Spec.RunAsUser.Rule != policyv1beta1.RunAsUserStrategyMustRunAsNonRoot {
		t.Errorf("get: got %+v", psp)
	}

	mu.Lock()
	defer mu.Unlock()
	want := []recorded{
		{http.MethodGet, "/apis/policy/v1beta1/podsecuritypolicies", ""},
		{http.MethodGet, "/apis/policy/v1beta1/podsecuritypolicies/restricted", ""},
	}
	if len(reqs) != len(want) {
		t.Fatalf("requests %+v, want %+v", reqs, want)
	}
	for i := range want {
		if reqs[i].method != want[i].method || reqs[i].path != want[i].path {
			t.Errorf("request %d: %s %s, want %s %s", i, reqs[i].method, reqs[i].path, want[i].method, want[i].path)
		}
		if !strings.HasPrefix(reqs[i].accept, "application/vnd.kubernetes.protobuf") || !strings.Contains(reqs[i].accept, "application/json") {
			t.Errorf("request %d: Accept %q, want protobuf first, then JSON", i, reqs[i].accept)
		}
	}
}
