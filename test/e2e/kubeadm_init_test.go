package e2e

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
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
	bin := filepath.Dir(kubeadm)
	manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(apiserverTar) })
	if err != nil || len(manifest) != 1 || len(manifest[0].RepoTags) == 0 {
		t.Fatalf("reading %s's manifest: %v, %+v", apiserverTar, err, manifest)
	}
	apiserverImage := manifest[0].RepoTags[0]
	// The e2e binaries are stamped as upstream's, so this is the pinned release.
	kubernetesVersion := version.Get().GitVersion
	var tarballs []string
	for _, img := range append(oci.NodeImages(), oci.ControlPlaneImages(kubernetesVersion)...) {
		tarballs = append(tarballs, filepath.Join(images, img.Tarball))
	}
	tarballs = append(tarballs, apiserverTar)

	before := hostSnapshot(t)
	layout, err := localnode.ChooseLayout(nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c, err := localnode.Prepare(localnode.Config{Dir: dir, Bin: bin, Images: tarballs, Nodes: 1, Layout: layout,
		Progress: func(format string, args ...any) { t.Logf(format, args...) }})
	if err != nil {
		t.Fatal(err)
	}
	removed := false
	remove := func() {
		removed = true
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the node: %v", err)
		}
		if err := c.Remove(); err != nil {
			t.Errorf("removing the node: %v", err)
		}
	}
	t.Cleanup(func() {
		if !removed {
			remove()
		}
	})
	ctx := t.Context()
	n, err := c.StartKubeadmHost(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := n.KubeadmInit(ctx, kubernetesVersion, apiserverImage)
	if err != nil || !strings.Contains(out, "Your Kubernetes control-plane has initialized successfully!") {
		t.Fatalf("kubeadm init: %v\n%s\nlogs: %s", err, out, tailLogs(dir))
	}
	t.Logf("kubeadm init succeeded:\n%s", lastLines(out, 12))
	admin := filepath.Join(n.KubeadmDir(), "admin.conf")
	config, err := clientcmd.BuildConfigFromFlags("", admin)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(config)
	if err := n.WaitNetwork(ctx, client); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(bin, "kubectl"), append([]string{"--kubeconfig", admin}, args...)...).CombinedOutput()
		return string(out), err
	}
	// Subtests pass their own t, so that a failure stops them, not the parent.
	mustKubectl := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := kubectl(args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	t.Run("the control plane runs as static pods, the apiserver ours", func(t *testing.T) {
		for _, component := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"} {
			// The kubelet creates each mirror pod once the apiserver
			// answers, which can be after kubeadm init returns, and its
			// status follows the kubelet's next sync.
			var pod *corev1.Pod
			err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				p, err := client.CoreV1().Pods("kube-system").Get(ctx, component+"-"+n.Name, metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				pod = p
				return podReady(p), nil
			})
			if err != nil {
				t.Errorf("%s's static pod is not Ready after 2 minutes (%v): %+v", component, err, pod)
				continue
			}
			if pod.Status.Phase != "Running" || pod.Annotations["kubernetes.io/config.source"] != "file" {
				t.Errorf("%s: phase %s, source %q", pod.Name, pod.Status.Phase, pod.Annotations["kubernetes.io/config.source"])
			}
			if component == "kube-apiserver" && pod.Spec.Containers[0].Image != apiserverImage {
				t.Errorf("the apiserver's image is %s, want %s", pod.Spec.Containers[0].Image, apiserverImage)
			}
		}
		v, err := client.Discovery().ServerVersion()
		if err != nil || !strings.Contains(v.GitVersion, "+turnstile.") {
			t.Errorf("/version: %+v, %v; want Turnstile's", v, err)
		}
		if out := mustKubectl(t, "get", "nodes"); !strings.Contains(out, n.Name) || !strings.Contains(out, " Ready ") {
			t.Errorf("kubectl get nodes:\n%s", out)
		}
	})

	t.Run("a Deployment's pods run", func(t *testing.T) {
		mustKubectl(t, "create", "deployment", "web", "--image="+oci.AgnhostImage, "--replicas=2", "--", "/agnhost", "netexec", "--http-port=8080")
		mustKubectl(t, "wait", "--for=condition=Available", "deployment/web", "--timeout=3m")
		if out := mustKubectl(t, "exec", "deploy/web", "--", "hostname"); !strings.HasPrefix(out, "web-") {
			t.Errorf("exec hostname: %q", out)
		}
	})

	t.Run("DenyExecOnPrivileged against real pods", func(t *testing.T) {
		privileged := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "privileged"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "c", Image: oci.BusyBoxImage, Command: []string{"sleep", "3600"}, Stdin: true,
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
			}}},
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, privileged, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		mustKubectl(t, "wait", "--for=condition=Ready", "pod/privileged", "--timeout=2m")
		want := `pods "privileged" is forbidden: cannot exec into or attach to a privileged container`
		for _, args := range [][]string{{"exec", "privileged", "--", "true"}, {"attach", "privileged", "-i=false"}} {
			if out, err := kubectl(args...); err == nil || !strings.Contains(out, want) {
				t.Errorf("kubectl %s: %v\n%s\nwant the refusal %q", strings.Join(args, " "), err, out, want)
			}
		}
		// Unlike DenyEscalatingExec, it lets an exec into a host-network
		// pod through: the etcd static pod answers.
		etcdVersion := strings.TrimPrefix(moduleVersion(t, "go.etcd.io/etcd/server/v3"), "v")
		if out := mustKubectl(t, "-n", "kube-system", "exec", "etcd-"+n.Name, "--", "etcd", "--version"); !strings.Contains(out, "etcd Version: "+etcdVersion) {
			t.Errorf("exec into the etcd static pod: %s", out)
		}
	})

	out, err = n.KubeadmReset(ctx)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if left := n.KubeadmState(); len(left) > 0 {
		t.Errorf("kubeadm reset left %v", left)
	}
	remove()
	if left := localnode.Leftovers(os.Getpid(), dir); len(left) > 0 {
		t.Errorf("left behind:\n  %s", strings.Join(left, "\n  "))
	}
	compareHost(t, before, hostSnapshot(t))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
