// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	kubeadmutil "k8s.io/kubernetes/cmd/kubeadm/app/util"
	kubeadmconfig "k8s.io/kubernetes/cmd/kubeadm/app/util/config"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/turnstile-k8s/turnstile/internal/process"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// kubeadmConfig enables extra admission plugins through apiServer.extraArgs
// and mounts an AdmissionConfiguration through extraVolumes, as a user
// following docs/kubeadm.md would.
const kubeadmConfig = `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: %s
  bindPort: %d
nodeRegistration:
  name: turnstile-e2e
  criSocket: unix:///var/run/containerd/containerd.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: %s
imageRepository: turnstile-k8s
etcd:
  local:
    imageRepository: registry.k8s.io
apiServer:
  extraArgs:
    - name: enable-admission-plugins
      value: NodeRestriction,SecurityContextDeny,AlwaysPullImages
    - name: admission-control-config-file
      value: /etc/kubernetes/admission/admission-config.yaml
  extraVolumes:
    - name: admission
      hostPath: /etc/kubernetes/admission
      mountPath: /etc/kubernetes/admission
      readOnly: true
      pathType: DirectoryOrCreate
`

const kubeadmAdmissionConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
  - name: SecurityContextDeny
    path: securitycontextdeny.yaml
`

const kubeadmSCDConfig = `apiVersion: securitycontextdeny.admission.turnstile.dev/v1alpha1
kind: SecurityContextDenyConfiguration
coverEphemeralContainers: true
`

// kubeadm, built from the pinned module, writes the PKI, kubeconfigs and
// static pod manifests into a temporary root (its --rootfs flag chroots
// there, so nothing is written outside it). The test then starts etcd and
// our kube-apiserver with exactly the commands of kubeadm's manifests, host
// paths remapped into that root, and uses kubeadm's admin.conf.
func TestKubeadmStaticPodManifest(t *testing.T) {
	t.Parallel() // long and independent of the others: see "Running in parallel" in README.md
	kubeadm, err := framework.Binary("kubeadm")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/etc/kubernetes"); err == nil {
		t.Logf("note: /etc/kubernetes exists on this machine; the test does not touch it")
	}
	before := listTree(t, "/etc/kubernetes")
	if l, err := net.Listen("tcp", "127.0.0.1:2379"); err != nil {
		t.Fatalf("kubeadm's etcd manifest listens on port 2379, which is taken: %v", err)
	} else {
		l.Close()
	}

	rootfs := t.TempDir()
	ip := hostIP(t)
	port, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimPrefix(strings.TrimSpace(runBinary(t, "kube-apiserver", "--version")), "Kubernetes ")
	write(t, filepath.Join(rootfs, "kubeadm.yaml"), fmt.Sprintf(kubeadmConfig, ip, port, version))
	write(t, filepath.Join(rootfs, "etc/kubernetes/admission/admission-config.yaml"), kubeadmAdmissionConfig)
	write(t, filepath.Join(rootfs, "etc/kubernetes/admission/securitycontextdeny.yaml"), kubeadmSCDConfig)
	phase := func(args ...string) {
		t.Helper()
		args = append(append([]string{"init", "phase"}, args...), "--rootfs", rootfs, "--config", "/kubeadm.yaml")
		out, err := exec.Command(kubeadm, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubeadm %v: %v\n%s", args, err, out)
		}
	}
	phase("certs", "all")
	phase("kubeconfig", "all")
	phase("control-plane", "all")
	phase("etcd", "local")

	etcdPod := readManifest(t, rootfs, "etcd")
	apiserverPod := readManifest(t, rootfs, "kube-apiserver")
	if image := apiserverPod.Spec.Containers[0].Image; image != "turnstile-k8s/kube-apiserver:"+kubeadmutil.KubernetesVersionToImageTag(version) {
		t.Errorf("kubeadm's kube-apiserver image is %s, not the one `make image` tags", image)
	}
	start := func(pod *corev1.Pod) {
		command := remap(pod, rootfs)
		bin, err := framework.Binary(filepath.Base(command[0]))
		if err != nil {
			t.Fatal(err)
		}
		p, err := process.Start(pod.Name, filepath.Join(rootfs, pod.Name+".log"), append([]string{bin}, command[1:]...))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Stop(os.Interrupt, time.Minute) })
	}
	if err := os.MkdirAll(filepath.Join(rootfs, "var/lib/etcd"), 0o700); err != nil {
		t.Fatal(err)
	}
	start(etcdPod)
	start(apiserverPod)

	// admin.conf's group is bound to cluster-admin by kubeadm itself, through
	// a phase that talks to the running apiserver.
	c := clientFrom(t, filepath.Join(rootfs, "etc/kubernetes/super-admin.conf"))
	waitReady(t, c, rootfs)
	phase("upload-config", "kubeadm")
	phase("bootstrap-token")
	admin := clientFrom(t, filepath.Join(rootfs, "etc/kubernetes/admin.conf"))
	ctx := context.Background()
	if _, err := admin.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubeadm-config", metav1.GetOptions{}); err != nil {
		t.Errorf("kubeadm's upload-config left no kubeadm-config: %v", err)
	}
	if _, err := admin.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{}); err != nil {
		t.Errorf("kubeadm's bootstrap-token phase left no cluster-info: %v", err)
	}

	out := runBinary(t, "kubectl", "--kubeconfig", filepath.Join(rootfs, "etc/kubernetes/admin.conf"), "get", "namespaces", "-o", "name")
	if !strings.Contains(out, "namespace/kube-system\n") {
		t.Errorf("kubectl get namespaces with kubeadm's admin.conf:\n%s", out)
	}

	// The plugins enabled through extraArgs act, configured through extraVolumes.
	ns := createNamespace(t, admin)
	pod, err := admin.CoreV1().Pods(ns).Create(ctx, pausePod("web", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a pod: %v", err)
	}
	if pod.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
		t.Errorf("AlwaysPullImages did not act: imagePullPolicy %s", pod.Spec.Containers[0].ImagePullPolicy)
	}
	root := pausePod("root", "")
	root.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, root, metav1.CreateOptions{}); !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), "pod.Spec.SecurityContext.RunAsUser is forbidden") {
		t.Errorf("SecurityContextDeny did not act: %v", err)
	}
	patch := `{"spec":{"ephemeralContainers":[{"name":"dbg","image":"busybox","securityContext":{"runAsUser":0}}]}}`
	if _, err := admin.CoreV1().Pods(ns).Patch(ctx, "web", "application/strategic-merge-patch+json", []byte(patch), metav1.PatchOptions{}, "ephemeralcontainers"); !apierrors.IsForbidden(err) {
		t.Errorf("SecurityContextDeny's configuration from the mounted file did not act: %v", err)
	}

	checkKubeadmVersionCompatibility(t, admin)

	if after := listTree(t, "/etc/kubernetes"); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("/etc/kubernetes changed during the test: before %v, after %v", before, after)
	}
}

// The binary's /version parses with client-go's and kubeadm's version
// utilities, and kubeadm's control-plane version checks accept it.
func checkKubeadmVersionCompatibility(t *testing.T, c kubernetes.Interface) {
	if strings.Contains(kubeadmconstants.CurrentKubernetesVersion.String(), "placeholder") {
		t.Fatal("kubeadm's version constants are unset: run through `make test-e2e`, which stamps the test binary as kubeadm is stamped")
	}
	info, err := c.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	v, err := utilversion.ParseSemantic(info.GitVersion)
	if err != nil {
		t.Fatalf("client-go cannot parse /version %q: %v", info.GitVersion, err)
	}
	if got, err := kubeadmutil.KubernetesReleaseVersion(info.GitVersion); err != nil || got != info.GitVersion {
		t.Errorf("kubeadm reads /version %q as %q, %v", info.GitVersion, got, err)
	}
	cfg := &kubeadmapi.ClusterConfiguration{KubernetesVersion: info.GitVersion}
	if err := kubeadmconfig.NormalizeKubernetesVersion(cfg); err != nil {
		t.Errorf("kubeadm refuses control-plane version %s: %v", info.GitVersion, err)
	}
	if !v.AtLeast(kubeadmconstants.MinimumControlPlaneVersion) || v.Major() != 1 || v.Minor() != kubeadmconstants.CurrentKubernetesVersion.Minor() {
		t.Errorf("version %s is outside kubeadm's supported control-plane range (min %s, kubeadm %s)",
			v, kubeadmconstants.MinimumControlPlaneVersion, kubeadmconstants.CurrentKubernetesVersion)
	}
	// kubeadm v1.37.2's table stops at 1.36 and falls back, with a warning,
	// to the nearest entry; what matters is that it picks the etcd it pins
	// (the image make control-plane-images builds).
	etcdVersion, warning, err := kubeadmconstants.EtcdSupportedVersion(kubeadmconstants.SupportedEtcdVersion, info.GitVersion)
	if err != nil || etcdVersion.String() != kubeadmconstants.DefaultEtcdVersion {
		t.Errorf("kubeadm picks etcd %v (%v) for %s, want its default %s", etcdVersion, err, info.GitVersion, kubeadmconstants.DefaultEtcdVersion)
	} else if warning != nil {
		t.Logf("kubeadm: %v", warning)
	}
}

// remap returns the container's command with every path under one of its
// volume mounts rewritten to the volume's host path under rootfs.
func remap(pod *corev1.Pod, rootfs string) []string {
	hostPaths := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	container := pod.Spec.Containers[0]
	mounts := container.VolumeMounts
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].MountPath) > len(mounts[j].MountPath) })
	command := append([]string(nil), container.Command...)
	for i, arg := range command {
		flag, value, ok := strings.Cut(arg, "=")
		if !ok {
			continue
		}
		for _, m := range mounts {
			if host, ok := hostPaths[m.Name]; ok && (value == m.MountPath || strings.HasPrefix(value, m.MountPath+"/")) {
				command[i] = flag + "=" + filepath.Join(rootfs, host, strings.TrimPrefix(value, m.MountPath))
				break
			}
		}
	}
	return command
}

func readManifest(t *testing.T, rootfs, name string) *corev1.Pod {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(rootfs, "etc/kubernetes/manifests", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(data, &pod); err != nil {
		t.Fatalf("manifest %s: %v", name, err)
	}
	return &pod
}

func clientFrom(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(config)
}

func waitReady(t *testing.T, c kubernetes.Interface, rootfs string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, nil
	})
	if err != nil {
		logs, _ := os.ReadFile(filepath.Join(rootfs, "kube-apiserver.log"))
		t.Fatalf("kube-apiserver from kubeadm's manifest not ready: %v\n%s", err, tail(string(logs), 30))
	}
}

// hostIP is a non-loopback IPv4 address of this machine. kubeadm runs
// chrooted, without /proc, so it cannot pick one itself.
func hostIP(t *testing.T) string {
	t.Helper()
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := iface.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
				return n.IP.String()
			}
		}
	}
	t.Fatal("this machine has no non-loopback IPv4 address for kubeadm's advertiseAddress")
	return ""
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil {
			out = append(out, fmt.Sprintf("%s %d %s", path, info.Size(), info.ModTime()))
		}
		return nil
	})
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
