// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"

	"github.com/turnstile-k8s/turnstile/pkg/admission/rejectedby"
	"github.com/turnstile-k8s/turnstile/pkg/admission/reload"
	"github.com/turnstile-k8s/turnstile/pkg/admission/restored"
	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	policyv1beta1 "github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
	"github.com/turnstile-k8s/turnstile/test/fixtures"
)

// wireInformers gives plugins the informer factory, clients and authorizer
// the apiserver's generic initializer would.
type wireInformers struct {
	factory informers.SharedInformerFactory
	client  kubernetes.Interface
	dynamic dynamic.Interface
	authz   authorizer.Authorizer
}

func (w wireInformers) Initialize(p admission.Interface) {
	if x, ok := p.(initializer.WantsExternalKubeInformerFactory); ok {
		x.SetExternalKubeInformerFactory(w.factory)
	}
	if x, ok := p.(initializer.WantsExternalKubeClientSet); ok {
		x.SetExternalKubeClientSet(w.client)
	}
	if x, ok := p.(initializer.WantsDynamicClient); ok {
		x.SetDynamicClient(w.dynamic)
	}
	if x, ok := p.(initializer.WantsAuthorizer); ok {
		x.SetAuthorizer(w.authz)
	}
}

// anyPodPolicy is a PodSecurityPolicy that admits the fixture pod as it
// is, so that PodSecurityPolicy runs to the end in the chain. Its cost with
// many policies and RBAC grants is in the plugin's own benchmarks.
func anyPodPolicy(b *testing.B) *unstructured.Unstructured {
	psp := &policyv1beta1.PodSecurityPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: policyv1beta1.SchemeGroupVersion.String(), Kind: "PodSecurityPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: "any", Annotations: map[string]string{
			policy.SeccompAllowedProfilesAnnotationKey: policy.SeccompAllowAny,
		}},
		Spec: policyv1beta1.PodSecurityPolicySpec{
			Volumes:            []policyv1beta1.FSType{policyv1beta1.All},
			RunAsUser:          policyv1beta1.RunAsUserStrategyOptions{Rule: policyv1beta1.RunAsUserStrategyRunAsAny},
			SELinux:            policyv1beta1.SELinuxStrategyOptions{Rule: policyv1beta1.SELinuxStrategyRunAsAny},
			SupplementalGroups: policyv1beta1.SupplementalGroupsStrategyOptions{Rule: policyv1beta1.SupplementalGroupsStrategyRunAsAny},
			FSGroup:            policyv1beta1.FSGroupStrategyOptions{Rule: policyv1beta1.FSGroupStrategyRunAsAny},
		},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(psp)
	if err != nil {
		b.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// ourChain builds the admission chain of every plugin we register, in our
// order, through upstream's registry code, with no configuration and the
// decorators given, and
// starts the informers the plugins registered. The pods are in the
// informers' cache; the client's actions are cleared.
func ourChain(b *testing.B, decorators admission.Decorators, pods ...*corev1.Pod) (admission.ValidationInterface, *fake.Clientset) {
	plugins := admission.NewPlugins()
	var names []string
	for _, p := range restored.Plugins {
		p.Register(plugins)
		names = append(names, p.Name)
	}
	noConfig, err := admission.ReadAdmissionConfiguration(names, "", runtime.NewScheme())
	if err != nil {
		b.Fatal(err)
	}
	var objects []runtime.Object
	for _, p := range pods {
		objects = append(objects, p)
	}
	client := fake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	psps := policyv1beta1.SchemeGroupVersion.WithResource("podsecuritypolicies")
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{psps: "PodSecurityPolicyList"}, anyPodPolicy(b))
	wiring := wireInformers{factory: factory, client: client, dynamic: dyn, authz: authorizerfactory.NewAlwaysAllowAuthorizer()}
	chain, err := plugins.NewFromPlugins(names, noConfig, wiring, decorators)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	factory.Start(ctx.Done())
	for typ, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			b.Fatalf("informer for %v did not sync", typ)
		}
	}
	client.ClearActions()
	return chain.(admission.ValidationInterface), client
}

// BenchmarkChain measures a request through our plugins, undecorated and
// decorated as the apiserver serves them: the reload slot innermost (every
// restored plugin but PodSecurityPolicy is reloadable) and the
// rejected-by annotation outermost.
func BenchmarkChain(b *testing.B) {
	cached := fixtures.Pod("web", "shop")
	var pod api.Pod // admission sees the internal type
	if err := corev1conversion.Convert_v1_Pod_To_core_Pod(cached, &pod, nil); err != nil {
		b.Fatal(err)
	}
	// PodSecurityPolicy admits a pod only for a user (or service account)
	// that may use a policy; the authorizer allows everyone.
	requester := &user.DefaultInfo{Name: "deployer", Groups: []string{user.AllAuthenticated}}
	for _, bc := range []struct {
		name  string
		attrs admission.Attributes
	}{
		{"pod-create", admission.NewAttributesRecord(&pod, nil, api.Kind("Pod").WithVersion("v1"), "shop", "web",
			api.Resource("pods").WithVersion("v1"), "", admission.Create, &metav1.CreateOptions{}, false, requester)},
		{"pod-exec", admission.NewAttributesRecord(&api.PodExecOptions{Container: "app"}, nil, api.Kind("PodExecOptions").WithVersion("v1"), "shop", "web",
			api.Resource("pods").WithVersion("v1"), "exec", admission.Connect, nil, false, requester)},
	} {
		for _, dc := range []struct {
			name       string
			decorators admission.Decorators
		}{
			{"undecorated", nil},
			{"served", admission.Decorators{(&reload.Chain{}).Decorator(), rejectedby.Decorator}},
		} {
			b.Run(bc.name+"/"+dc.name, func(b *testing.B) {
				chain, client := ourChain(b, dc.decorators, cached)
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if err := chain.Validate(ctx, bc.attrs, nil); err != nil {
						b.Fatal(err)
					}
				}
				if n := len(client.Actions()); n != 0 {
					b.Fatalf("%d API calls on the request path", n)
				}
			})
		}
	}
}
