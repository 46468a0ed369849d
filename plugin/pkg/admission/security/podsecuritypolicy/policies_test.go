// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"

	policyv1beta1 "github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
)

var pspResource = policyv1beta1.SchemeGroupVersion.WithResource("podsecuritypolicies")

// unstructuredPolicy is a v1beta1 policy as the dynamic client returns it,
// with every strategy RunAsAny unless runAsUser says otherwise.
func unstructuredPolicy(t *testing.T, name string, runAsUser policyv1beta1.RunAsUserStrategyOptions) *unstructured.Unstructured {
	t.Helper()
	psp := &policyv1beta1.PodSecurityPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1beta1", Kind: "PodSecurityPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1beta1.PodSecurityPolicySpec{
			RunAsUser:          runAsUser,
			SELinux:            policyv1beta1.SELinuxStrategyOptions{Rule: policyv1beta1.SELinuxStrategyRunAsAny},
			SupplementalGroups: policyv1beta1.SupplementalGroupsStrategyOptions{Rule: policyv1beta1.SupplementalGroupsStrategyRunAsAny},
			FSGroup:            policyv1beta1.FSGroupStrategyOptions{Rule: policyv1beta1.FSGroupStrategyRunAsAny},
		},
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(psp)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: content}
}

// TestPolicyCacheFollowsTheInformer runs the plugin's informer against a
// fake dynamic client: the providers appear once the cache has synced,
// sorted by name, follow creations, updates and deletions, and leave out a
// policy the API accepts but that cannot be applied.
func TestPolicyCacheFollowsTheInformer(t *testing.T) {
	runAsAny := policyv1beta1.RunAsUserStrategyOptions{Rule: policyv1beta1.RunAsUserStrategyRunAsAny}
	noRanges := policyv1beta1.RunAsUserStrategyOptions{Rule: policyv1beta1.RunAsUserStrategyMustRunAs}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{pspResource: "PodSecurityPolicyList"},
		unstructuredPolicy(t, "zeta", runAsAny), unstructuredPolicy(t, "alpha", runAsAny), unstructuredPolicy(t, "broken", noRanges))
	factory := informers.NewSharedInformerFactory(kubefake.NewClientset(), 0)

	p := NewPlugin()
	p.SetAuthorizer(authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionAllow, "", nil
	}))
	p.SetDynamicClient(dyn)
	p.SetExternalKubeInformerFactory(factory)
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	if !p.WaitForReady() {
		t.Fatal("cache never synced")
	}
	if got, want := p.engine.Policies(), []string{"alpha", "zeta"}; !slices.Equal(got, want) {
		t.Fatalf("after sync: providers %v, want %v (broken has no ranges and is skipped)", got, want)
	}

	steps := []struct {
		name string
		do   func() error
		want []string
	}{
		{"create", func() error {
			_, err := dyn.Resource(pspResource).Create(ctx, unstructuredPolicy(t, "middle", runAsAny), metav1.CreateOptions{})
			return err
		}, []string{"alpha", "middle", "zeta"}},
		{"update makes one unusable", func() error {
			_, err := dyn.Resource(pspResource).Update(ctx, unstructuredPolicy(t, "middle", noRanges), metav1.UpdateOptions{})
			return err
		}, []string{"alpha", "zeta"}},
		{"update repairs one", func() error {
			_, err := dyn.Resource(pspResource).Update(ctx, unstructuredPolicy(t, "broken", runAsAny), metav1.UpdateOptions{})
			return err
		}, []string{"alpha", "broken", "zeta"}},
		{"delete", func() error {
			return dyn.Resource(pspResource).Delete(ctx, "alpha", metav1.DeleteOptions{})
		}, []string{"broken", "zeta"}},
	}
	for _, step := range steps {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		var got []string
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			got = p.engine.Policies()
			return slices.Equal(got, step.want), nil
		})
		if err != nil {
			t.Fatalf("%s: providers %v, want %v", step.name, got, step.want)
		}
	}
}

func TestValidateInitialization(t *testing.T) {
	allow := authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionAllow, "", nil
	})
	cases := []struct {
		name    string
		setup   func(*Plugin)
		wantErr string
	}{
		{"nothing", func(*Plugin) {}, "PodSecurityPolicy requires an authorizer"},
		{"authorizer only", func(p *Plugin) { p.SetAuthorizer(allow) }, "PodSecurityPolicy requires a lister"},
		{"no informer factory", func(p *Plugin) {
			p.SetAuthorizer(allow)
			p.SetDynamicClient(dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()))
		}, "PodSecurityPolicy requires a lister"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPlugin()
			tc.setup(p)
			err := p.ValidateInitialization()
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("ValidateInitialization() = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
