// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/authorization/nodesproxy"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// With --nodes-proxy-get-requires-create, the question "may this principal
// get nodes/proxy?" gets one answer however it is asked: a
// SubjectAccessReview (what the kubelet asks), a SelfSubjectAccessReview as
// the principal itself (its token) and under impersonation, kubectl auth
// can-i, and the apiserver's own nodes/proxy; with and without a node's
// name. The principals hold get on nodes/proxy alone, beside get on nodes,
// beside create on nodes/proxy, and through a wildcard resource; only the
// one with create may. A SelfSubjectRulesReview still lists the get
// (docs/security.md: it lists rules, not decisions). `kubectl auth can-i get
// nodes/proxy` asks about a node named proxy, which is why it answered yes
// for a principal that may get nodes (issue 76); `--subresource=proxy` asks
// about the subresource. The kubelet's side, a SubjectAccessReview, is
// TestAdversarialNodesProxyGetRequiresCreate's on a real node.
func TestNodesProxyAnsweredAlike(t *testing.T) {
	t.Parallel() // its own apiserver: see "Running in parallel" in README.md
	s, admin := startServer(t, "nodes-proxy-review", "--"+nodesproxy.Flag+"=true")
	ctx := context.Background()
	ns := createNamespace(t, admin)
	// A node whose kubelet nobody serves: an allowed get through the
	// apiserver's nodes/proxy fails to reach it, a refused one is 403.
	if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-proxy-node"},
		Status: corev1.NodeStatus{
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 1}},
		},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().Nodes().Delete(context.Background(), "e2e-proxy-node", metav1.DeleteOptions{})
	})

	principals := []struct {
		name  string
		rules []rbacv1.PolicyRule
		may   bool
	}{
		{"get-only", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get"}}}, false},
		{"get-and-nodes", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/proxy", "nodes"}, Verbs: []string{"get", "list"}}}, false},
		{"get-and-create", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get", "create"}}}, true},
		{"wildcard", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"*"}, Verbs: []string{"get"}}}, false},
	}
	kubectl, err := framework.Binary("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range principals {
		name := ns + "-" + p.name
		if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: p.name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: p.rules}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: p.name, Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = admin.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	for _, p := range principals {
		t.Run(p.name, func(t *testing.T) {
			username := "system:serviceaccount:" + ns + ":" + p.name
			groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
			token, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, p.name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			self := tokenClient(t, s.URL, s, token.Status.Token)
			impersonated := impersonating(t, s, username, groups...)
			answers := map[string]bool{}
			for _, node := range []string{"", "e2e-proxy-node"} {
				attrs := &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "proxy", Name: node}
				sar, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
					User: username, Groups: groups, ResourceAttributes: attrs}}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				answers["SubjectAccessReview, name "+quoted(node)] = sar.Status.Allowed
				for who, c := range map[string]kubernetes.Interface{"its own token": self, "impersonation": impersonated} {
					ssar, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
						ResourceAttributes: attrs}}, metav1.CreateOptions{})
					if err != nil {
						t.Fatal(err)
					}
					answers["SelfSubjectAccessReview by "+who+", name "+quoted(node)] = ssar.Status.Allowed
				}
			}
			kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
			writeTokenKubeconfig(t, s, token.Status.Token, kubeconfig)
			canI := func(args ...string) bool {
				out, _ := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig, "auth", "can-i"}, args...)...).Output()
				return strings.TrimSpace(string(out)) == "yes"
			}
			answers["kubectl auth can-i get nodes --subresource=proxy"] = canI("get", "nodes", "--subresource=proxy")
			answers["kubectl auth can-i get nodes/e2e-proxy-node --subresource=proxy"] = canI("get", "nodes/e2e-proxy-node", "--subresource=proxy")
			// The apiserver's own nodes/proxy: allowed means it tried the
			// kubelet, refused is 403 with the rule's reason.
			err = self.CoreV1().RESTClient().Get().AbsPath("api/v1/nodes/e2e-proxy-node/proxy/healthz").Do(ctx).Error()
			answers["get through the apiserver's nodes/proxy"] = !apierrors.IsForbidden(err)
			if apierrors.IsForbidden(err) && !strings.Contains(err.Error(), nodesproxy.Reason) {
				t.Errorf("the apiserver's nodes/proxy refused with %v, want the rule's reason", err)
			}
			for how, allowed := range answers {
				if allowed != p.may {
					t.Errorf("%s: allowed %t, want %t", how, allowed, p.may)
				}
			}
			// kubectl reads nodes/proxy as TYPE/NAME: a node named proxy.
			if got, want := canI("get", "nodes/proxy"), p.name == "get-and-nodes" || p.name == "wildcard"; got != want {
				t.Errorf("kubectl auth can-i get nodes/proxy (a node named proxy): %t, want %t", got, want)
			}
			// The rules review lists rules, not decisions: the get stays.
			rules, err := self.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			listed := false
			for _, r := range rules.Status.ResourceRules {
				listed = listed || (containsAny(r.Verbs, "get", "*") && containsAny(r.Resources, "nodes/proxy", "*"))
			}
			if !listed {
				t.Errorf("SelfSubjectRulesReview does not list the get on nodes/proxy: %+v", rules.Status.ResourceRules)
			}
		})
	}
}

func quoted(s string) string { return "\"" + s + "\"" }

func containsAny(list []string, items ...string) bool {
	for _, l := range list {
		for _, i := range items {
			if l == i {
				return true
			}
		}
	}
	return false
}

// tokenClient is a clientset that authenticates with a bearer token only.
func tokenClient(t *testing.T, host string, s interface {
	Config(string, ...string) (*rest.Config, error)
}, token string) kubernetes.Interface {
	t.Helper()
	admin, err := s.Config("e2e-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData}})
}

// writeTokenKubeconfig writes a kubeconfig that authenticates with token.
func writeTokenKubeconfig(t *testing.T, s interface {
	Config(string, ...string) (*rest.Config, error)
}, token, path string) {
	t.Helper()
	admin, err := s.Config("e2e-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	config := clientcmdapi.NewConfig()
	config.Clusters["e2e"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData}
	config.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: token}
	config.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "sa"}
	config.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		t.Fatal(err)
	}
}
