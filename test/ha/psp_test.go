// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package ha

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	policyv1beta1 "github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
	pspclient "github.com/turnstile-k8s/turnstile/pkg/client/clientset/versioned"
	pspv1beta1 "github.com/turnstile-k8s/turnstile/pkg/client/clientset/versioned/typed/policy/v1beta1"
)

// pspPlugins turns PodSecurityPolicy on after kubeadm's NodeRestriction
// (the flag is a list: a second occurrence appends).
const pspPlugins = "--enable-admission-plugins=PodSecurityPolicy"

// testMixedPodSecurityPolicy shows what a mixed control plane does with
// PodSecurityPolicy, and checks the rollout order docs/reliability.md
// gives: a vanilla apiserver serves no policy/v1beta1 and admits pods
// without the plugin, so a pod sent to it escapes the policies until every
// server runs Turnstile with the plugin on; the pods that escaped are the
// ones without the kubernetes.io/psp annotation.
func testMixedPodSecurityPolicy(ctx context.Context, t *testing.T, c *Cluster) {
	t1, t2, up := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	if t1.Binary != Turnstile || t2.Binary != Turnstile || up.Binary != Upstream {
		t.Fatalf("want node1 and node2 Turnstile and node3 upstream, have %s, %s, %s", t1.Binary, t2.Binary, up.Binary)
	}
	// Step 3 of the order: the plugin on, one Turnstile server at a time.
	for _, n := range []*Node{t1, t2} {
		restart(ctx, t, n, Turnstile, pspPlugins)
	}
	if err := c.Converge(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}

	const ns = "psp-mixed"
	admin := clientOf(t, t1)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller-manager runs here to create it.
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := policiesOf(t, t1).Create(ctx, restrictedPolicy(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Through either Turnstile server: a plain pod is admitted under the
	// policy, a privileged one refused.
	for _, n := range []*Node{t1, t2} {
		client := clientOf(t, n)
		var admitted *corev1.Pod
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			p, err := client.CoreV1().Pods(ns).Create(ctx, pod("plain-via-"+n.Name, false), metav1.CreateOptions{})
			if err != nil {
				return false, nil // until the server's informer has the policy
			}
			admitted = p
			return true, nil
		})
		if err != nil {
			t.Fatalf("%s never admitted a plain pod under the restricted policy", n.Name)
		}
		if got := admitted.Annotations["kubernetes.io/psp"]; got != "restricted" {
			t.Errorf("a plain pod through %s was admitted under %q, want restricted", n.Name, got)
		}
		_, err = client.CoreV1().Pods(ns).Create(ctx, pod("privileged-via-"+n.Name, true), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurityPolicy: unable to admit pod") {
			t.Errorf("a privileged pod through %s: want PodSecurityPolicy's refusal, got %v", n.Name, err)
		}
	}

	// Through the vanilla server: no policy API, and no enforcement.
	if _, err := policiesOf(t, up).List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("listing PodSecurityPolicies through the upstream apiserver: want 404, got %v", err)
	}
	if groups, err := clientOf(t, up).Discovery().ServerGroups(); err != nil {
		t.Error(err)
	} else if servesPolicyV1beta1(groups.Groups) {
		t.Errorf("the upstream apiserver's discovery lists policy/v1beta1")
	}
	if _, err := clientOf(t, up).CoreV1().Pods(ns).Create(ctx, pod("escaped-via-"+up.Name, true), metav1.CreateOptions{}); err != nil {
		t.Errorf("the upstream apiserver has no PodSecurityPolicy plugin, so it should admit a privileged pod; it refused: %v", err)
	}

	// Step 4: the last server replaced; nothing escapes any more.
	restart(ctx, t, up, Turnstile, pspPlugins)
	if err := c.Converge(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err := clientOf(t, up).CoreV1().Pods(ns).Create(ctx, pod("privileged-via-"+up.Name, true), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("a privileged pod through %s, now Turnstile with the plugin: want refused, got %v", up.Name, err)
	}
	// Step 5: the audit finds exactly the pod that escaped.
	pods, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var unchecked []string
	for _, p := range pods.Items {
		if _, ok := p.Annotations["kubernetes.io/psp"]; !ok {
			unchecked = append(unchecked, p.Name)
		}
	}
	if want := []string{"escaped-via-" + up.Name}; !slices.Equal(unchecked, want) {
		t.Errorf("pods without kubernetes.io/psp: %v, want %v", unchecked, want)
	}

	// Rolling back one server to vanilla leaves the policies in etcd for
	// the Turnstile servers.
	restart(ctx, t, up, Upstream)
	if err := c.Converge(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := policiesOf(t, t2).Get(ctx, "restricted", metav1.GetOptions{}); err != nil {
		t.Errorf("the policy after a rollback of %s: %v", up.Name, err)
	}
}

func servesPolicyV1beta1(groups []metav1.APIGroup) bool {
	for _, g := range groups {
		if g.Name != "policy" {
			continue
		}
		for _, v := range g.Versions {
			if v.Version == "v1beta1" {
				return true
			}
		}
	}
	return false
}

func clientOf(t *testing.T, n *Node) kubernetes.Interface {
	t.Helper()
	client, err := n.Client()
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func policiesOf(t *testing.T, n *Node) pspv1beta1.PodSecurityPolicyInterface {
	t.Helper()
	config := n.Config()
	config.WarningHandler = rest.NoWarnings{} // the API's deprecation warning
	client, err := pspclient.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return client.PolicyV1beta1().PodSecurityPolicies()
}

// restrictedPolicy allows everything but privileged containers.
func restrictedPolicy() *policyv1beta1.PodSecurityPolicy {
	return &policyv1beta1.PodSecurityPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "restricted"},
		Spec: policyv1beta1.PodSecurityPolicySpec{
			Privileged:         false,
			Volumes:            []policyv1beta1.FSType{policyv1beta1.All},
			SELinux:            policyv1beta1.SELinuxStrategyOptions{Rule: policyv1beta1.SELinuxStrategyRunAsAny},
			RunAsUser:          policyv1beta1.RunAsUserStrategyOptions{Rule: policyv1beta1.RunAsUserStrategyRunAsAny},
			SupplementalGroups: policyv1beta1.SupplementalGroupsStrategyOptions{Rule: policyv1beta1.SupplementalGroupsStrategyRunAsAny},
			FSGroup:            policyv1beta1.FSGroupStrategyOptions{Rule: policyv1beta1.FSGroupStrategyRunAsAny},
		},
	}
}

func pod(name string, privileged bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	if privileged {
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	}
	return p
}
