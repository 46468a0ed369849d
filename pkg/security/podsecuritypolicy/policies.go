// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/apis/policy/install"
	policyv1beta1 "github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
)

// scheme converts the watched v1beta1 objects to the internal type the
// providers read.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// policyCache holds a provider for every policy, built when the informer
// delivers the policy rather than on each request, and publishes them
// sorted by name, with an index by name. Readers take the published
// snapshot without locking.
type policyCache struct {
	mu        sync.Mutex
	byName    map[string]*Provider
	published atomic.Pointer[policySnapshot]
}

// policySnapshot is the usable providers at one moment: sorted by name,
// and by name for looking up the few an identity is granted. Neither may
// be modified.
type policySnapshot struct {
	sorted []*Provider
	byName map[string]*Provider
}

func newPolicyCache() *policyCache {
	c := &policyCache{byName: map[string]*Provider{}}
	c.published.Store(&policySnapshot{})
	return c
}

// snapshot returns the usable providers, sorted and by name.
func (c *policyCache) snapshot() *policySnapshot { return c.published.Load() }

// set builds and stores the provider of psp. A policy that cannot be
// applied is logged and left out, as in v1.24.
func (c *policyCache) set(psp *policy.PodSecurityPolicy) {
	pr, err := NewProvider(psp)
	if err != nil {
		klog.InfoS("PodSecurityPolicy cannot be applied and is skipped", "policy", psp.Name, "err", err)
		c.delete(psp.Name)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byName[psp.Name] = pr
	c.publish()
}

func (c *policyCache) delete(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byName, name)
	c.publish()
}

// publish replaces the snapshot; c.mu must be held.
//
// The snapshot's providers are copies laid out side by side in name order,
// the order a request walks them: a cluster admin's pod create asks each
// policy before privileged whether it would change the pod (Mutates reads
// each one's first bytes), and in a loaded apiserver the providers built
// one by one as the informer delivered them were a cache miss each; a
// walk over one array is one the processor prefetches. Providers are
// immutable, so the copies share their rules with the originals.
func (c *policyCache) publish() {
	sorted := make([]*Provider, 0, len(c.byName))
	for _, pr := range c.byName {
		sorted = append(sorted, pr)
	}
	sortByName(sorted)
	array := make([]Provider, len(sorted))
	byName := make(map[string]*Provider, len(sorted))
	for i, pr := range sorted {
		array[i] = *pr
		sorted[i] = &array[i]
		byName[pr.Name()] = sorted[i]
	}
	c.published.Store(&policySnapshot{sorted: sorted, byName: byName})
}

func sortByName(providers []*Provider) {
	slices.SortFunc(providers, func(a, b *Provider) int { return strings.Compare(a.Name(), b.Name()) })
}

// watch registers an informer for policy/v1beta1 podsecuritypolicies with
// the apiserver's informer factory, which starts it with its other
// informers once the apiserver serves, and feeds the cache from it. The
// factory's generated clients do not know Turnstile's API, so the informer
// lists through the dynamic client. It returns whether the cache has seen
// every policy.
func (c *policyCache) watch(f informers.SharedInformerFactory, client dynamic.Interface) (func() bool, error) {
	informer := f.InformerFor(&policyv1beta1.PodSecurityPolicy{}, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
		resource := policyv1beta1.SchemeGroupVersion.WithResource("podsecuritypolicies")
		return dynamicinformer.NewFilteredDynamicInformer(client, resource, "", 0, cache.Indexers{}, nil).Informer()
	})
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onSet,
		UpdateFunc: func(_, obj interface{}) { c.onSet(obj) },
		DeleteFunc: c.onDelete,
	})
	if err != nil {
		return nil, fmt.Errorf("watching podsecuritypolicies: %w", err)
	}
	return reg.HasSynced, nil
}

func (c *policyCache) onSet(obj interface{}) {
	psp, err := toInternal(obj)
	if err != nil {
		klog.ErrorS(err, "Cannot read a PodSecurityPolicy from the watch")
		return
	}
	c.set(psp)
}

func (c *policyCache) onDelete(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		klog.ErrorS(nil, "Unexpected object in the PodSecurityPolicy watch", "type", fmt.Sprintf("%T", obj))
		return
	}
	c.delete(u.GetName())
}

// toInternal converts a watched object to the internal type, defaulted as
// the API serves it.
func toInternal(obj interface{}) (*policy.PodSecurityPolicy, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("unexpected type %T", obj)
	}
	var external policyv1beta1.PodSecurityPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), &external); err != nil {
		return nil, fmt.Errorf("podsecuritypolicy %q: %w", u.GetName(), err)
	}
	return Convert(&external)
}

// Convert defaults external as the API serves it, and converts it to the
// internal type the engine applies.
func Convert(external *policyv1beta1.PodSecurityPolicy) (*policy.PodSecurityPolicy, error) {
	scheme.Default(external)
	internal := &policy.PodSecurityPolicy{}
	if err := scheme.Convert(external, internal, nil); err != nil {
		return nil, fmt.Errorf("podsecuritypolicy %q: %w", external.Name, err)
	}
	return internal, nil
}
