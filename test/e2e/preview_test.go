// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// A preview of the next minor (lines/preview) serves a real node that runs
// main's kubelet and kube-proxy, as `sudo make run LINE=<preview> NODES=1`
// gives it (upstream's version skew policy allows a kubelet older than the
// apiserver; the module proxy serves the pre-release's control plane before
// all its kubelet imports). The node is Ready, the kubelet is a minor
// behind the apiserver, CoreDNS runs from the preview's own image, and a pod
// runs after PodSecurityPolicy admitted it. `make test-preview` runs it as
// root; TURNSTILE_NODE_BIN is main's _output/bin.
func TestPreviewOnMainNodes(t *testing.T) {
	nodeBin := os.Getenv("TURNSTILE_NODE_BIN")
	if nodeBin == "" {
		t.Skip("needs TURNSTILE_NODE_BIN, main's kubelet and kube-proxy; `make test-preview` runs it")
	}
	lu := startLocalNodes(t, 1, "-node-bin", nodeBin, "-admission-plugins", "PodSecurityPolicy",
		"-pod-security-policies", "../../examples/podsecuritypolicy")
	config, err := clientcmd.BuildConfigFromFlags("", lu.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(config)
	ctx := t.Context()

	server, err := client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(nodeBin, "kubelet"), "--version").Output()
	if err != nil {
		t.Fatalf("main's kubelet --version: %v", err)
	}
	kubeletVersion := strings.TrimPrefix(strings.TrimSpace(string(out)), "Kubernetes ")
	if !strings.Contains(server.GitVersion, "+turnstile.") || minorOf(t, server.GitVersion) != minorOf(t, kubeletVersion)+1 {
		t.Fatalf("want Turnstile's preview one minor ahead of main's kubelet: apiserver %s, kubelet %s", server.GitVersion, kubeletVersion)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 1 {
		t.Fatalf("nodes: %v, %v", nodes, err)
	}
	if n := nodes.Items[0]; !nodeReady(&n) || n.Status.NodeInfo.KubeletVersion != kubeletVersion {
		t.Fatalf("node %s: ready %v, kubelet %s; want Ready on %s", n.Name, nodeReady(&n), n.Status.NodeInfo.KubeletVersion, kubeletVersion)
	}
	t.Logf("apiserver %s, node %s on kubelet %s", server.GitVersion, nodes.Items[0].Name, kubeletVersion)

	// local-up returned once CoreDNS was available; its image is the one
	// the preview's kubeadm deploys.
	dns, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if err != nil || len(dns.Items) == 0 {
		t.Fatalf("CoreDNS pods: %v, %v", dns, err)
	}
	t.Logf("CoreDNS runs %s", dns.Items[0].Spec.Containers[0].Image)

	// The examples give everyone restricted; the default namespace's
	// service accounts get baseline, which busybox's root user needs.
	lu.mustKubectl(t, "create", "rolebinding", "psp-baseline", "--clusterrole=psp:baseline", "--group=system:serviceaccounts:default")
	lu.mustKubectl(t, "run", "sleeper", "--image="+busybox, "--restart=Never", "--", "sleep", "3600")
	lu.mustKubectl(t, "wait", "--for=condition=Ready", "pod/sleeper", "--timeout=3m")
	pod, err := client.CoreV1().Pods("default").Get(ctx, "sleeper", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := pod.Annotations["kubernetes.io/psp"]; got == "" {
		t.Errorf("pod sleeper runs without PodSecurityPolicy's annotation: %v", pod.Annotations)
	}
}

// minorOf is the minor of a Kubernetes version such as v1.38.0-beta.0+turnstile.1.
func minorOf(t *testing.T, v string) int {
	t.Helper()
	info, err := version.ParseSemantic(strings.TrimPrefix(v, "v"))
	if err != nil {
		t.Fatalf("version %q: %v", v, err)
	}
	return int(info.Minor())
}
