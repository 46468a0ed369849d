// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/version"
	kubeadmutil "k8s.io/kubernetes/cmd/kubeadm/app/util"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/internal/localnode"
)

// upgradeLines are the two lines an upgrade test moves between, as make
// gives them to make test-upgrade and make test-ha-kubeadm: the older
// line's version and its kubeadm and kubelet (from), and main's version,
// kubeadm and kubelet and node images (to).
type upgradeLines struct {
	fromVersion, fromBin       string
	toVersion, toBin, toImages string
}

// readUpgradeLines reads the upgradeLines make gives; the test is skipped,
// saying skip, unless they and the caller's own settings (whole) are all
// there and the test runs as root.
func readUpgradeLines(t *testing.T, skip string, whole bool) upgradeLines {
	t.Helper()
	l := upgradeLines{
		fromVersion: os.Getenv("TURNSTILE_UPGRADE_FROM_VERSION"),
		fromBin:     os.Getenv("TURNSTILE_UPGRADE_FROM_BIN"),
		toImages:    os.Getenv("TURNSTILE_NODE_IMAGES"),
		// The e2e binaries are stamped as upstream's, so this is main's release.
		toVersion: version.Get().GitVersion,
	}
	if !whole || l.fromVersion == "" || l.fromBin == "" || l.toImages == "" || os.Geteuid() != 0 {
		t.Skip(skip)
	}
	l.toBin = filepath.Dir(mustBinary(t, "kubeadm"))
	return l
}

// upgradeEnv is what `make test-upgrade` builds for the upgrade: the two
// lines, and each line's control-plane images and Turnstile image.
type upgradeEnv struct {
	upgradeLines
	fromImages, fromAPIServerTar, toAPIServerTar string
}

// upgradeEnvironment is the upgradeEnv make's UPGRADE_ENV describes; the
// test is skipped, saying skip, unless it is whole and the test runs as
// root.
func upgradeEnvironment(t *testing.T, skip string) upgradeEnv {
	t.Helper()
	e := upgradeEnv{
		fromImages:       os.Getenv("TURNSTILE_UPGRADE_FROM_IMAGES"),
		fromAPIServerTar: os.Getenv("TURNSTILE_UPGRADE_FROM_APISERVER_IMAGE"),
		toAPIServerTar:   os.Getenv("TURNSTILE_APISERVER_IMAGE"),
	}
	e.upgradeLines = readUpgradeLines(t, skip, e.fromImages != "" && e.fromAPIServerTar != "" && e.toAPIServerTar != "")
	return e
}

// images are the tarballs the node imports: the node images, both lines'
// control-plane images and both Turnstile images, as an operator loads
// the new release's images before upgrading.
func (e upgradeEnv) images() []string {
	return kubeadmHostImages(e.toImages, []string{e.fromImages, e.toImages}, e.fromAPIServerTar, e.toAPIServerTar)
}

// A real `kubeadm upgrade apply`, the way an operator upgrades a kubeadm
// control plane: the older line's kubeadm makes the cluster on a real node,
// then main's kubeadm upgrades it (the new kube-apiserver image by a kubeadm
// patch, docs/kubeadm.md), and main's kubelet replaces the old one.
// `make test-upgrade` runs it as root.
//
// The first run upgrades Turnstile with PodSecurityPolicy enforced: the
// policies and grants of examples/podsecuritypolicy and a Deployment they
// admit. After the upgrade the policies are the same objects, the
// Deployment's pods are the same pods, still serving, and a user's pods
// are decided as before the upgrade. The second run upgrades vanilla
// Kubernetes to Turnstile, a user adopting Turnstile at an upgrade, with a
// restored plugin added to kubeadm's ClusterConfiguration before it, by
// the commands of docs/tasks/upgrade-to-turnstile.md; the page's undo
// then takes it to vanilla Kubernetes of the new version.
func TestKubeadmUpgradeForReal(t *testing.T) {
	e := upgradeEnvironment(t, "needs root and the TURNSTILE_UPGRADE_FROM_* images and binaries of the older line; `make test-upgrade` builds them and runs it")
	t.Logf("upgrading %s to %s", e.fromVersion, e.toVersion)

	t.Run("Turnstile with PodSecurityPolicy", func(t *testing.T) { upgradeWithPodSecurityPolicy(t, e) })
	t.Run("vanilla to Turnstile", func(t *testing.T) { upgradeVanillaToTurnstile(t, e) })
}

func upgradeWithPodSecurityPolicy(t *testing.T, e upgradeEnv) {
	fromImage, toImage := imageName(t, e.fromAPIServerTar), imageName(t, e.toAPIServerTar)
	h := newKubeadmHost(t, localnode.Config{Bin: e.fromBin, Images: e.images()},
		localnode.InitOptions{Version: e.fromVersion, APIServerImage: fromImage, AdmissionPlugins: []string{"NodeRestriction", "PodSecurityPolicy"}})
	ctx := t.Context()
	// The policies and grants first: until they exist the plugin refuses
	// every pod, the control plane's mirror pods among them.
	h.must(t, "apply", "-f", "../../examples/podsecuritypolicy/")
	wantMirrorPodsAdmitted(t, &h.kubeadmClient, h.node.Name, map[string]string{"kube-apiserver": fromImage})
	policies := podSecurityPolicies(t, &h.kubeadmClient)
	h.must(t, "create", "namespace", "app")
	h.must(t, "-n", "app", "create", "rolebinding", "alice-edit", "--clusterrole=edit", "--user=alice")
	createWebDeployment(t, &h.kubeadmClient, "app")
	web := deploymentPods(t, &h.kubeadmClient, "app")
	for _, p := range web {
		if p.Annotations["kubernetes.io/psp"] != "restricted" {
			t.Errorf("%s was admitted by %q, want restricted", p.Name, p.Annotations["kubernetes.io/psp"])
		}
	}
	before := decideAsAlice(ctx, t, &h.kubeadmClient)
	wantDecisions(t, before)

	upgrade(t, h, e, toImage)

	wantMirrorPodsAdmitted(t, &h.kubeadmClient, h.node.Name, map[string]string{"kube-apiserver": toImage,
		"kube-controller-manager": "registry.k8s.io/kube-controller-manager:" + kubeadmutil.KubernetesVersionToImageTag(e.toVersion)})
	if after := podSecurityPolicies(t, &h.kubeadmClient); !reflect.DeepEqual(after, policies) {
		t.Errorf("the policies changed in the upgrade:\nbefore %v\nafter  %v", policies, after)
	}
	wantSamePods(t, web, deploymentPods(t, &h.kubeadmClient, "app"))
	after := decideAsAlice(ctx, t, &h.kubeadmClient)
	if !reflect.DeepEqual(after, before) {
		t.Errorf("a user's pods are decided differently after the upgrade:\nbefore %q\nafter  %q", before, after)
	}
	// And for real: a new pod of alice's is admitted by restricted and
	// runs on the new kubelet.
	alice := impersonate(t, &h.kubeadmClient, "alice")
	created, err := alice.CoreV1().Pods("app").Create(ctx, userPod("after-upgrade", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("alice's pod after the upgrade: %v", err)
	}
	if created.Annotations["kubernetes.io/psp"] != "restricted" {
		t.Errorf("alice's pod was admitted by %q, want restricted", created.Annotations["kubernetes.io/psp"])
	}
	h.must(t, "-n", "app", "wait", "--for=condition=Ready", "pod/after-upgrade", "--timeout=2m")
	h.reset(t)
}

func upgradeVanillaToTurnstile(t *testing.T, e upgradeEnv) {
	toImage := imageName(t, e.toAPIServerTar)
	vanilla := "registry.k8s.io/kube-apiserver:" + kubeadmutil.KubernetesVersionToImageTag(e.fromVersion)
	h := newKubeadmHost(t, localnode.Config{Bin: e.fromBin, Images: e.images()},
		localnode.InitOptions{Version: e.fromVersion, AdmissionPlugins: []string{"NodeRestriction"}})
	ctx := t.Context()
	h.waitStaticPods(t, h.node.Name, map[string]string{"kube-apiserver": vanilla})
	if v, err := h.client.Discovery().ServerVersion(); err != nil || v.GitVersion != e.fromVersion {
		t.Fatalf("/version before the upgrade: %+v, %v; want vanilla %s", v, err, e.fromVersion)
	}
	createWebDeployment(t, &h.kubeadmClient, "default")
	web := deploymentPods(t, &h.kubeadmClient, "default")
	createPrivilegedPod(ctx, t, &h.kubeadmClient, "default")
	if out, err := h.run("exec", "privileged", "--", "true"); err != nil {
		t.Fatalf("vanilla refuses an exec into a privileged pod: %v\n%s", err, out)
	}
	// Adopting a restored plugin: kubeadm keeps the ClusterConfiguration
	// in its kubeadm-config ConfigMap, and `kubeadm upgrade apply` writes
	// the new manifests from it.
	enableAdmissionPlugins(ctx, t, h.client, "NodeRestriction,DenyExecOnPrivileged")

	// The upgrade as docs/tasks/upgrade-to-turnstile.md tells it, every
	// block run as written: its kubeadm is main's, as the reader installs
	// v1.37's package first, and its `systemctl restart kubelet` starts
	// main's kubelet.
	if err := h.cluster.UseBin(e.toBin); err != nil {
		t.Fatal(err)
	}
	page := "../../docs/tasks/upgrade-to-turnstile.md"
	r := runTaskPage(t, page, 0, taskOptions{
		replace: map[string]string{"ctr -n k8s.io": "ctr --address " + h.node.Socket() + " -n k8s.io"},
		env: append(goCaches(t), "PATH="+serveKubeadm(t, h, localnode.InitOptions{})+string(os.PathListSeparator)+e.toBin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"KUBECONFIG="+filepath.Join(h.node.KubeadmDir(), "admin.conf")),
		beforeUndo: func(r *taskRun) {
			if len(r.outputs) != 5 {
				t.Fatalf("%d blocks of %s ran before its undo, want 5", len(r.outputs), page)
			}
			if out := r.outputs[4]; !strings.Contains(out, toImage) {
				t.Errorf("the page's apiserver pod runs another image than %s:\n%s", toImage, out)
			}
			h.waitStaticPods(t, h.node.Name, map[string]string{"kube-apiserver": toImage})
			wantSamePods(t, web, deploymentPods(t, &h.kubeadmClient, "default"))
			wantExecRefused(t, &h.kubeadmClient, "default")
			if out := h.must(t, "exec", "deploy/web", "--", "hostname"); !strings.HasPrefix(out, "web-") {
				t.Errorf("exec into the Deployment's pod after the upgrade: %q", out)
			}
			// The undo goes back to upstream's apiserver, which does not
			// know DenyExecOnPrivileged: out of kubeadm-config first, as
			// the page says.
			enableAdmissionPlugins(ctx, t, h.client, "NodeRestriction")
		},
	})
	if len(r.outputs) != 6 {
		t.Errorf("%d blocks of %s ran, want 6", len(r.outputs), page)
	}
	vanilla = "registry.k8s.io/kube-apiserver:" + kubeadmutil.KubernetesVersionToImageTag(e.toVersion)
	h.waitStaticPods(t, h.node.Name, map[string]string{"kube-apiserver": vanilla})
	if v, err := h.client.Discovery().ServerVersion(); err != nil || v.GitVersion != e.toVersion {
		t.Errorf("/version after the page's undo: %+v, %v; want vanilla %s", v, err, e.toVersion)
	}
	wantSamePods(t, web, deploymentPods(t, &h.kubeadmClient, "default"))
	h.reset(t)
}

// upgrade upgrades the node's control plane to e.toVersion with main's
// kubeadm, toImage as the kube-apiserver, then restarts the node's kubelet
// as main's, and checks what the apiserver says it is.
func upgrade(t *testing.T, h *kubeadmHost, e upgradeEnv, toImage string) {
	t.Helper()
	if err := h.cluster.UseBin(e.toBin); err != nil {
		t.Fatal(err)
	}
	out, err := h.node.KubeadmUpgradeApply(t.Context(), localnode.UpgradeOptions{Version: e.toVersion, APIServerImage: toImage})
	want := fmt.Sprintf("[upgrade] SUCCESS! A control plane node of your cluster was upgraded to %q.", e.toVersion)
	if err != nil || !strings.Contains(out, want) {
		t.Fatalf("kubeadm upgrade apply %s: %v\n%s\nlogs: %s", e.toVersion, err, out, tailLogs(h.dir))
	}
	t.Logf("kubeadm upgrade apply %s succeeded:\n%s", e.toVersion, lastLines(out, 8))
	if err := h.node.RestartKubelet(); err != nil {
		t.Fatal(err)
	}
	v, err := h.client.Discovery().ServerVersion()
	if err != nil || !strings.HasPrefix(v.GitVersion, e.toVersion+"+turnstile.") {
		t.Fatalf("/version after the upgrade: %+v, %v; want Turnstile's %s", v, err, e.toVersion)
	}
	if err := h.node.WaitNetwork(t.Context(), h.client); err != nil {
		t.Fatal(err)
	}
	// The new kubelet reports its version in the node's status.
	kubelet := ""
	err = wait.PollUntilContextTimeout(t.Context(), time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		node, err := h.client.CoreV1().Nodes().Get(ctx, h.node.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		kubelet = node.Status.NodeInfo.KubeletVersion
		return kubelet == e.toVersion, nil
	})
	if err != nil {
		t.Errorf("the node's kubelet is %q 2 minutes after the upgrade, want %s", kubelet, e.toVersion)
	}
}

// wantMirrorPodsAdmitted waits for node's control-plane mirror pods and
// checks that PodSecurityPolicy admitted them by the policy kube-system's
// nodes may use.
func wantMirrorPodsAdmitted(t *testing.T, h *kubeadmClient, node string, images map[string]string) {
	t.Helper()
	for component, p := range h.waitStaticPods(t, node, images) {
		if got := p.Annotations["kubernetes.io/psp"]; got != "privileged" {
			t.Errorf("%s's mirror pod was admitted by %q, want privileged", component, got)
		}
	}
}

// podSecurityPolicies are the cluster's policies by name: each one's UID
// and spec, which an upgrade must keep.
func podSecurityPolicies(t *testing.T, h *kubeadmClient) map[string]string {
	t.Helper()
	list, err := dynamic.NewForConfigOrDie(h.config).Resource(schema.GroupVersionResource{Group: "policy", Version: "v1beta1", Resource: "podsecuritypolicies"}).
		List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the PodSecurityPolicies: %v", err)
	}
	out := map[string]string{}
	for _, p := range list.Items {
		spec, err := yaml.Marshal(p.Object["spec"])
		if err != nil {
			t.Fatal(err)
		}
		out[p.GetName()] = fmt.Sprintf("uid %s, spec %s", p.GetUID(), spec)
	}
	if len(out) != 3 {
		t.Errorf("the cluster has the policies %v, want examples/podsecuritypolicy's three", out)
	}
	return out
}

// createWebDeployment runs two agnhost netexec pods as user 1000 (the
// restricted policy wants a non-root user), Ready once they serve.
func createWebDeployment(t *testing.T, h *kubeadmClient, namespace string) {
	t.Helper()
	labels := map[string]string{"app": "web"}
	pod := userPod("", nil)
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/hostname", Port: intstr.FromInt32(8080)}}}
	d := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": namespace},
		"spec": map[string]any{
			"replicas": 2, "selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{"metadata": map[string]any{"labels": labels}, "spec": pod.Spec},
		},
	}
	manifest, err := yaml.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(file, manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	h.must(t, "apply", "-f", file)
	h.must(t, "-n", namespace, "wait", "--for=condition=Available", "deployment/web", "--timeout=3m")
}

// userPod is an agnhost netexec pod as user 1000, with change applied to
// its spec.
func userPod(name string, change func(*corev1.PodSpec)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "web", Image: oci.AgnhostImage, Args: []string{"netexec", "--http-port=8080"},
			SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000)},
		}}},
	}
	if change != nil {
		change(&p.Spec)
	}
	return p
}

// deploymentPods are the pods of the Deployment web in namespace, by name,
// each Ready.
func deploymentPods(t *testing.T, h *kubeadmClient, namespace string) map[string]*corev1.Pod {
	t.Helper()
	out := readyPods(t, h, namespace, "web")
	if len(out) != 2 {
		t.Errorf("web has %d pods, want 2", len(out))
	}
	return out
}

// readyPods are the pods labelled app in namespace, by name, once each is
// Ready.
func readyPods(t *testing.T, h *kubeadmClient, namespace, app string) map[string]*corev1.Pod {
	t.Helper()
	h.must(t, "-n", namespace, "wait", "--for=condition=Ready", "pod", "-l", "app="+app, "--timeout=3m")
	list, err := h.client.CoreV1().Pods(namespace).List(t.Context(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// wantSamePods checks that the upgrade left the workload alone: the same
// pods, their containers not restarted.
func wantSamePods(t *testing.T, before, after map[string]*corev1.Pod) {
	t.Helper()
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			t.Errorf("the pod %s is gone after the upgrade (now %v)", name, keys(after))
		case a.UID != b.UID:
			t.Errorf("the pod %s was replaced in the upgrade", name)
		case a.Status.ContainerStatuses[0].RestartCount != b.Status.ContainerStatuses[0].RestartCount:
			t.Errorf("%s's container restarted in the upgrade: %d → %d restarts", name, b.Status.ContainerStatuses[0].RestartCount, a.Status.ContainerStatuses[0].RestartCount)
		}
	}
}

// impersonate is a client that acts as user, one of system:authenticated.
func impersonate(t *testing.T, h *kubeadmClient, user string) kubernetes.Interface {
	t.Helper()
	config := rest.CopyConfig(h.config)
	config.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	return kubernetes.NewForConfigOrDie(config)
}

// userPodCases are pods alice asks for in namespace app, where she may
// use the restricted policy only.
var userPodCases = []struct {
	name   string
	change func(*corev1.PodSpec)
	// want is what the decision says: the admitting policy, or part of
	// the refusal.
	want string
}{
	{"plain", nil, "admitted by restricted"},
	{"privileged", func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.Privileged = ptr.To(true) }, "Privileged containers are not allowed"},
	{"host-network", func(s *corev1.PodSpec) { s.HostNetwork = true }, "Host network is not allowed to be used"},
	{"root", func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.RunAsUser = ptr.To[int64](0) }, "running with the root UID is forbidden"},
}

// decideAsAlice asks, as alice and as a dry run (admission runs, nothing
// is stored), for each of userPodCases, and returns each decision: the
// policy that admitted the pod and what it set, or the refusal.
func decideAsAlice(ctx context.Context, t *testing.T, h *kubeadmClient) map[string]string {
	t.Helper()
	alice := impersonate(t, h, "alice")
	out := map[string]string{}
	for _, c := range userPodCases {
		p, err := alice.CoreV1().Pods("app").Create(ctx, userPod(c.name, c.change), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			out[c.name] = "refused: " + err.Error()
			continue
		}
		pod, err := json.Marshal(p.Spec.SecurityContext)
		if err != nil {
			t.Fatal(err)
		}
		container, err := json.Marshal(p.Spec.Containers[0].SecurityContext)
		if err != nil {
			t.Fatal(err)
		}
		out[c.name] = fmt.Sprintf("admitted by %s: pod %s, container %s", p.Annotations["kubernetes.io/psp"], pod, container)
	}
	return out
}

// wantDecisions checks decisions against userPodCases' wants.
func wantDecisions(t *testing.T, decisions map[string]string) {
	t.Helper()
	for _, c := range userPodCases {
		if !strings.Contains(decisions[c.name], c.want) {
			t.Errorf("alice's %s pod: %s\nwant %q", c.name, decisions[c.name], c.want)
		}
	}
}

// enableAdmissionPlugins sets --enable-admission-plugins in the
// ClusterConfiguration kubeadm keeps in the kubeadm-config ConfigMap, as
// an operator edits it before `kubeadm upgrade apply`.
func enableAdmissionPlugins(ctx context.Context, t *testing.T, client kubernetes.Interface, plugins string) {
	t.Helper()
	editAPIServerConfig(ctx, t, client, func(apiServer map[string]any) {
		if !slices.ContainsFunc(extraArgs(apiServer), func(a map[string]any) bool { return a["name"] == "enable-admission-plugins" }) {
			t.Fatalf("kubeadm-config's ClusterConfiguration has no enable-admission-plugins argument: %v", apiServer)
		}
		setExtraArg(apiServer, "enable-admission-plugins", plugins)
	})
}

// editAPIServerConfig edits the apiServer part of the ClusterConfiguration
// in the kubeadm-config ConfigMap, as an operator does with `kubectl edit`
// (kubeadm's guide to reconfiguring a cluster): kubeadm writes the
// apiservers' manifests from it at every upgrade and reconfiguration.
func editAPIServerConfig(ctx context.Context, t *testing.T, client kubernetes.Interface, edit func(apiServer map[string]any)) {
	t.Helper()
	cm, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubeadm-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(cm.Data["ClusterConfiguration"]), &cfg); err != nil {
		t.Fatalf("kubeadm-config's ClusterConfiguration: %v", err)
	}
	apiServer, _ := cfg["apiServer"].(map[string]any)
	if apiServer == nil {
		apiServer = map[string]any{}
		cfg["apiServer"] = apiServer
	}
	edit(apiServer)
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["ClusterConfiguration"] = string(data)
	if _, err := client.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// extraArgs are apiServer's extraArgs, v1beta4's list of {name, value}.
func extraArgs(apiServer map[string]any) []map[string]any {
	list, _ := apiServer["extraArgs"].([]any)
	var out []map[string]any
	for _, a := range list {
		if arg, ok := a.(map[string]any); ok {
			out = append(out, arg)
		}
	}
	return out
}

// setExtraArg sets apiServer's extraArgs entry name to value, adding it
// if it is missing, or removes it when value is "".
func setExtraArg(apiServer map[string]any, name, value string) {
	var list []any
	set := false
	for _, arg := range extraArgs(apiServer) {
		if arg["name"] == name {
			if value == "" {
				continue
			}
			arg["value"], set = value, true
		}
		list = append(list, arg)
	}
	if !set && value != "" {
		list = append(list, map[string]any{"name": name, "value": value})
	}
	apiServer["extraArgs"] = list
}
