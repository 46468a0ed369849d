// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/apis/policy/install"
)

func testPSP(name string) *policy.PodSecurityPolicy {
	return &policy.PodSecurityPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
		Spec: policy.PodSecurityPolicySpec{
			AllowedCapabilities:    []api.Capability{"NET_BIND_SERVICE", "CHOWN"},
			Volumes:                []policy.FSType{policy.ConfigMap, policy.Secret},
			SELinux:                policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyRunAsAny},
			RunAsUser:              policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyRunAsAny},
			SupplementalGroups:     policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyRunAsAny},
			FSGroup:                policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyRunAsAny},
			ReadOnlyRootFilesystem: true,
		},
	}
}

func TestStrategy(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	s := NewStrategy(scheme)
	ctx := context.Background()
	// AllowCreateOnUpdate and AllowUnconditionalUpdate return these on every
	// line (their signatures differ).
	if s.NamespaceScoped() || allowCreateOnUpdate || !allowUnconditionalUpdate {
		t.Error("want cluster-scoped, no create on update, unconditional updates")
	}
	good := testPSP("good")
	if errs := s.Validate(ctx, good); len(errs) != 0 {
		t.Errorf("valid object refused: %v", errs)
	}
	bad := testPSP("bad")
	bad.Spec.RunAsUser.Rule = "Nope"
	if errs := s.Validate(ctx, bad); len(errs) == 0 {
		t.Error("invalid runAsUser rule admitted")
	}
	if errs := s.ValidateUpdate(ctx, bad, good); len(errs) == 0 {
		t.Error("invalid update admitted")
	}
	if kinds, _, err := s.ObjectKinds(good); err != nil || kinds[0].Kind != "PodSecurityPolicy" {
		t.Errorf("ObjectKinds: %v %v", kinds, err)
	}
}

func TestTable(t *testing.T) {
	table, err := NewTableConvertor().ConvertToTable(context.Background(),
		&policy.PodSecurityPolicyList{Items: []policy.PodSecurityPolicy{*testPSP("a")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
	}
	want := []any{"a", "false", "NET_BIND_SERVICE,CHOWN", "RunAsAny", "RunAsAny", "RunAsAny", "RunAsAny", true, "configMap,secret"}
	if len(table.Rows) != 1 || len(table.Rows[0].Cells) != len(want) {
		t.Fatalf("columns %v, rows %+v", names, table.Rows)
	}
	for i, c := range table.Rows[0].Cells {
		if c != want[i] {
			t.Errorf("column %s: %#v, want %#v", names[i], c, want[i])
		}
	}
}
