// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const (
	mapPolicy = "e2e-mark-configmaps"
	mapLabel  = "e2e.turnstile.dev/mutated"
)

// testPolicyMutatingAdmissionPolicy (upstream v1.36, GA and on by default; the
// documentation does not mention it): a policy with an ApplyConfiguration and
// a JSONPatch mutation, bound to namespaces by label, changes the
// configmaps created there, and only there, and only on a server that runs
// the plugin.
func testPolicyMutatingAdmissionPolicy(t *testing.T, s *policyServers) {
	ctx := context.Background()
	on := policyClient(t, s.on, "e2e-admin", "system:masters")
	off := policyClient(t, s.off, "e2e-admin", "system:masters")
	nsMatched := policyNamespace(t, on, map[string]string{"e2e-map": "on"})
	nsOther := policyNamespace(t, on, nil)

	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: mapPolicy},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				}}},
			},
			Mutations: []admissionregistrationv1.Mutation{
				{
					PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
					ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
						Expression: `Object{metadata: Object.metadata{labels: {"` + mapLabel + `": "true"}}}`,
					},
				},
				{
					PatchType: admissionregistrationv1.PatchTypeJSONPatch,
					JSONPatch: &admissionregistrationv1.JSONPatch{
						Expression: `[JSONPatch{op: "add", path: "/data/added-by", value: "` + mapPolicy + `"}]`,
					},
				},
			},
		},
	}
	if _, err := on.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = on.AdmissionregistrationV1().MutatingAdmissionPolicies().Delete(context.Background(), mapPolicy, metav1.DeleteOptions{})
	})
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: mapPolicy},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName:     mapPolicy,
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"e2e-map": "on"}}},
		},
	}
	if _, err := on.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = on.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Delete(context.Background(), mapPolicy, metav1.DeleteOptions{})
	})
	policyEventually(t, "the mutating policy to act", func() (bool, error) {
		cm, err := mapCreate(ctx, on, nsMatched, "probe", true)
		return err == nil && cm.Labels[mapLabel] == "true", err
	})

	for _, tc := range []struct {
		name    string
		c       kubernetes.Interface
		ns      string
		mutated bool
	}{
		{"matched", on, nsMatched, true},
		{"other-namespace", on, nsOther, false},
		{"without-plugin", off, nsMatched, false},
	} {
		if _, err := mapCreate(ctx, tc.c, tc.ns, tc.name, false); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		// Read back through the other server: this is what etcd holds.
		reader := off
		if tc.c == off {
			reader = on
		}
		cm, err := reader.CoreV1().ConfigMaps(tc.ns).Get(ctx, tc.name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: reading back: %v", tc.name, err)
			continue
		}
		label, added := cm.Labels[mapLabel], cm.Data["added-by"]
		if tc.mutated && (label != "true" || added != mapPolicy || cm.Data["key"] != "value") {
			t.Errorf("%s: stored labels %v, data %v; want label %s=true and data added-by=%s next to key=value", tc.name, cm.Labels, cm.Data, mapLabel, mapPolicy)
		}
		if !tc.mutated && (label != "" || added != "") {
			t.Errorf("%s: stored labels %v, data %v; want it unchanged", tc.name, cm.Labels, cm.Data)
		}
	}
}

func mapCreate(ctx context.Context, c kubernetes.Interface, ns, name string, dryRun bool) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"key": "value"}}
	opts := metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return c.CoreV1().ConfigMaps(ns).Create(ctx, cm, opts)
}
