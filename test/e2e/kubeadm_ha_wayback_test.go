// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/internal/localnode"
)

// wayBack is the way off Turnstile and back again on the HA cluster, with
// PodSecurityPolicy enforced and under the run's load, as an operator
// leaves a distribution: through kubeadm alone, one node at a time, in the
// order docs/reliability.md gives (the plugin stops deciding on every
// server before any server loses it). Each pass edits the
// ClusterConfiguration in the kubeadm-config ConfigMap and writes each
// node's manifests again from it with `kubeadm upgrade node phase
// control-plane`, as kubeadm's guide to reconfiguring a cluster says, so
// that the next upgrade keeps the change. Back: PodSecurityPolicy to audit
// (an AdmissionConfiguration file on each node), then off, then upstream's
// kube-apiserver image, which the air-gapped operator brings to each node
// and names in a kubeadm patch (kubeadm's imageRepository names the
// bundle's, ours). Forward: Turnstile's image again, the patch removed,
// with `kubeadm upgrade apply` and `kubeadm upgrade node`, then
// PodSecurityPolicy enforced. The stored policies must be inert on
// upstream's apiserver and come back unchanged; the pod stream's decisions
// follow each pass.
type wayBack struct {
	c *haKubeadm
	e haKubeadmEnv
	b baseline
	// As the way back found them: the PodSecurityPolicies' keys in etcd,
	// and what the cluster holds of them.
	stored map[string]string
	before pspState
}

func (c *haKubeadm) wayBack(e haKubeadmEnv, b baseline) []haStep {
	w := &wayBack{c: c, e: e, b: b}
	return []haStep{
		{name: "way back: PodSecurityPolicy to audit, one node at a time", run: w.audit},
		{name: "way back: PodSecurityPolicy off, one node at a time", run: w.off},
		{name: "way back: upstream's kube-apiserver, one node at a time", run: w.upstream},
		{name: "forward: Turnstile again, kubeadm upgrade apply and node", run: w.turnstile},
		{name: "forward: PodSecurityPolicy enforced again, one node at a time", run: w.enforce},
	}
}

// The AdmissionConfiguration the audit pass gives every apiserver, in a
// directory of its own that kubeadm mounts (docs/kubeadm.md, section 3).
const (
	admissionDir        = "/etc/kubernetes/admission"
	admissionConfigFile = admissionDir + "/admission-config.yaml"
)

var admissionFiles = map[string]string{
	"admission-config.yaml": `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurityPolicy
  path: podsecuritypolicy.yaml
`,
	"podsecuritypolicy.yaml": `apiVersion: podsecuritypolicy.admission.turnstile.dev/v1alpha1
kind: PodSecurityPolicyConfiguration
mode: audit
`,
}

// setAdmissionVolume adds the admission directory's volume to apiServer's
// extraVolumes, or removes it.
func setAdmissionVolume(apiServer map[string]any, present bool) {
	list, _ := apiServer["extraVolumes"].([]any)
	list = slices.DeleteFunc(slices.Clone(list), func(v any) bool {
		vol, _ := v.(map[string]any)
		return vol["name"] == "admission"
	})
	if present {
		list = append(list, map[string]any{"name": "admission", "hostPath": admissionDir, "mountPath": admissionDir, "readOnly": true, "pathType": "DirectoryOrCreate"})
	}
	apiServer["extraVolumes"] = list
}

func (w *wayBack) audit(t *testing.T) string {
	t.Helper()
	c := w.c
	w.stored, w.before = storedPolicies(t, c.etcd), c.pspState(t)
	editAPIServerConfig(t.Context(), t, c.client, func(apiServer map[string]any) {
		setExtraArg(apiServer, "admission-control-config-file", admissionConfigFile)
		setAdmissionVolume(apiServer, true)
	})
	w.b.stream.expect(changing)
	var took []string
	for _, n := range c.cp {
		dir := filepath.Join(n.KubeadmDir(), "admission")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range admissionFiles {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		took = append(took, w.reconfigure(t, n, ""))
		if got := manifestFlag(t, n, "admission-control-config-file"); got != admissionConfigFile {
			t.Errorf("%s's apiserver has --admission-control-config-file=%q, want %s", n.Name, got, admissionConfigFile)
		}
	}
	w.b.stream.expect(notEnforced)
	w.wantAdmittedAsSent(t, "in audit mode")
	return fmt.Sprintf("kubeadm-config given --admission-control-config-file and its volume; on each node PodSecurityPolicy's configuration (mode: audit), then kubeadm upgrade node phase control-plane: %s; alice's pods admitted as sent",
		strings.Join(took, ", "))
}

func (w *wayBack) off(t *testing.T) string {
	t.Helper()
	c := w.c
	editAPIServerConfig(t.Context(), t, c.client, func(apiServer map[string]any) {
		setExtraArg(apiServer, "enable-admission-plugins", "NodeRestriction")
		setExtraArg(apiServer, "admission-control-config-file", "")
		setAdmissionVolume(apiServer, false)
	})
	var took []string
	for _, n := range c.cp {
		took = append(took, w.reconfigure(t, n, ""))
		if got := manifestFlag(t, n, "enable-admission-plugins"); got != "NodeRestriction" {
			t.Errorf("%s's apiserver has --enable-admission-plugins=%q, want NodeRestriction alone", n.Name, got)
		}
		if err := os.RemoveAll(filepath.Join(n.KubeadmDir(), "admission")); err != nil {
			t.Fatal(err)
		}
	}
	w.wantAdmittedAsSent(t, "with the plugin off")
	return fmt.Sprintf("kubeadm-config's --enable-admission-plugins=NodeRestriction, its admission configuration and volume gone; kubeadm upgrade node phase control-plane: %s", strings.Join(took, ", "))
}

// upstream moves every apiserver to upstream's image of the same release
// (imported on each node, named by its patch), then checks that nothing Turnstile stored
// troubles it: policy/v1beta1 is not served, the policies lie in etcd
// untouched, and the pods that carry kubernetes.io/psp read and update
// as any other.
func (w *wayBack) upstream(t *testing.T) string {
	t.Helper()
	c := w.c
	image, tarball := upstreamAPIServerImage(t, w.e.toVersion)
	var took []string
	for _, n := range c.cp {
		if err := n.ImportImages(t.Context(), filepath.Join(w.e.toImages, tarball)); err != nil {
			t.Fatal(err)
		}
		took = append(took, w.reconfigure(t, n, image))
		if got := manifestImage(t, n, "kube-apiserver"); got != image {
			t.Errorf("%s's apiserver manifest runs %s, want upstream's %s", n.Name, got, image)
		}
	}
	for _, n := range c.cp {
		client, err := kubernetes.NewForConfig(c.direct(n))
		if err != nil {
			t.Fatal(err)
		}
		if v, err := client.Discovery().ServerVersion(); err != nil || v.GitVersion != w.e.toVersion {
			t.Errorf("%s's apiserver: %+v, %v; want upstream's %s", n.Name, v, err, w.e.toVersion)
		}
	}
	if _, err := c.client.Discovery().ServerResourcesForGroupVersion("policy/v1beta1"); !apierrors.IsNotFound(err) {
		t.Errorf("upstream's apiserver and policy/v1beta1: %v, want it not served", err)
	}
	// A discovery cache of its own: the run's kubectl cached
	// policy/v1beta1 from Turnstile, and with it kubectl would ask and be
	// told 404 rather than find no such resource.
	const notServed = `the server doesn't have a resource type "podsecuritypolicies"`
	if out, err := c.run("--cache-dir", t.TempDir(), "get", "podsecuritypolicies"); err == nil || !strings.Contains(out, notServed) {
		t.Errorf("kubectl get podsecuritypolicies on upstream's apiserver: %v, want %q:\n%s", err, notServed, out)
	}
	if got := storedPolicies(t, c.etcd); !reflect.DeepEqual(got, w.stored) {
		t.Errorf("the PodSecurityPolicies in etcd changed under upstream's apiserver:\nbefore %v\nafter  %v", w.stored, got)
	}
	c.must(t, "-n", "app", "get", "pods", "-o", "yaml")
	c.must(t, "-n", "app", "label", "pods", "--all", "turnstile.test/way-back=upstream")
	c.must(t, "-n", "app", "label", "pods", "--all", "turnstile.test/way-back-")
	if got := pspAnnotations(t, &c.kubeadmClient, "app"); !reflect.DeepEqual(got, w.before.annotations) {
		t.Errorf("the app's pods' kubernetes.io/psp changed under upstream's apiserver:\nbefore %v\nafter  %v", w.before.annotations, got)
	}
	w.wantAdmittedAsSent(t, "by upstream's apiserver")
	return fmt.Sprintf("on each node upstream's image imported and named by its patch, kubeadm upgrade node phase control-plane: %s; %s served by all three; policy/v1beta1 not served, %d PodSecurityPolicies untouched in etcd, %d pods with kubernetes.io/psp read and labelled",
		strings.Join(took, ", "), image, len(w.stored), len(w.before.annotations))
}

// turnstile is the upgrade after: kubeadm's own, to the same release with
// Turnstile's image again (the patch removed: kubeadm's name, the
// bundle's), PodSecurityPolicy still off.
func (w *wayBack) turnstile(t *testing.T) string {
	t.Helper()
	c, ctx := w.c, t.Context()
	opts := localnode.UpgradeOptions{Version: w.e.toVersion, Timeout: upgradeTimeout, PullIfNotPresent: true}
	var took []string
	for i, n := range c.cp {
		began := time.Now()
		command, upgrade, want := "kubeadm upgrade node", n.KubeadmUpgradeNode, "[upgrade/control-plane] The control plane instance for this node was successfully upgraded!"
		if i == 0 {
			command, upgrade, want = "kubeadm upgrade apply", n.KubeadmUpgradeApply, fmt.Sprintf("[upgrade] SUCCESS! A control plane node of your cluster was upgraded to %q.", w.e.toVersion)
		}
		out, err := upgrade(ctx, opts)
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("%s on %s: %v, want %q in its output:\n%s", command, n.Name, err, want, out)
		}
		w.serving(t, n, c.toImage)
		took = append(took, fmt.Sprintf("%s on %s %.0f s", command, n.Name, time.Since(began).Seconds()))
	}
	w.wantAdmittedAsSent(t, "by Turnstile with the plugin off")
	return strings.Join(took, ", ") + "; PodSecurityPolicy still off"
}

func (w *wayBack) enforce(t *testing.T) string {
	t.Helper()
	c, ctx := w.c, t.Context()
	editAPIServerConfig(ctx, t, c.client, func(apiServer map[string]any) {
		setExtraArg(apiServer, "enable-admission-plugins", "NodeRestriction,PodSecurityPolicy")
	})
	w.b.stream.expect(changing)
	var took []string
	for _, n := range c.cp {
		took = append(took, w.reconfigure(t, n, ""))
	}
	w.b.stream.expect(enforced)
	if got := storedPolicies(t, c.etcd); !reflect.DeepEqual(got, w.stored) {
		t.Errorf("the PodSecurityPolicies in etcd changed on the way back and forward:\nbefore %v\nafter  %v", w.stored, got)
	}
	c.wantPSPState(t, w.before, w.b.decisions, "the way back and forward")
	return fmt.Sprintf("kubeadm-config's --enable-admission-plugins=NodeRestriction,PodSecurityPolicy; kubeadm upgrade node phase control-plane: %s; %d PodSecurityPolicies served again as before the way back, alice's pods decided as before the run",
		strings.Join(took, ", "), len(w.before.policies))
}

// reconfigure writes n's control-plane manifests again from kubeadm-config
// with a patch that runs apiserverImage (empty: no patch, kubeadm's own
// name, the bundle's Turnstile) and waits for the apiserver to serve; it
// says how long that took.
func (w *wayBack) reconfigure(t *testing.T, n *localnode.Node, apiserverImage string) string {
	t.Helper()
	began := time.Now()
	out, err := n.KubeadmReconfigure(t.Context(), localnode.UpgradeOptions{Version: w.e.toVersion, APIServerImage: apiserverImage, Timeout: upgradeTimeout, PullIfNotPresent: true})
	const done = "[upgrade/control-plane] The control plane instance for this node was successfully upgraded!"
	if err != nil || !strings.Contains(out, done) {
		t.Fatalf("kubeadm upgrade node phase control-plane on %s: %v, want %q in its output:\n%s", n.Name, err, done, out)
	}
	w.serving(t, n, cmp.Or(apiserverImage, w.c.toImage))
	return fmt.Sprintf("%s %.0f s", n.Name, time.Since(began).Seconds())
}

// serving waits for n's apiserver to be back in haproxy's rotation and
// its mirror pod to run image.
func (w *wayBack) serving(t *testing.T, n *localnode.Node, image string) {
	t.Helper()
	w.c.waitServer(t, n, "UP", 3*time.Minute)
	w.c.waitStaticPods(t, n.Name, map[string]string{"kube-apiserver": image})
}

// wantAdmittedAsSent checks that no server decides alice's pods: each is
// admitted as she sent it, with no kubernetes.io/psp.
func (w *wayBack) wantAdmittedAsSent(t *testing.T, how string) {
	t.Helper()
	for name, d := range decideAsAlice(t.Context(), t, &w.c.kubeadmClient) {
		if !strings.HasPrefix(d, "admitted by :") {
			t.Errorf("alice's %s pod %s: %s; want it admitted as sent", name, how, d)
		}
	}
}

// upstreamAPIServerImage is upstream's kube-apiserver image of version,
// under kubeadm's default name, and its tarball among make
// control-plane-images'.
func upstreamAPIServerImage(t *testing.T, version string) (image, tarball string) {
	t.Helper()
	for _, img := range oci.ControlPlaneImages(version) {
		if img.Name == "kube-apiserver" {
			return img.Tags[0], img.Tarball
		}
	}
	t.Fatal("build/oci names no kube-apiserver control-plane image")
	return "", ""
}

// manifestFlag is the value of --name in n's kube-apiserver manifest, or
// "".
func manifestFlag(t *testing.T, n *localnode.Node, name string) string {
	t.Helper()
	for _, arg := range staticPod(t, n, "kube-apiserver").Spec.Containers[0].Command {
		if v, ok := strings.CutPrefix(arg, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// storedPolicies are the PodSecurityPolicies' keys in etcd, each with its
// last revision and a hash of its value: what an apiserver that does not
// serve them must leave as it is.
func storedPolicies(t *testing.T, etcd *clientv3.Client) map[string]string {
	t.Helper()
	resp, err := etcd.Get(t.Context(), "/registry/podsecuritypolicy/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = fmt.Sprintf("revision %d, sha256 %x", kv.ModRevision, sha256.Sum256(kv.Value))
	}
	if len(out) != 3 {
		t.Errorf("etcd holds the PodSecurityPolicies %v, want examples/podsecuritypolicy's three", out)
	}
	return out
}

func TestStreamPolicy(t *testing.T) {
	for _, tc := range []struct {
		privileged, admitted bool
		psp                  string
		right                map[streamPolicy]bool
	}{
		{false, true, "restricted", map[streamPolicy]bool{enforced: true, notEnforced: false, changing: true}},
		{false, true, "", map[streamPolicy]bool{enforced: false, notEnforced: true, changing: true}},
		{false, true, "privileged", map[streamPolicy]bool{enforced: false, notEnforced: false, changing: false}},
		{false, false, "", map[streamPolicy]bool{enforced: false, notEnforced: false, changing: false}},
		{true, false, "", map[streamPolicy]bool{enforced: true, notEnforced: false, changing: true}},
		{true, true, "", map[streamPolicy]bool{enforced: false, notEnforced: true, changing: true}},
		{true, true, "restricted", map[streamPolicy]bool{enforced: false, notEnforced: false, changing: false}},
	} {
		for p, want := range tc.right {
			if got := p.right(tc.privileged, tc.admitted, tc.psp); got != want {
				t.Errorf("policy %d, privileged %t, admitted %t by %q: right %t, want %t", p, tc.privileged, tc.admitted, tc.psp, got, want)
			}
		}
	}
}

func TestEditAPIServerConfig(t *testing.T) {
	apiServer := map[string]any{"extraArgs": []any{
		map[string]any{"name": "enable-admission-plugins", "value": "NodeRestriction,PodSecurityPolicy"},
		map[string]any{"name": "audit-log-path", "value": "/var/log/audit.log"},
	}}
	setExtraArg(apiServer, "admission-control-config-file", admissionConfigFile)
	setExtraArg(apiServer, "enable-admission-plugins", "NodeRestriction")
	setAdmissionVolume(apiServer, true)
	setAdmissionVolume(apiServer, true)
	want := map[string]any{
		"extraArgs": []any{
			map[string]any{"name": "enable-admission-plugins", "value": "NodeRestriction"},
			map[string]any{"name": "audit-log-path", "value": "/var/log/audit.log"},
			map[string]any{"name": "admission-control-config-file", "value": admissionConfigFile},
		},
		"extraVolumes": []any{map[string]any{"name": "admission", "hostPath": admissionDir, "mountPath": admissionDir, "readOnly": true, "pathType": "DirectoryOrCreate"}},
	}
	if !reflect.DeepEqual(apiServer, want) {
		t.Fatalf("after setting:\n%v\nwant\n%v", apiServer, want)
	}
	setExtraArg(apiServer, "admission-control-config-file", "")
	setAdmissionVolume(apiServer, false)
	want["extraArgs"], want["extraVolumes"] = want["extraArgs"].([]any)[:2], []any{}
	if !reflect.DeepEqual(apiServer, want) {
		t.Errorf("after removing:\n%v\nwant\n%v", apiServer, want)
	}
}
