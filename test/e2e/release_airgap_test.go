// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distribution/reference"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/version"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/internal/localnode"
)

// The air-gap bundle as an operator installs it where no registry can be
// reached, as docs/tasks/air-gap-install.md says, every block of the page
// run as written (sudo dropped, the page's release, key and kubeadm the
// test's): the release's bundle for this machine's platform, its list's
// signature verified with the release's key, imported into a new node's
// containerd, whose registries are the run's own, which serves nothing
// and logs every request, with containerd's sandbox image the bundle's
// pause (the page's step 2, which the test sets on its node); then
// `kubeadm init` from it, with the bundle's image repository, kubeadm's
// default pull policy (IfNotPresent: preflight and the kubelet pull
// whatever the node lacks) and both addons. Before the page's undo: the
// node is Ready; every pod of the control plane, kube-proxy and CoreDNS
// runs an image the bundle's list names, which containerd holds with the
// list's digest; CoreDNS, which reaches the apiserver through kube-proxy's
// Service rules, answers for the cluster; and the registry's log is empty.
// Last, a pod of an image the bundle lacks shows that a pull would have
// been in the log. The page's undo leaves the host as it was. make
// test-release runs it as root, on each line.
func TestReleaseAirGap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the node creates network namespaces, a bridge, cgroups and mounts (make test-release runs it)")
	}
	dir := releaseDir(t)
	if _, err := os.Stat(filepath.Join(dir, oci.AirGapArchive("linux", runtime.GOARCH)+".oci.tar")); err != nil {
		t.Skip("no air-gap bundle in the release: make release builds one (AIRGAP= leaves it out, as make test-e2e's does); make test-release runs this")
	}
	key := os.Getenv("TURNSTILE_RELEASE_SIGNING_KEY")
	if key == "" {
		t.Skip("no signed release: make test-release makes a key, signs each line's release and runs this")
	}
	pub := strings.TrimSuffix(key, ".key") + ".pub"
	b := readAirGapBundle(t, dir)
	list := b.images
	kubeadm := mustBinary(t, "kubeadm")
	// The e2e binaries are stamped as upstream's: this is the release's Kubernetes version.
	kubernetesVersion := version.Get().GitVersion
	digest := map[string]string{}
	for _, img := range list {
		digest[img.name] = img.digest
	}

	t.Run("the list is what kubeadm names, and ours", func(t *testing.T) {
		out, err := exec.Command(kubeadm, "config", "images", "list", "--image-repository", b.repository, "--kubernetes-version", kubernetesVersion).CombinedOutput()
		if err != nil {
			t.Fatalf("kubeadm config images list: %v\n%s", err, out)
		}
		var want []string
		for _, line := range strings.Fields(string(out)) {
			ref, err := reference.ParseDockerRef(line)
			if err != nil {
				t.Fatalf("kubeadm config images list: %q: %v", line, err)
			}
			want = append(want, ref.String())
		}
		var got []string
		for _, img := range list {
			got = append(got, img.name)
		}
		// The last is ours under the release's own tag.
		if !slices.Equal(got[:len(got)-1], want) || !strings.Contains(got[len(got)-1], "/kube-apiserver:v") || digest[got[0]] != digest[got[len(got)-1]] {
			t.Errorf("the bundle's list:\n  %s\nkubeadm config images list (%s, %s):\n  %s\nand ours under its own tag, the same digest",
				strings.Join(got, "\n  "), b.repository, kubernetesVersion, strings.Join(want, "\n  "))
		}
	})

	// The page imports the bundle; step 2's sandbox image is the node's.
	h := prepareKubeadmHost(t, localnode.Config{Bin: filepath.Dir(kubeadm), Offline: true, SandboxImage: b.pause})
	ctx := t.Context()
	registryLog := h.cluster.RegistryLog()
	describePods := func() string {
		out, _ := h.run("-n", "kube-system", "describe", "pods")
		return lastLines(out, 80)
	}
	page := "../../docs/tasks/air-gap-install.md"
	pageVersion := "v1.37.2" // what the page names: main's release
	r := runTaskPage(t, page, 0, taskOptions{
		replace: map[string]string{
			"/etc/kubernetes/admin.conf": filepath.Join(h.node.KubeadmDir(), "admin.conf"),
			"ctr -n k8s.io":              "ctr --address " + h.node.Socket() + " -n k8s.io",
			"$PWD/cosign.pub":            pub,
			"$PWD/_output/release":       dir,
			pageVersion:                  kubernetesVersion,
		},
		env: []string{"PATH=" + serveKubeadm(t, h, localnode.InitOptions{ControlPlaneTaint: true, Addons: true, PullIfNotPresent: true}) +
			string(os.PathListSeparator) + filepath.Dir(kubeadm) + string(os.PathListSeparator) + os.Getenv("PATH"),
			"HOME=" + t.TempDir(), "SIGSTORE_NO_CACHE=1"},
		beforeUndo: func(r *taskRun) {
			if len(r.outputs) != 3 {
				t.Fatalf("%d blocks of %s ran before its undo, want 3", len(r.outputs), page)
			}
			if out := r.outputs[0]; !strings.Contains(out, "every image of the list is imported as signed") {
				t.Errorf("the page's import did not end with every image as signed:\n%s", out)
			}
			for _, line := range strings.Fields(r.outputs[2]) {
				if strings.Contains(line, "/") && !strings.Contains(line, b.repository+"/") {
					t.Errorf("the page's pods run %s, not an image of %s", line, b.repository)
				}
			}
			checkAirGapNode(t, h, digest, registryLog, describePods)
		},
	})
	if images, err := h.node.Images(ctx); err != nil || len(images) > 0 {
		t.Errorf("the page's undo left images: %v, %v", images, err)
	}
	h.wantPageUndone(t, r, 4)
}

// checkAirGapNode checks the node of TestReleaseAirGap beyond what the page
// shows: the bundle's images (digest, by name) in every pod and in
// containerd, CoreDNS's answer, and nothing in the registry's log until a
// pod of an image the bundle lacks is created.
func checkAirGapNode(t *testing.T, h *kubeadmHost, digest map[string]string, registryLog string, describePods func() string) {
	t.Helper()
	ctx, client := t.Context(), h.client
	t.Run("the control plane and both addons run the bundle's images", func(t *testing.T) {
		h.waitStaticPods(t, h.node.Name, nil)
		if v, err := client.Discovery().ServerVersion(); err != nil || !strings.Contains(v.GitVersion, "+turnstile.") {
			t.Errorf("/version: %+v, %v; want Turnstile's", v, err)
		}
		if err := h.cluster.WaitDNS(ctx, client); err != nil {
			t.Fatalf("CoreDNS: %v\n%s", err, describePods())
		}
		err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			ds, err := client.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{})
			return err == nil && ds.Status.DesiredNumberScheduled == 1 && ds.Status.NumberReady == 1, nil
		})
		if err != nil {
			t.Fatalf("kube-proxy's DaemonSet is not ready: %v\n%s", err, describePods())
		}
		pods, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, p := range pods.Items {
			for _, c := range p.Status.ContainerStatuses {
				if _, ok := digest[c.Image]; !ok {
					t.Errorf("pod %s runs %s, which the bundle's list does not name", p.Name, c.Image)
				}
				seen[path.Base(strings.Split(c.Image, ":")[0])] = true
			}
		}
		// An imported image has no repository digest for the kubelet to
		// report (its imageID is the configuration's digest): containerd
		// keeps each under its name with the list's manifest digest.
		imported, err := h.node.Images(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for name, d := range digest {
			if imported[name] != d {
				t.Errorf("containerd has %s at %q; the bundle's list says %s", name, imported[name], d)
			}
		}
		for _, component := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd", "kube-proxy", "coredns"} {
			if !seen[component] {
				t.Errorf("no pod runs the bundle's %s", component)
			}
		}
	})

	t.Run("CoreDNS answers for the cluster", func(t *testing.T) {
		pods, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
		if err != nil || len(pods.Items) == 0 || pods.Items[0].Status.PodIP == "" {
			t.Fatalf("CoreDNS's pods: %v, %+v", err, pods)
		}
		svc, err := client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The pod range is routed from the host: ask a CoreDNS pod itself.
		resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(pods.Items[0].Status.PodIP, "53"))
		}}
		lookup, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		addrs, err := resolver.LookupHost(lookup, "kubernetes.default.svc.cluster.local")
		if err != nil || !slices.Equal(addrs, []string{svc.Spec.ClusterIP}) {
			t.Errorf("kubernetes.default.svc.cluster.local from CoreDNS: %v, %v; want %s", addrs, err, svc.Spec.ClusterIP)
		}
	})

	t.Run("nothing was pulled", func(t *testing.T) {
		if data, err := os.ReadFile(registryLog); err != nil || len(data) > 0 {
			t.Errorf("the registry's log (%s), which must be empty: %v\n%s", registryLog, err, data)
		}
	})

	t.Run("a pull would have been logged", func(t *testing.T) {
		// An image the bundle lacks: the kubelet pulls it, from the run's
		// registry, which has nothing.
		missing := "registry.k8s.io/pause:not-in-the-bundle"
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pulls", Namespace: "kube-system"}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: missing, ImagePullPolicy: corev1.PullIfNotPresent}},
		}}
		if _, err := client.CoreV1().Pods("kube-system").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var data []byte
		err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(context.Context) (bool, error) {
			data, _ = os.ReadFile(registryLog)
			return strings.Contains(string(data), "/v2/pause/manifests/"), nil
		})
		if err != nil {
			t.Errorf("the kubelet's pull of %s is not in the registry's log: %v\n%s", missing, err, data)
		}
		if err := client.CoreV1().Pods("kube-system").Delete(ctx, "pulls", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Error(err)
		}
	})

}

// airGapImage is one line of a bundle's image list.
type airGapImage struct{ name, digest string }

// readAirGapList reads a bundle's image list, NAME@DIGEST a line.
func readAirGapList(t *testing.T, file string) []airGapImage {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var list []airGapImage
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		name, digest, ok := strings.Cut(line, "@")
		if !ok || !strings.HasPrefix(digest, "sha256:") {
			t.Fatalf("%s: %q is not NAME@sha256:DIGEST", file, line)
		}
		list = append(list, airGapImage{name, digest})
	}
	if len(list) < 2 {
		t.Fatalf("%s lists %d images", file, len(list))
	}
	return list
}

// airGapBundle is a release's air-gap bundle for this machine's platform:
// its OCI layout archive and the archive's signed image list.
type airGapBundle struct {
	archive, list string
	images        []airGapImage
	// repository is the images' (kubeadm's imageRepository), apiserver
	// and pause the bundle's kube-apiserver and pause under kubeadm's names.
	repository, apiserver, pause string
}

// readAirGapBundle reads the bundle of the release in dir.
func readAirGapBundle(t *testing.T, dir string) airGapBundle {
	t.Helper()
	base := filepath.Join(dir, oci.AirGapArchive("linux", runtime.GOARCH))
	b := airGapBundle{archive: base + ".oci.tar", list: base + ".txt", images: readAirGapList(t, base+".txt")}
	if _, err := os.Stat(b.archive); err != nil {
		t.Fatalf("the release in %s has no air-gap bundle: %v", dir, err)
	}
	ref, err := reference.ParseNormalizedNamed(b.images[0].name)
	if err != nil || !strings.HasSuffix(reference.Path(ref), "/kube-apiserver") {
		t.Fatalf("%s: the first image is not kube-apiserver: %v, %s", b.list, err, b.images[0].name)
	}
	// As kubeadm writes it into the manifest.
	b.apiserver = reference.FamiliarString(ref)
	b.repository = path.Dir(reference.FamiliarName(ref))
	for _, img := range b.images {
		if strings.Contains(img.name, "/pause:") {
			b.pause = img.name
		}
	}
	if b.pause == "" {
		t.Fatalf("%s names no pause image", b.list)
	}
	return b
}

// summary names the bundle, of release version, for a report.
func (b airGapBundle) summary(version string) string {
	return fmt.Sprintf("%s's %s (%d images, %s/...)", version, filepath.Base(b.archive), len(b.images), b.repository)
}

// install loads the bundle on n as docs/release.md tells an operator to:
// the list's signature verified with cosign and publicKey, offline; the
// archive imported into n's containerd; and every image of the list held
// there under its name with the list's digest. A missing image fails the
// test, named. It says what it did.
func (b airGapBundle) install(t *testing.T, n *localnode.Node, publicKey string) string {
	t.Helper()
	ctx := t.Context()
	cosign := exec.CommandContext(ctx, mustBinary(t, "cosign"), "verify-blob", "--key", publicKey, "--insecure-ignore-tlog=true", "--bundle", b.list+".sigstore.json", b.list)
	// No TUF root, no Rekor, no Fulcio: nothing here may reach them.
	cosign.Env = append(os.Environ(), "HOME="+t.TempDir(), "SIGSTORE_NO_CACHE=1")
	if out, err := cosign.CombinedOutput(); err != nil {
		t.Fatalf("%s: cosign verify-blob %s: %v\n%s", n.Name, b.list, err, out)
	}
	if err := n.ImportImages(ctx, b.archive); err != nil {
		t.Fatal(err)
	}
	held, err := n.Images(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range b.images {
		if got := held[img.name]; got != img.digest {
			t.Fatalf("%s: the signed list %s names %s@%s, which containerd does not hold after importing %s (it holds %q): the bundle lacks it",
				n.Name, filepath.Base(b.list), img.name, img.digest, filepath.Base(b.archive), got)
		}
	}
	return fmt.Sprintf("%s: %s's signature verified, %d images imported as signed", n.Name, filepath.Base(b.list), len(b.images))
}

// without is a copy of the bundle whose archive lacks image (its list
// still names it): the bundle a broken release or a truncated copy would
// give an operator.
func (b airGapBundle) without(t *testing.T, image string) airGapBundle {
	t.Helper()
	// The archive names each image as containerd does, fully.
	ref, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		t.Fatalf("the image to leave out, %q: %v", image, err)
	}
	image = ref.String()
	in, err := os.Open(b.archive)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	b.archive = filepath.Join(t.TempDir(), filepath.Base(b.archive))
	out, err := os.Create(b.archive)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	r, w := tar.NewReader(in), tar.NewWriter(out)
	dropped := 0
	for {
		h, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if path.Clean(h.Name) == "index.json" {
			var index map[string]any
			if err := json.Unmarshal(data, &index); err != nil {
				t.Fatalf("%s's index.json: %v", b.archive, err)
			}
			manifests, _ := index["manifests"].([]any)
			index["manifests"] = slices.DeleteFunc(manifests, func(m any) bool {
				annotations, _ := m.(map[string]any)["annotations"].(map[string]any)
				if annotations["io.containerd.image.name"] == image {
					dropped++
					return true
				}
				return false
			})
			if data, err = json.Marshal(index); err != nil {
				t.Fatal(err)
			}
			h.Size = int64(len(data))
		}
		if err := w.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if dropped == 0 {
		t.Fatalf("%s holds no image %s to leave out", filepath.Base(b.archive), image)
	}
	return b
}

// A bundle without an image is a copy of the archive less that image's
// entry in index.json, the image named as kubeadm and operators name it.
func TestAirGapBundleWithout(t *testing.T) {
	names := []string{"docker.io/turnstile-k8s/kube-apiserver:v1.37.2", "docker.io/turnstile-k8s/pause:3.10.1"}
	images := map[string]v1.Image{}
	for _, n := range names {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		images[n] = img
	}
	archive := filepath.Join(t.TempDir(), "airgap-images-linux-amd64.oci.tar")
	if _, err := oci.WriteImagesArchive(archive, time.Unix(0, 0), names, images); err != nil {
		t.Fatal(err)
	}
	b := airGapBundle{archive: archive}
	imageNames := func(archive string) []string {
		f, err := os.Open(archive)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r := tar.NewReader(f)
		for {
			h, err := r.Next()
			if err != nil {
				t.Fatalf("%s has no index.json: %v", archive, err)
			}
			if path.Clean(h.Name) != "index.json" {
				continue
			}
			var index struct {
				Manifests []struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"manifests"`
			}
			if err := json.NewDecoder(r).Decode(&index); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range index.Manifests {
				got = append(got, m.Annotations["io.containerd.image.name"])
			}
			return got
		}
	}
	less := b.without(t, "turnstile-k8s/pause:3.10.1")
	if got := imageNames(less.archive); !slices.Equal(got, names[:1]) {
		t.Errorf("without pause: %v, want %v", got, names[:1])
	}
	if got := imageNames(archive); !slices.Equal(got, names) {
		t.Errorf("the bundle itself changed: %v, want %v", got, names)
	}
}
