// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const (
	vapPolicy          = "e2e-replica-limit"
	vapWarningPrefix   = "Validation failed for ValidatingAdmissionPolicy "
	vapAuditAnnotation = "validation.policy.admission.k8s.io/validation_failure"
	vapForbiddenLabel  = "e2e-vap-forbidden"
)

// vapFailure is one entry of the validation_failure audit annotation.
type vapFailure struct {
	Message           string   `json:"message"`
	Policy            string   `json:"policy"`
	Binding           string   `json:"binding"`
	ExpressionIndex   int      `json:"expressionIndex"`
	ValidationActions []string `json:"validationActions"`
}

// testPolicyValidatingAdmissionPolicy binds one policy with ConfigMap params
// (deployments may not have more replicas than the param's maxReplicas, nor
// a forbidden label) four times, to namespaces chosen by label:
//
//	binding                  paramRef                                    actions
//	e2e-vap-deny             name "limits" in the params namespace, Deny  Deny  (excludes deployments named "exempt")
//	e2e-vap-warn             selector over the params namespace, Deny     Warn
//	e2e-vap-audit            name "limits" in the object's namespace, Allow  Audit
//	e2e-vap-missing-param    name "absent" (created later), Deny          Deny
func testPolicyValidatingAdmissionPolicy(t *testing.T, s *policyServers) {
	ctx := context.Background()
	on, warnings := policyWarnClient(t, s.on, "e2e-admin", "system:masters")
	off, offWarnings := policyWarnClient(t, s.off, "e2e-admin", "system:masters")

	params := policyNamespace(t, on, nil)
	nsDeny := policyNamespace(t, on, map[string]string{"e2e-vap": "deny"})
	nsWarn := policyNamespace(t, on, map[string]string{"e2e-vap": "warn"})
	nsAudit := policyNamespace(t, on, map[string]string{"e2e-vap": "audit"})
	nsAuditNoParam := policyNamespace(t, on, map[string]string{"e2e-vap": "audit"})
	nsMissing := policyNamespace(t, on, map[string]string{"e2e-vap": "missing-param"})
	nsOther := policyNamespace(t, on, map[string]string{"e2e-vap": "none"})

	// The params exist before the policy, so its param informer starts with them.
	for _, p := range []struct {
		ns, name, max string
		selected      bool
	}{
		{params, "limits", "3", false},
		{params, "limit-a", "4", true},
		{params, "limit-b", "6", true},
		{nsAudit, "limits", "1", false},
	} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: p.name}, Data: map[string]string{"maxReplicas": p.max}}
		if p.selected {
			cm.Labels = map[string]string{"e2e-vap-limit": "selected"}
		}
		if _, err := on.CoreV1().ConfigMaps(p.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	deployments := admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: vapPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			ParamKind:     &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: deployments}},
			},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression:        "object.spec.replicas <= int(params.data.maxReplicas)",
					MessageExpression: "'replicas ' + string(object.spec.replicas) + ' exceed maxReplicas ' + params.data.maxReplicas + ' of ' + params.metadata.name",
				},
				{
					Expression: "!has(object.metadata.labels) || !('" + vapForbiddenLabel + "' in object.metadata.labels)",
					Message:    "label " + vapForbiddenLabel + " is not allowed",
					Reason:     ptr.To(metav1.StatusReasonForbidden),
				},
			},
		},
	}
	if _, err := on.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = on.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(context.Background(), vapPolicy, metav1.DeleteOptions{})
	})
	selector := func(value string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"e2e-vap": value}}
	}
	// The deny binding comes last: once it acts, the server has seen all four.
	bindings := []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		vapBinding("e2e-vap-audit", &admissionregistrationv1.ParamRef{Name: "limits", ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)},
			admissionregistrationv1.Audit, &admissionregistrationv1.MatchResources{NamespaceSelector: selector("audit")}),
		vapBinding("e2e-vap-warn", &admissionregistrationv1.ParamRef{
			Namespace: params, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"e2e-vap-limit": "selected"}},
			ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction),
		}, admissionregistrationv1.Warn, &admissionregistrationv1.MatchResources{NamespaceSelector: selector("warn")}),
		vapBinding("e2e-vap-missing-param", &admissionregistrationv1.ParamRef{Name: "absent", Namespace: params, ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
			admissionregistrationv1.Deny, &admissionregistrationv1.MatchResources{NamespaceSelector: selector("missing-param")}),
		vapBinding("e2e-vap-deny", &admissionregistrationv1.ParamRef{Name: "limits", Namespace: params, ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
			admissionregistrationv1.Deny, &admissionregistrationv1.MatchResources{
				NamespaceSelector:    selector("deny"),
				ExcludeResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{ResourceNames: []string{"exempt"}, RuleWithOperations: deployments}},
			}),
	}
	for _, b := range bindings {
		if _, err := on.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = on.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(context.Background(), b.Name, metav1.DeleteOptions{})
		})
	}
	policyEventually(t, "the deny binding to act", func() (bool, error) {
		_, err := vapCreate(ctx, on, nsDeny, "probe", 5, nil, true)
		return apierrors.IsInvalid(err), nil
	})
	warnings.take(t, "")

	t.Run("Deny", func(t *testing.T) {
		const denied = "ValidatingAdmissionPolicy '" + vapPolicy + "' with binding 'e2e-vap-deny' denied request: "
		if _, err := vapCreate(ctx, on, nsDeny, "small", 2, nil, false); err != nil {
			t.Errorf("2 replicas: %v, want admitted", err)
		}
		// No reason in the validation: 422 Invalid.
		_, err := vapCreate(ctx, on, nsDeny, "large", 5, nil, false)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `deployments.apps "large" is forbidden: `+denied+"replicas 5 exceed maxReplicas 3 of limits") {
			t.Errorf("5 replicas: %v, want 422 from the deny binding", err)
		}
		_, err = on.AppsV1().Deployments(nsDeny).Patch(ctx, "small", types.MergePatchType, []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), denied+"replicas 4 exceed maxReplicas 3 of limits") {
			t.Errorf("update to 4 replicas: %v, want 422 from the deny binding", err)
		}
		// reason: Forbidden gives 403.
		_, err = vapCreate(ctx, on, nsDeny, "labelled", 1, map[string]string{vapForbiddenLabel: "x"}, false)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), denied+"label "+vapForbiddenLabel+" is not allowed") {
			t.Errorf("forbidden label: %v, want 403 from the deny binding", err)
		}
		if _, err := vapCreate(ctx, on, nsDeny, "exempt", 5, nil, false); err != nil {
			t.Errorf("excluded by excludeResourceRules: %v, want admitted", err)
		}
		if _, err := vapCreate(ctx, on, nsOther, "large", 5, map[string]string{vapForbiddenLabel: "x"}, false); err != nil {
			t.Errorf("namespace outside the namespaceSelector: %v, want admitted", err)
		}
		// Without the plugin, the same policy and binding do nothing.
		if _, err := vapCreate(ctx, off, nsDeny, "large-off", 5, map[string]string{vapForbiddenLabel: "x"}, false); err != nil {
			t.Errorf("without ValidatingAdmissionPolicy: %v, want admitted", err)
		}
		if vap := warnings.take(t, vapWarningPrefix); len(vap) > 0 {
			t.Errorf("deny binding gave warnings %q", vap)
		}
	})

	t.Run("Warn", func(t *testing.T) {
		const warned = vapWarningPrefix + "'" + vapPolicy + "' with binding 'e2e-vap-warn': "
		for _, tc := range []struct {
			replicas int32
			want     []string
		}{
			{3, nil},
			// Only the params the selector picks count, each on its own.
			{5, []string{warned + "replicas 5 exceed maxReplicas 4 of limit-a"}},
			{7, []string{warned + "replicas 7 exceed maxReplicas 4 of limit-a", warned + "replicas 7 exceed maxReplicas 6 of limit-b"}},
		} {
			name := fmt.Sprintf("replicas-%d", tc.replicas)
			if _, err := vapCreate(ctx, on, nsWarn, name, tc.replicas, nil, false); err != nil {
				t.Errorf("%s: %v, want admitted with warnings", name, err)
			}
			got := warnings.take(t, vapWarningPrefix)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: warnings %q, want %q", name, got, tc.want)
			}
		}
		if _, err := vapCreate(ctx, off, nsWarn, "replicas-7-off", 7, nil, false); err != nil {
			t.Errorf("without ValidatingAdmissionPolicy: %v, want admitted", err)
		}
		if got := offWarnings.take(t, vapWarningPrefix); len(got) > 0 {
			t.Errorf("without ValidatingAdmissionPolicy: warnings %q, want none", got)
		}
	})

	t.Run("Audit", func(t *testing.T) {
		for _, tc := range []struct {
			ns, name string
			replicas int32
			labels   map[string]string
			want     *vapFailure // nil: no annotation
		}{
			{nsAudit, "two", 2, nil, &vapFailure{Message: "replicas 2 exceed maxReplicas 1 of limits", ExpressionIndex: 0}},
			{nsAudit, "labelled", 1, map[string]string{vapForbiddenLabel: "x"}, &vapFailure{Message: "label " + vapForbiddenLabel + " is not allowed", ExpressionIndex: 1}},
			{nsAudit, "one", 1, nil, nil},
			// No "limits" in this namespace, and parameterNotFoundAction Allow.
			{nsAuditNoParam, "two", 2, nil, nil},
		} {
			if _, err := vapCreate(ctx, on, tc.ns, tc.name, tc.replicas, tc.labels, false); err != nil {
				t.Errorf("%s: %v, want admitted", tc.name, err)
				continue
			}
			if got := warnings.take(t, vapWarningPrefix); len(got) > 0 {
				t.Errorf("%s: audit binding gave warnings %q", tc.name, got)
			}
			event := policyAuditEvent(t, s.onAudit, "create", "deployments", tc.ns, tc.name)
			value, ok := event.Annotations[vapAuditAnnotation]
			if tc.want == nil {
				if ok {
					t.Errorf("%s: audit annotation %s=%s, want none", tc.name, vapAuditAnnotation, value)
				}
				continue
			}
			var got []vapFailure
			if err := json.Unmarshal([]byte(value), &got); err != nil {
				t.Errorf("%s: audit annotation %s=%q: %v", tc.name, vapAuditAnnotation, value, err)
				continue
			}
			want := *tc.want
			want.Policy, want.Binding, want.ValidationActions = vapPolicy, "e2e-vap-audit", []string{"Audit"}
			if len(got) != 1 || got[0].Message != want.Message || got[0].Policy != want.Policy || got[0].Binding != want.Binding ||
				got[0].ExpressionIndex != want.ExpressionIndex || !slices.Equal(got[0].ValidationActions, want.ValidationActions) {
				t.Errorf("%s: audit annotation %s=%s, want [%+v]", tc.name, vapAuditAnnotation, value, want)
			}
		}
		if _, err := vapCreate(ctx, off, nsAudit, "two-off", 2, nil, false); err != nil {
			t.Errorf("without ValidatingAdmissionPolicy: %v, want admitted", err)
		}
		if event := policyAuditEvent(t, s.offAudit, "create", "deployments", nsAudit, "two-off"); event.Annotations[vapAuditAnnotation] != "" {
			t.Errorf("without ValidatingAdmissionPolicy: audit annotation %q", event.Annotations[vapAuditAnnotation])
		}
	})

	t.Run("ParameterNotFoundAction", func(t *testing.T) {
		_, err := vapCreate(ctx, on, nsMissing, "one", 1, nil, false)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(),
			"ValidatingAdmissionPolicy '"+vapPolicy+"' with binding 'e2e-vap-missing-param' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction") {
			t.Errorf("param absent: %v, want denied", err)
		}
		if _, err := vapCreate(ctx, off, nsMissing, "one-off", 1, nil, false); err != nil {
			t.Errorf("without ValidatingAdmissionPolicy: %v, want admitted", err)
		}
		absent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "absent"}, Data: map[string]string{"maxReplicas": "10"}}
		if _, err := on.CoreV1().ConfigMaps(params).Create(ctx, absent, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		policyEventually(t, "the param to be found", func() (bool, error) {
			_, err := vapCreate(ctx, on, nsMissing, "probe", 1, nil, true)
			return err == nil, err
		})
		if _, err := vapCreate(ctx, on, nsMissing, "nine", 9, nil, false); err != nil {
			t.Errorf("9 replicas with maxReplicas 10: %v, want admitted", err)
		}
		if _, err := vapCreate(ctx, on, nsMissing, "eleven", 11, nil, false); !apierrors.IsInvalid(err) {
			t.Errorf("11 replicas with maxReplicas 10: %v, want 422", err)
		}
	})
}

func vapBinding(name string, param *admissionregistrationv1.ParamRef, action admissionregistrationv1.ValidationAction,
	match *admissionregistrationv1.MatchResources) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        vapPolicy,
			ParamRef:          param,
			MatchResources:    match,
			ValidationActions: []admissionregistrationv1.ValidationAction{action},
		},
	}
}

// vapCreate creates a deployment of pause pods.
func vapCreate(ctx context.Context, c kubernetes.Interface, ns, name string, replicas int32, labels map[string]string, dryRun bool) (*appsv1.Deployment, error) {
	selector := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
	opts := metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return c.AppsV1().Deployments(ns).Create(ctx, d, opts)
}
