// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy/install"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/apis/policy/validation"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/psptesting"
)

const examples = "../../../../../examples/podsecuritypolicy/"

// loadExamples decodes the example files strictly: the policies must pass
// the API's validation and build providers, the RBAC objects feed a real
// RBAC authorizer.
func loadExamples(t *testing.T) *Plugin {
	t.Helper()
	policyScheme := runtime.NewScheme()
	install.Install(policyScheme)
	rbacScheme := runtime.NewScheme()
	if err := rbacv1.AddToScheme(rbacScheme); err != nil {
		t.Fatal(err)
	}
	decoders := map[string]runtime.Decoder{
		"policies.yaml": serializer.NewCodecFactory(policyScheme, serializer.EnableStrict).UniversalDecoder(policy.SchemeGroupVersion),
		"rbac.yaml":     serializer.NewCodecFactory(rbacScheme, serializer.EnableStrict).UniversalDeserializer(),
	}
	var grants []interface{}
	p := NewPlugin()
	for file, decoder := range decoders {
		data, err := os.ReadFile(examples + file)
		if err != nil {
			t.Fatal(err)
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			obj, _, err := decoder.Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			switch o := obj.(type) {
			case *policy.PodSecurityPolicy:
				if errs := validation.ValidatePodSecurityPolicy(o); len(errs) > 0 {
					t.Fatalf("%s: policy %s is invalid: %v", file, o.Name, errs)
				}
				p.engine.Set(o)
			case *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *rbacv1.RoleBinding:
				grants = append(grants, o)
			default:
				t.Fatalf("%s: unexpected %T", file, obj)
			}
		}
	}
	if got := len(p.engine.Policies()); got != 3 {
		t.Fatalf("%d usable policies in %spolicies.yaml, want 3", got, examples)
	}
	p.SetAuthorizer(psptesting.RBACAuthorizer(t, grants...))
	return p
}

// TestExamples admits pods under the example policies and grants: what
// each kind of requester gets, and what the restricted policy defaults.
func TestExamples(t *testing.T) {
	p := loadExamples(t)
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"developers", user.AllAuthenticated}}
	node := &user.DefaultInfo{Name: "system:node:worker-1", Groups: []string{user.NodesGroup, user.AllAuthenticated}}
	privileged := func(pod *api.Pod) {
		pod.Spec.Containers[0].SecurityContext = &api.SecurityContext{Privileged: ptr.To(true)}
	}
	withSA := func(pod *api.Pod) { pod.Spec.ServiceAccountName = "default" }
	cases := []struct {
		name      string
		namespace string
		user      user.Info
		edit      func(*api.Pod)
		wantPSP   string // "" expects a rejection
	}{
		{name: "a plain pod from a user gets restricted's defaults", namespace: "team-a", user: alice, wantPSP: "restricted"},
		{name: "a plain pod under a service account", namespace: "team-a", user: alice, edit: withSA, wantPSP: "restricted"},
		{name: "a privileged pod from a user", namespace: "team-a", user: alice, edit: privileged},
		{name: "a privileged pod in kube-system under its service account", namespace: "kube-system", user: alice,
			edit: func(pod *api.Pod) { privileged(pod); withSA(pod) }, wantPSP: "privileged"},
		{name: "a static pod from a node", namespace: "kube-system", user: node, edit: privileged, wantPSP: "privileged"},
		{name: "a privileged pod from a node outside kube-system", namespace: "team-a", user: node, edit: privileged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &api.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: tc.namespace},
				Spec:       api.PodSpec{Containers: []api.Container{{Name: "web", Image: "nginx"}}},
			}
			if tc.edit != nil {
				tc.edit(pod)
			}
			a := admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("version"), tc.namespace, pod.Name,
				api.Resource("pods").WithVersion("version"), "", admission.Create, &metav1.CreateOptions{}, false, tc.user)
			err := p.Admit(context.Background(), a, nil)
			if err == nil {
				err = p.Validate(context.Background(), a, nil)
			}
			switch {
			case tc.wantPSP == "" && (err == nil || !strings.Contains(err.Error(), "Privileged containers are not allowed")):
				t.Fatalf("admission: %v, want privileged refused", err)
			case tc.wantPSP == "":
				return
			case err != nil:
				t.Fatalf("admission: %v", err)
			case pod.Annotations[podsecuritypolicy.ValidatedPSPAnnotation] != tc.wantPSP:
				t.Fatalf("admitted under %q, want %q", pod.Annotations[podsecuritypolicy.ValidatedPSPAnnotation], tc.wantPSP)
			}
			if tc.wantPSP != "restricted" {
				return
			}
			sc, psc := pod.Spec.Containers[0].SecurityContext, pod.Spec.SecurityContext
			if sc == nil || !ptr.Deref(sc.RunAsNonRoot, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) ||
				sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
				t.Errorf("container securityContext %+v, want runAsNonRoot, no privilege escalation, drop ALL", sc)
			}
			if psc == nil || ptr.Deref(psc.FSGroup, 0) != 1 || len(psc.SupplementalGroups) != 1 || psc.SeccompProfile == nil ||
				psc.SeccompProfile.Type != api.SeccompProfileTypeRuntimeDefault {
				t.Errorf("pod securityContext %+v, want fsGroup 1, supplementalGroups [1], seccomp RuntimeDefault", psc)
			}
		})
	}
}
