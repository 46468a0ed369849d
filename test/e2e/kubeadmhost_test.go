// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/internal/localnode"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// kubeadmHost is a real node on which `kubeadm init` made the control
// plane (localnode's kubeadm host), with kubeadm's admin.conf as the
// client. TestKubeadmInitForReal and TestKubeadmUpgradeForReal use it.
type kubeadmHost struct {
	kubeadmClient
	cluster *localnode.Cluster
	node    *localnode.Node
	dir     string
	before  map[string]string
	removed bool
}

// kubeadmClient is a kubeadm cluster's admin.conf, for kubectl (main's)
// and client-go.
type kubeadmClient struct {
	kubectl string
	admin   string
	config  *rest.Config
	client  kubernetes.Interface
}

// newKubeadmClient reads kubeadm's admin.conf.
func newKubeadmClient(admin string) (kubeadmClient, error) {
	kubectl, err := framework.Binary("kubectl")
	if err != nil {
		return kubeadmClient{}, err
	}
	config, err := clientcmd.BuildConfigFromFlags("", admin)
	if err != nil {
		return kubeadmClient{}, err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return kubeadmClient{}, err
	}
	return kubeadmClient{kubectl: kubectl, admin: admin, config: config, client: client}, nil
}

// kubeadmHostImages are the image tarballs a kubeadm host imports: the
// node images, and the control-plane images in each of controlPlaneDirs
// (make control-plane-images), and each of extra (make image).
func kubeadmHostImages(nodeImages string, controlPlaneDirs []string, extra ...string) []string {
	var tarballs []string
	for _, img := range oci.NodeImages() {
		tarballs = append(tarballs, filepath.Join(nodeImages, img.Tarball))
	}
	for _, dir := range controlPlaneDirs {
		// The tarballs' names do not depend on the version.
		for _, img := range oci.ControlPlaneImages("v0.0.0") {
			tarballs = append(tarballs, filepath.Join(dir, img.Tarball))
		}
	}
	return append(tarballs, extra...)
}

// imageName is the name of the one image in a docker-archive tarball.
func imageName(t *testing.T, path string) string {
	t.Helper()
	manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
	if err != nil || len(manifest) != 1 || len(manifest[0].RepoTags) == 0 {
		t.Fatalf("reading %s's manifest: %v, %+v", path, err, manifest)
	}
	return manifest[0].RepoTags[0]
}

// newKubeadmHost runs `kubeadm init` as init says on a new node as cfg
// says (its Bin runs kubeadm and the kubelet, its Images are imported;
// newKubeadmHost fills in the rest), and waits for the node to be Ready.
// Whatever fails, the node is removed when the test ends; reset checks
// that kubeadm reset and the removal leave the host as it was.
func newKubeadmHost(t *testing.T, cfg localnode.Config, init localnode.InitOptions) *kubeadmHost {
	t.Helper()
	h := prepareKubeadmHost(t, cfg)
	out, err := h.node.KubeadmInit(t.Context(), init)
	if err != nil || !strings.Contains(out, "Your Kubernetes control-plane has initialized successfully!") {
		t.Fatalf("kubeadm init: %v\n%s\nlogs: %s", err, out, tailLogs(h.dir))
	}
	t.Logf("kubeadm init %s succeeded:\n%s", init.Version, lastLines(out, 12))
	if err := h.connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	return h
}

// prepareKubeadmHost makes a node of cfg ready for `kubeadm init`
// (localnode's StartKubeadm), and checks the host when the test ends.
func prepareKubeadmHost(t *testing.T, cfg localnode.Config) *kubeadmHost {
	t.Helper()
	h := &kubeadmHost{before: hostSnapshot(t)}
	var err error
	// Not t.TempDir(): a subtest's name would make the kubelet's socket
	// paths longer than a unix socket's 107 bytes.
	if h.dir, err = os.MkdirTemp("", "kubeadm-host-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(h.dir) })
	layout, err := localnode.ChooseLayout(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dir, cfg.Nodes, cfg.Layout = h.dir, 1, layout
	cfg.Progress = func(format string, args ...any) { t.Logf(format, args...) }
	h.cluster, err = localnode.Prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !h.removed {
			h.remove(t)
		}
	})
	ctx := t.Context()
	h.node = h.cluster.Nodes[0]
	if err := h.node.StartKubeadm(ctx); err != nil {
		t.Fatal(err)
	}
	return h
}

// prepareKubeadmCluster prepares cfg's nodes in a new directory (cfg's Dir,
// Layout and Progress are filled in) and, when the test ends, stops and
// removes them and checks that nothing of them is left and the host is as
// it was. The caller starts the nodes.
func prepareKubeadmCluster(t *testing.T, prefix string, cfg localnode.Config) *localnode.Cluster {
	t.Helper()
	before := hostSnapshot(t)
	// Not t.TempDir(): the kubelet's socket paths must stay short.
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if cfg.Layout, err = localnode.ChooseLayout(nil); err != nil {
		t.Fatal(err)
	}
	cfg.Dir, cfg.Progress = dir, func(format string, args ...any) { t.Logf(format, args...) }
	cluster, err := localnode.Prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Errorf("stopping the nodes: %v", err)
		}
		if err := cluster.Remove(); err != nil {
			t.Errorf("removing the nodes: %v", err)
		}
		if left := localnode.Leftovers(os.Getpid(), dir); len(left) > 0 {
			t.Errorf("left behind:\n  %s", strings.Join(left, "\n  "))
		}
		compareHost(t, before, hostSnapshot(t))
	})
	return cluster
}

// connect is the test's client of the cluster `kubeadm init` made, once
// the node's pod network (the bridge localnode configures, in place of an
// add-on) is up and the node Ready.
func (h *kubeadmHost) connect(ctx context.Context) error {
	client, err := newKubeadmClient(filepath.Join(h.node.KubeadmDir(), "admin.conf"))
	if err != nil {
		return err
	}
	h.kubeadmClient = client
	return h.node.WaitNetwork(ctx, h.client)
}

// run runs kubectl with admin.conf.
func (h *kubeadmClient) run(args ...string) (string, error) {
	return runKubectl(h.kubectl, h.admin, args...)
}

// must runs kubectl with admin.conf and stops t when it fails.
func (h *kubeadmClient) must(t *testing.T, args ...string) string {
	t.Helper()
	return mustRunKubectl(t, h.kubectl, h.admin, args...)
}

// waitStaticPods waits for the mirror pods of node's four control-plane
// static pods to be Ready and to run the image images names for their
// component (any image for a component it does not name), and returns
// them by component. The kubelet creates each mirror pod once the
// apiserver answers and admits it, which can be after kubeadm returns, and
// its status follows the kubelet's next sync.
func (h *kubeadmClient) waitStaticPods(t *testing.T, node string, images map[string]string) map[string]*corev1.Pod {
	t.Helper()
	pods := map[string]*corev1.Pod{}
	for _, component := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"} {
		var pod *corev1.Pod
		err := wait.PollUntilContextTimeout(t.Context(), time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := h.client.CoreV1().Pods("kube-system").Get(ctx, component+"-"+node, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			pod = p
			want := images[component]
			return podReady(p) && (want == "" || p.Spec.Containers[0].Image == want), nil
		})
		if err != nil {
			t.Errorf("%s's static pod is not Ready with image %q after 3 minutes (%v): %+v", component, images[component], err, pod)
			continue
		}
		if pod.Status.Phase != "Running" || pod.Annotations["kubernetes.io/config.source"] != "file" {
			t.Errorf("%s: phase %s, source %q", pod.Name, pod.Status.Phase, pod.Annotations["kubernetes.io/config.source"])
		}
		pods[component] = pod
	}
	return pods
}

// reset runs `kubeadm reset`, removes the node and checks that the host
// is as it was before newKubeadmHost.
func (h *kubeadmHost) reset(t *testing.T) {
	t.Helper()
	out, err := h.node.KubeadmReset(t.Context())
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if left := h.node.KubeadmState(); len(left) > 0 {
		t.Errorf("kubeadm reset left %v", left)
	}
	h.removeAndCompare(t)
}

// wantPageUndone checks what a task page's undo left: nothing of kubeadm,
// after the page's blocks blocks all ran; then it removes the node and
// checks the host, as reset does.
func (h *kubeadmHost) wantPageUndone(t *testing.T, r *taskRun, blocks int) {
	t.Helper()
	if left := h.node.KubeadmState(); len(left) > 0 {
		t.Errorf("the page's kubeadm reset left %v", left)
	}
	if len(r.outputs) != blocks {
		t.Errorf("%d blocks of %s ran, want %d", len(r.outputs), r.page, blocks)
	}
	h.removeAndCompare(t)
}

// removeAndCompare removes the node, then checks that nothing of it is left
// and the host is as it was before it.
func (h *kubeadmHost) removeAndCompare(t *testing.T) {
	t.Helper()
	h.remove(t)
	if left := localnode.Leftovers(os.Getpid(), h.dir); len(left) > 0 {
		t.Errorf("left behind:\n  %s", strings.Join(left, "\n  "))
	}
	compareHost(t, h.before, hostSnapshot(t))
}

func (h *kubeadmHost) remove(t *testing.T) {
	h.removed = true
	if err := h.cluster.Stop(); err != nil {
		t.Errorf("stopping the node: %v", err)
	}
	if err := h.cluster.Remove(); err != nil {
		t.Errorf("removing the node: %v", err)
	}
}
