// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package psp124

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/union"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"
	pspplugin "k8s.io/kubernetes/plugin/pkg/admission/security/podsecuritypolicy"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"
)

// scenario is a file test/pspscale's Write leaves.
type scenario struct {
	Name      string            `json:"name"`
	Objects   []json.RawMessage `json:"objects"`
	Creations []struct {
		Requester string `json:"requester"`
		User      struct {
			Name   string   `json:"name"`
			Groups []string `json:"groups"`
		} `json:"user"`
		Pod *corev1.Pod `json:"pod"`
	} `json:"creations"`
}

// BenchmarkScale decides each scenario in TURNSTILE_PSP_SCALE_DIR with
// v1.24.17's plugin and RBAC authorizer, over informers of a fake
// clientset holding the scenario's objects, and reports what the plugin
// package's BenchmarkScale reports of ours: time and allocations per pod
// create (Admit, then Validate on its result), authorizer calls per create,
// the heap held after the first create, and each decision in
// TURNSTILE_PSP_SCALE_DECISIONS.
func BenchmarkScale(b *testing.B) {
	dir := os.Getenv("TURNSTILE_PSP_SCALE_DIR")
	if dir == "" {
		b.Skip("TURNSTILE_PSP_SCALE_DIR names no scenarios; make bench-psp writes them")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no scenarios in %s (%v)", dir, err)
	}
	decisions := os.Getenv("TURNSTILE_PSP_SCALE_DECISIONS")
	for _, file := range files {
		var s scenario
		data, err := os.ReadFile(file)
		must(b, err)
		must(b, json.Unmarshal(data, &s))
		factory, authz := cluster(b, s)
		for _, c := range s.Creations {
			name := s.Name + "/requester=" + strings.ReplaceAll(c.Requester, " ", "-")
			b.Run(name, func(b *testing.B) {
				pod := &api.Pod{}
				must(b, corev1conversion.Convert_v1_Pod_To_core_Pod(c.Pod, pod, nil))
				requester := &user.DefaultInfo{Name: c.User.Name, Groups: c.User.Groups}
				a := admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("v1"), pod.Namespace, pod.Name,
					api.Resource("pods").WithVersion("v1"), "", admission.Create, &metav1.CreateOptions{}, false, requester)
				ctx := context.Background()
				var pl plugin
				create := func() error {
					delete(pod.Annotations, "kubernetes.io/psp")
					if err := pl.Admit(ctx, a, nil); err != nil {
						return err
					}
					return pl.Validate(ctx, a, nil)
				}
				fresh := heapGrowth(func() { pl = newPlugin(b, factory, authz) })
				pl = nil
				decided := heapGrowth(func() {
					pl = newPlugin(b, factory, authz)
					decision := "refused"
					if create() == nil {
						decision = pod.Annotations["kubernetes.io/psp"]
					}
					noteDecision(b, decisions, name, decision)
				})
				authz.calls.Store(0)
				b.ReportAllocs()
				for b.Loop() {
					_ = create()
				}
				b.ReportMetric(float64(authz.calls.Load())/float64(b.N), "authz/op")
				b.ReportMetric(float64(decided-fresh), "held-B")
			})
		}
	}
}

// plugin is v1.24's plugin, both phases.
type plugin interface {
	admission.MutationInterface
	admission.ValidationInterface
}

// cluster is an informer factory whose informers hold the scenario's
// objects, synced, and v1.24's RBAC authorizer over its listers, behind
// the apiserver's system:masters check.
func cluster(b *testing.B, s scenario) (informers.SharedInformerFactory, *countingAuthorizer) {
	b.Helper()
	decode := serializer.NewCodecFactory(scheme.Scheme).UniversalDeserializer()
	client := fake.NewSimpleClientset()
	for _, raw := range s.Objects {
		obj, _, err := decode.Decode(raw, nil, nil)
		must(b, err)
		must(b, client.Tracker().Add(obj))
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	r := factory.Rbac().V1()
	authz := rbac.New(&rbac.RoleGetter{Lister: r.Roles().Lister()}, &rbac.RoleBindingLister{Lister: r.RoleBindings().Lister()},
		&rbac.ClusterRoleGetter{Lister: r.ClusterRoles().Lister()}, &rbac.ClusterRoleBindingLister{Lister: r.ClusterRoleBindings().Lister()})
	factory.Policy().V1beta1().PodSecurityPolicies().Informer()
	stop := make(chan struct{})
	b.Cleanup(func() { close(stop) })
	factory.Start(stop)
	for typ, ok := range factory.WaitForCacheSync(stop) {
		if !ok {
			b.Fatalf("informer of %v did not sync", typ)
		}
	}
	// As v1.24's kube-apiserver chained it: system:masters first.
	return factory, &countingAuthorizer{Authorizer: union.New(authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup), authz)}
}

// newPlugin is v1.24's plugin as its apiserver made it: registered, then
// given the authorizer and the informers.
func newPlugin(b *testing.B, factory informers.SharedInformerFactory, authz authorizer.Authorizer) plugin {
	b.Helper()
	plugins := admission.NewPlugins()
	pspplugin.Register(plugins)
	p, err := plugins.InitPlugin(pspplugin.PluginName, nil, initializer{authz, factory})
	must(b, err)
	return p.(plugin)
}

// initializer gives the plugin what v1.24's apiserver gave it: the
// authorizer and the informers.
type initializer struct {
	authz     authorizer.Authorizer
	informers informers.SharedInformerFactory
}

func (i initializer) Initialize(p admission.Interface) {
	p.(*pspplugin.Plugin).SetAuthorizer(i.authz)
	p.(*pspplugin.Plugin).SetExternalKubeInformerFactory(i.informers)
}

// heapGrowth is how much more of the heap, collected, is live after f than
// before it.
func heapGrowth(f func()) int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	before := m.HeapAlloc
	f()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc) - int64(before)
}

// noteDecision appends the case's decision to file.
func noteDecision(b *testing.B, file, name, decision string) {
	if file == "" {
		return
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	must(b, err)
	defer f.Close()
	_, err = fmt.Fprintf(f, "%s\t%s\n", name, decision)
	must(b, err)
}

// countingAuthorizer counts Authorize calls: v1.24's plugin asks nothing
// else.
type countingAuthorizer struct {
	authorizer.Authorizer
	calls atomic.Int64
}

func (c *countingAuthorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	c.calls.Add(1)
	return c.Authorizer.Authorize(ctx, a)
}

func must(b testing.TB, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
