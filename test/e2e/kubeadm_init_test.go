// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/version"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/internal/localnode"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// `kubeadm init` for real: the pinned kubeadm on a node of its own, the
// real kubelet running the control plane as static pods, our image from
// `make image` as the kube-apiserver, locally built images for the rest.
// The node is Ready, a Deployment's pods run and take an exec, the
// apiserver's DenyExecOnPrivileged refuses an exec and an attach into a
// privileged pod and lets one into the host-network etcd static pod
// through, and `kubeadm reset` removes what kubeadm made; then the host is
// as it was. `make test-node` runs it as root.
func TestKubeadmInitForReal(t *testing.T) {
	images, apiserverTar := os.Getenv("TURNSTILE_NODE_IMAGES"), os.Getenv("TURNSTILE_APISERVER_IMAGE")
	if images == "" || apiserverTar == "" || os.Geteuid() != 0 {
		t.Skip("needs root, TURNSTILE_NODE_IMAGES (with the control-plane images) and TURNSTILE_APISERVER_IMAGE (make image); `make test-node` runs it")
	}
	kubeadm, err := framework.Binary("kubeadm")
	if err != nil {
		t.Fatal(err)
	}
	apiserverImage := imageName(t, apiserverTar)
	// The e2e binaries are stamped as upstream's, so this is the pinned release.
	kubernetesVersion := version.Get().GitVersion
	h := newKubeadmHost(t, localnode.Config{Bin: filepath.Dir(kubeadm), Images: kubeadmHostImages(images, []string{images}, apiserverTar)},
		localnode.InitOptions{Version: kubernetesVersion, APIServerImage: apiserverImage, AdmissionPlugins: []string{"NodeRestriction", "DenyExecOnPrivileged"}})
	ctx, client, n := t.Context(), h.client, h.node

	t.Run("the control plane runs as static pods, the apiserver ours", func(t *testing.T) {
		h.waitStaticPods(t, h.node.Name, map[string]string{"kube-apiserver": apiserverImage})
		v, err := client.Discovery().ServerVersion()
		if err != nil || !strings.Contains(v.GitVersion, "+turnstile.") {
			t.Errorf("/version: %+v, %v; want Turnstile's", v, err)
		}
		if out := h.must(t, "get", "nodes"); !strings.Contains(out, n.Name) || !strings.Contains(out, " Ready ") {
			t.Errorf("kubectl get nodes:\n%s", out)
		}
	})

	t.Run("a Deployment's pods run", func(t *testing.T) {
		h.must(t, "create", "deployment", "web", "--image="+oci.AgnhostImage, "--replicas=2", "--", "/agnhost", "netexec", "--http-port=8080")
		h.must(t, "wait", "--for=condition=Available", "deployment/web", "--timeout=3m")
		if out := h.must(t, "exec", "deploy/web", "--", "hostname"); !strings.HasPrefix(out, "web-") {
			t.Errorf("exec hostname: %q", out)
		}
	})

	t.Run("DenyExecOnPrivileged against real pods", func(t *testing.T) {
		createPrivilegedPod(ctx, t, &h.kubeadmClient, "default")
		wantExecRefused(t, &h.kubeadmClient, "default")
		// Unlike DenyEscalatingExec, it lets an exec into a host-network
		// pod through: the etcd static pod answers.
		etcdVersion := strings.TrimPrefix(moduleVersion(t, "go.etcd.io/etcd/server/v3"), "v")
		if out := h.must(t, "-n", "kube-system", "exec", "etcd-"+n.Name, "--", "etcd", "--version"); !strings.Contains(out, "etcd Version: "+etcdVersion) {
			t.Errorf("exec into the etcd static pod: %s", out)
		}
	})

	h.reset(t)
}

// createPrivilegedPod creates the pod "privileged" in namespace, a
// privileged busybox that sleeps, and waits for it to run.
func createPrivilegedPod(ctx context.Context, t *testing.T, h *kubeadmClient, namespace string) {
	t.Helper()
	privileged := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "privileged"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: oci.BusyBoxImage, Command: []string{"sleep", "3600"}, Stdin: true,
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
		}}},
	}
	if _, err := h.client.CoreV1().Pods(namespace).Create(ctx, privileged, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.must(t, "-n", namespace, "wait", "--for=condition=Ready", "pod/privileged", "--timeout=2m")
}

// wantExecRefused checks that DenyExecOnPrivileged refuses an exec and an
// attach into the pod "privileged" in namespace.
func wantExecRefused(t *testing.T, h *kubeadmClient, namespace string) {
	t.Helper()
	want := `pods "privileged" is forbidden: cannot exec into or attach to a privileged container`
	for _, args := range [][]string{{"exec", "privileged", "--", "true"}, {"attach", "privileged", "-i=false"}} {
		if out, err := h.run(append([]string{"-n", namespace}, args...)...); err == nil || !strings.Contains(out, want) {
			t.Errorf("kubectl %s: %v\n%s\nwant the refusal %q", strings.Join(args, " "), err, out, want)
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
