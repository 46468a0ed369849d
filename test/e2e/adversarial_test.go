// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/internal/localnode"
	"github.com/turnstile-k8s/turnstile/pkg/authorization/nodesproxy"
)

// The paths around the restored security controllers that docs/security.md
// names, each tried on a real node by a user with only the rights the
// scenario gives (alice, a service account with a developer's Role in
// namespace tenant), each asserting the outcome the document gives: refused
// by our controller, with the message that names it; refused by an upstream
// mechanism, shown closed with it and open without it; or not covered.
// `make test-node` runs it as root with the images built.
func TestAdversarial(t *testing.T) {
	t.Parallel() // its own nodes, beside the others': see "Running in parallel" in README.md
	config := t.TempDir()
	execConfig := filepath.Join(config, "exec.yaml")
	writeExecOptions(t, execConfig, "")
	admissionConfig := filepath.Join(config, "admission.yaml")
	if err := os.WriteFile(admissionConfig, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: DenyEscalatingExec
  path: exec.yaml
`), 0o600); err != nil {
		t.Fatal(err)
	}
	lu := startLocalNodes(t, 1, "-admission-plugins", "DenyEscalatingExec,PodSecurityPolicy",
		"-pod-security-policies", "../../examples/podsecuritypolicy", "-admission-config", admissionConfig)
	ctx := t.Context()
	admin, node, kubelet := theNode(t, lu)

	lu.apply(t, aliceRBAC)
	token := strings.TrimSpace(lu.mustKubectl(t, "-n", "tenant", "create", "token", "alice", "--duration=1h"))
	alice := userFor(t, lu, token)

	// The targets: a privileged pod and one on the host's network, which
	// only an admin may create, and alice's own plain pod.
	for _, p := range []*corev1.Pod{
		sleeper("privileged", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}),
		sleeper("hostnet", func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
	} {
		if _, err := admin.CoreV1().Pods("tenant").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alice.client.CoreV1().Pods("tenant").Create(ctx, sleeper("plain", nonRoot), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Pods that are the node's without being privileged or sharing a host
	// namespace, which DenyEscalatingExec never judged: the node's root,
	// its containerd's socket (the node's state lies under local-up's run
	// directory), CAP_SYS_ADMIN. Each with the command that shows it.
	socket := filepath.Join("/run/turnstile-local", fmt.Sprint(lu.cmd.Process.Pid), node, "containerd.sock")
	nodeOwners := []struct {
		pod          *corev1.Pod
		command      []string
		shows        func(string) bool
		failingCheck string
	}{
		{sleeper("rootfs", hostPathAt("/", "/host")), []string{"cat", "/host/etc/os-release"},
			func(out string) bool { return strings.Contains(out, "PRETTY_NAME=") }, `hostPath volumes (volume "host")`},
		{sleeper("runtime", hostPathAt(socket, "/containerd.sock")), []string{"ls", "-l", "/containerd.sock"},
			func(out string) bool { return strings.HasPrefix(out, "s") }, `hostPath volumes (volume "host")`},
		{sleeper("sysadmin", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}
		}), []string{"grep", "CapEff", "/proc/self/status"}, holdsSysAdmin, `non-default capabilities (container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add)`},
	}
	for _, o := range nodeOwners {
		if _, err := admin.CoreV1().Pods("tenant").Create(ctx, o.pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	lu.mustKubectl(t, "-n", "tenant", "wait", "--for=condition=Ready", "pod/privileged", "pod/hostnet", "pod/plain", "pod/rootfs", "pod/runtime", "pod/sysadmin", "--timeout=3m")

	t.Run("exec and attach into a privileged pod: refused by DenyEscalatingExec", func(t *testing.T) {
		for _, args := range [][]string{{"exec", "privileged", "--", "id"}, {"attach", "privileged", "-i=false"}} {
			out, err := alice.kubectl(append([]string{"-n", "tenant"}, args...)...)
			if err == nil || !strings.Contains(out, `pods "privileged" is forbidden: cannot exec into or attach to a privileged container`) {
				t.Errorf("kubectl %s as alice: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
		if out, err := alice.kubectl("-n", "tenant", "exec", "plain", "--", "id", "-u"); err != nil || strings.TrimSpace(out) != "1000" {
			t.Errorf("exec into alice's plain pod: %v\n%s", err, out)
		}
	})

	// The paths upstream's DenyEscalatingExec never judged, open as v1.20
	// left them until the options are on (below).
	t.Run("port-forward to a host-network pod reaches the node's loopback: open by default", func(t *testing.T) {
		port, out, stop := alice.portForward(t, "hostnet", 10248) // the kubelet's healthz, on the node's 127.0.0.1
		defer stop()
		if port == 0 {
			t.Fatalf("kubectl port-forward was refused:\n%s", out)
		}
		if body := httpGet(ctx, t, fmt.Sprintf("http://127.0.0.1:%d/healthz", port)); body != "ok" {
			t.Errorf("the kubelet's healthz through port-forward: %q", body)
		}
	})

	// pods/proxy to the host-network pod on the kubelet's port: the
	// apiserver connects to the node's own address, and the kubelet there
	// answers (it does not know the apiserver's proxy, so: Unauthorized).
	hostnetProxy := func() (string, error) {
		body, err := alice.client.CoreV1().RESTClient().Get().AbsPath("api/v1/namespaces/tenant/pods/https:hostnet:10250/proxy/healthz").DoRaw(ctx)
		return string(body), err
	}
	t.Run("pods/proxy to a host-network pod reaches the node's address: open by default", func(t *testing.T) {
		out, err := hostnetProxy()
		if answered := err == nil && out == "ok" || apierrors.IsUnauthorized(err) || strings.Contains(out, "Unauthorized"); !answered {
			t.Errorf("pods/proxy to the kubelet's port through the host-network pod: %v\n%s\nwant the kubelet's answer", err, out)
		} else {
			t.Logf("pods/proxy reached the kubelet on the node's address, which answered: %v %s", err, out)
		}
	})

	// nodes/proxy: what RBAC's get and create on it open, each shown by a
	// command that ran (its output), never by a status code. The kubelet
	// authorizes a request to its own port by the HTTP method, as it asks
	// the apiserver: a WebSocket (a GET that upgrades) needs get, a SPDY
	// exec or a POST to /run create.
	proxyRun := alice.nodeProxyURL(node, "run/tenant/privileged/c")
	proxyExecWS := alice.nodeProxyURL(node, "exec/tenant/privileged/c")
	proxyExecWS.RawQuery = "command=id&output=1"
	proxyForward := alice.nodeProxyURL(node, "portForward/tenant/hostnet")
	kubeletExec := kubelet.JoinPath("exec/tenant/privileged/c")
	kubeletExec.RawQuery = "command=id&output=1"
	t.Run("nodes/proxy and the kubelet's port: get alone runs a command in a privileged pod over a WebSocket, create through the apiserver", func(t *testing.T) {
		// Asked as another service account without the grant: the kubelet
		// keeps a refusal for 30 s (its webhook authorizer's cache), so
		// alice's own would delay her grant below.
		stranger := strings.TrimSpace(lu.mustKubectl(t, "-n", "tenant", "create", "token", "default", "--duration=1h"))
		if out, err := websocketExec(ctx, kubeletConfig(stranger), kubeletExec); err == nil || !strings.Contains(err.Error(), "403") {
			t.Errorf("a WebSocket exec at the kubelet without a grant: %v\n%s", err, out)
		}
		if out, err := runThrough(ctx, alice.config, proxyRun, "id"); err == nil || !strings.Contains(err.Error(), `cannot create resource \"nodes/proxy\"`) {
			t.Errorf("run through nodes/proxy without a grant: %v\n%s", err, out)
		}
		if _, _, err := forwardThrough(alice.config, proxyForward, 10248); err == nil || !strings.Contains(err.Error(), `cannot create resource "nodes/proxy"`) {
			t.Errorf("port-forward through nodes/proxy without a grant: %v", err)
		}

		// get alone, as many monitoring tools hold it.
		lu.mustKubectl(t, "create", "clusterrole", "nodes-proxy-get", "--verb=get", "--resource=nodes/proxy")
		lu.mustKubectl(t, "create", "clusterrolebinding", "alice-nodes-proxy-get", "--clusterrole=nodes-proxy-get", "--serviceaccount=tenant:alice")
		if out, err := eventually(ctx, func() (string, error) { return websocketExec(ctx, kubeletConfig(token), kubeletExec) }); err != nil || !strings.Contains(out, "uid=0(root)") {
			t.Errorf("a WebSocket exec into the privileged pod at the kubelet, with get on nodes/proxy: %v\n%s", err, out)
		} else {
			t.Logf("get on nodes/proxy alone, a WebSocket exec at the kubelet ran id: %s", strings.TrimSpace(out))
		}
		// Through the apiserver the same WebSocket does not get that far
		// (kept so that a change upstream is seen): the apiserver's
		// nodes/proxy drops an upgrade request's query string, where the
		// kubelet reads exec's parameters, and the kubelet refuses the
		// handshake of an exec that asks for no stream.
		if out, err := websocketExec(ctx, alice.config, proxyExecWS); err == nil {
			t.Errorf("a WebSocket exec through the apiserver's nodes/proxy, with get, ran a command (%q): a change upstream, which docs/security.md must say", out)
		} else {
			t.Logf("a WebSocket exec through the apiserver's nodes/proxy, with get: %v", err)
		}
		if out, err := runThrough(ctx, alice.config, proxyRun, "id"); err == nil || !strings.Contains(err.Error(), `cannot create resource \"nodes/proxy\"`) {
			t.Errorf("run through nodes/proxy with get only: %v\n%s", err, out)
		}

		// create as well: /run through the apiserver answers with the
		// command's output, and port-forward works.
		lu.mustKubectl(t, "create", "clusterrole", "nodes-proxy", "--verb=get,create", "--resource=nodes/proxy")
		lu.mustKubectl(t, "create", "clusterrolebinding", "alice-nodes-proxy", "--clusterrole=nodes-proxy", "--serviceaccount=tenant:alice")
		if out, err := eventually(ctx, func() (string, error) { return runThrough(ctx, alice.config, proxyRun, "id") }); err != nil || !strings.Contains(out, "uid=0(root)") {
			t.Errorf("run in the privileged pod through nodes/proxy, granted create, coverNodeProxy off: %v\n%s", err, out)
		}
		port, stop, err := forwardThrough(alice.config, proxyForward, 10248)
		if err != nil {
			t.Errorf("port-forward to the host-network pod through nodes/proxy, granted: %v", err)
		} else {
			if body := httpGet(ctx, t, fmt.Sprintf("http://127.0.0.1:%d/healthz", port)); body != "ok" {
				t.Errorf("the kubelet's healthz through nodes/proxy's port-forward: %q", body)
			}
			stop()
		}
		if out, err := eventually(ctx, func() (string, error) { return streamExec(ctx, kubeletConfig(token), kubeletExec) }); err != nil || !strings.Contains(out, "uid=0(root)") {
			t.Errorf("a SPDY exec into the privileged pod at the kubelet, granted create: %v\n%s", err, out)
		}
	})

	// Whoever may write the admission configuration decides: the apiserver
	// reads it once a second and applies what it finds, and warns when
	// anyone but the owner may write it (here everyone, for this write).
	if err := os.Chmod(execConfig, 0o666); err != nil {
		t.Fatal(err)
	}
	writeExecOptions(t, execConfig, "coverPortForward: true\ncoverNodeProxy: true\n")
	t.Run("a write to the admission configuration is in force within seconds", func(t *testing.T) {
		out, err := eventually(ctx, func() (string, error) {
			port, out, stop := alice.portForward(t, "hostnet", 10248)
			stop()
			if port != 0 {
				return out, fmt.Errorf("port-forward still allowed")
			}
			return out, nil
		})
		want := `pods "hostnet" is forbidden: DenyEscalatingExec: cannot port-forward to a container using host network`
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("with coverPortForward written: %v\n%s\nwant %q", err, out, want)
		}
		log, _ := os.ReadFile(filepath.Join(lu.dir, "logs", "kube-apiserver.log"))
		if warning := execConfig + " is writable by its group or everyone (mode 0666): whoever can write the admission configuration decides admission"; !strings.Contains(string(log), warning) {
			t.Errorf("the apiserver's log lacks the warning %q", warning)
		}
		if err := os.Chmod(execConfig, 0o600); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("pods/proxy to a host-network pod with coverPortForward: refused by DenyEscalatingExec", func(t *testing.T) {
		out, err := hostnetProxy()
		if want := `pods \"https:hostnet:10250\" is forbidden: DenyEscalatingExec: cannot proxy to a container using host network`; !apierrors.IsForbidden(err) || !strings.Contains(out, want) {
			t.Errorf("pods/proxy to the host-network pod: %v\n%s\nwant %s", err, out, want)
		}
	})

	t.Run("run and port-forward through nodes/proxy with coverNodeProxy: refused by DenyEscalatingExec", func(t *testing.T) {
		out, err := runThrough(ctx, alice.config, proxyRun, "id")
		want := fmt.Sprintf(`nodes \"%s\" is forbidden: DenyEscalatingExec: cannot exec into or attach to a privileged container (pod tenant/privileged, through nodes/proxy)`, node)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("run through nodes/proxy: %v\n%s\nwant %s", err, out, want)
		}
		_, _, err = forwardThrough(alice.config, proxyForward, 10248)
		want = "DenyEscalatingExec: cannot port-forward to a container using host network (pod tenant/hostnet, through nodes/proxy)"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("port-forward through nodes/proxy: %v\nwant %s", err, want)
		}
		if out, err := runThrough(ctx, alice.config, alice.nodeProxyURL(node, "run/tenant/plain/c"), "id -u"); err != nil || strings.TrimSpace(out) != "1000" {
			t.Errorf("run in the plain pod through nodes/proxy: %v\n%s", err, out)
		}
	})

	t.Run("exec into a pod that is the node's without privileged or a host namespace: open by default", func(t *testing.T) {
		for _, o := range nodeOwners {
			out, err := alice.kubectl(append([]string{"-n", "tenant", "exec", o.pod.Name, "--"}, o.command...)...)
			if err != nil || !o.shows(out) {
				t.Errorf("exec %v into %s as alice: %v\n%s", o.command, o.pod.Name, err, out)
			} else {
				t.Logf("alice ran %v in %s: %s", o.command, o.pod.Name, strings.TrimSpace(strings.SplitN(out, "\n", 2)[0]))
			}
		}
	})

	writeExecOptions(t, execConfig, "coverPortForward: true\ncoverNodeProxy: true\nrequirePodSecurityLevel: baseline\n")
	t.Run("exec into a pod that fails baseline, with requirePodSecurityLevel: refused by DenyEscalatingExec", func(t *testing.T) {
		for _, o := range nodeOwners {
			want := fmt.Sprintf(`pods "%s" is forbidden: DenyEscalatingExec: cannot exec into or attach to a pod that fails the Pod Security Standards baseline level: %s`, o.pod.Name, o.failingCheck)
			out, err := eventually(ctx, func() (string, error) {
				out, err := alice.kubectl(append([]string{"-n", "tenant", "exec", o.pod.Name, "--"}, o.command...)...)
				if err == nil {
					return out, fmt.Errorf("exec still allowed")
				}
				return out, nil
			})
			if err != nil || !strings.Contains(out, want) {
				t.Errorf("exec into %s with requirePodSecurityLevel: %v\n%s\nwant %q", o.pod.Name, err, out, want)
			}
		}
		if out, err := alice.kubectl("-n", "tenant", "exec", "plain", "--", "id", "-u"); err != nil || strings.TrimSpace(out) != "1000" {
			t.Errorf("exec into alice's plain pod, which meets baseline: %v\n%s", err, out)
		}
		// Back to the options the rest of the test expects.
		writeExecOptions(t, execConfig, "coverPortForward: true\ncoverNodeProxy: true\n")
		if out, err := eventually(ctx, func() (string, error) {
			return alice.kubectl("-n", "tenant", "exec", "rootfs", "--", "true")
		}); err != nil {
			t.Fatalf("requirePodSecurityLevel still in force after it was removed: %v\n%s", err, out)
		}
	})

	t.Run("exec and port-forward straight to the kubelet: not covered by any admission plugin", func(t *testing.T) {
		if out, err := streamExec(ctx, kubeletConfig(token), kubeletExec); err != nil || !strings.Contains(out, "uid=0(root)") {
			t.Errorf("exec at the kubelet with coverNodeProxy on: %v\n%s", err, out)
		}
		port, stop, err := forwardThrough(kubeletConfig(token), kubelet.JoinPath("portForward/tenant/hostnet"), 10248)
		if err != nil {
			t.Fatalf("port-forward at the kubelet with coverPortForward on: %v", err)
		}
		defer stop()
		if body := httpGet(ctx, t, fmt.Sprintf("http://127.0.0.1:%d/healthz", port)); body != "ok" {
			t.Errorf("the kubelet's healthz through its own port-forward: %q", body)
		}
	})
	lu.mustKubectl(t, "delete", "clusterrolebinding", "alice-nodes-proxy", "alice-nodes-proxy-get")

	t.Run("kubectl debug with a privileged ephemeral container: refused by PodSecurityPolicy", func(t *testing.T) {
		out, err := alice.kubectl("-n", "tenant", "debug", "plain", "--image="+busybox, "--profile=sysadmin", "-c", "debugger", "--", "sleep", "60")
		if err == nil || !strings.Contains(out, "PodSecurityPolicy: unable to validate pod") || !strings.Contains(out, "Privileged containers are not allowed") {
			t.Errorf("kubectl debug --profile=sysadmin as alice: %v\n%s", err, out)
		}
	})

	t.Run("kubectl debug node: refused by PodSecurityPolicy; an admin's, attached to, refused by DenyEscalatingExec", func(t *testing.T) {
		out, err := alice.kubectl("-n", "tenant", "debug", "node/"+node, "--image="+busybox, "--", "sleep", "600")
		if err == nil || !strings.Contains(out, "PodSecurityPolicy: unable to admit pod") {
			t.Errorf("kubectl debug node as alice: %v\n%s", err, out)
		}
		out = lu.mustKubectl(t, "-n", "tenant", "debug", "node/"+node, "--image="+busybox, "--", "sleep", "600")
		name := ""
		for _, f := range strings.Fields(out) {
			if strings.HasPrefix(f, "node-debugger-") {
				name = f
			}
		}
		if name == "" {
			t.Fatalf("kubectl debug node printed no pod name:\n%s", out)
		}
		lu.mustKubectl(t, "-n", "tenant", "wait", "--for=condition=Ready", "pod/"+name, "--timeout=2m")
		out, err = alice.kubectl("-n", "tenant", "exec", name, "--", "id")
		if err == nil || !strings.Contains(out, "cannot exec into or attach to a container using host network") {
			t.Errorf("exec into the node debugger as alice: %v\n%s", err, out)
		}
	})

	t.Run("a pod update that changes its security context: refused by upstream's validation", func(t *testing.T) {
		patch := `{"spec":{"containers":[{"name":"c","securityContext":{"privileged":true}}]}}`
		_, err := alice.client.CoreV1().Pods("tenant").Patch(ctx, "plain", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		if err == nil || !strings.Contains(err.Error(), "pod updates may not change fields other than") {
			t.Errorf("patching privileged into a running pod: %v", err)
		}
	})

	t.Run("the kubernetes.io/psp annotation is a record, not a grant", func(t *testing.T) {
		claims := sleeper("claims-privileged", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"kubernetes.io/psp": "privileged"}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		})
		if _, err := alice.client.CoreV1().Pods("tenant").Create(ctx, claims, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "PodSecurityPolicy: unable to admit pod") {
			t.Errorf("a privileged pod naming the privileged policy: %v", err)
		}
		plain := sleeper("claims-plain", func(p *corev1.Pod) {
			nonRoot(p)
			p.Annotations = map[string]string{"kubernetes.io/psp": "privileged"}
		})
		created, err := alice.client.CoreV1().Pods("tenant").Create(ctx, plain, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := created.Annotations["kubernetes.io/psp"]; got != "restricted" {
			t.Errorf("a plain pod naming the privileged policy was recorded as admitted by %q, want restricted", got)
		}
		// Whoever may update the pod may rewrite the record: the update is
		// still judged by a policy the updater may use.
		patch := `{"metadata":{"annotations":{"kubernetes.io/psp":"privileged"}}}`
		if _, err := alice.client.CoreV1().Pods("tenant").Patch(ctx, "claims-plain", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Errorf("rewriting the annotation of a pod restricted admits: %v", err)
		}
	})

	t.Run("pods created by controllers: RBAC on the controllers' service accounts decides", func(t *testing.T) {
		deployment := func(name string) {
			manifest := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, namespace: tenant}
spec:
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers: [{name: c, image: %[2]s, command: [sleep, "3600"], securityContext: {privileged: true}}]
`, name, busybox)
			mustRun(t, alice.kubectlStdin(manifest), "apply", "-f", "-")
		}
		deployment("refused")
		err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
			events, err := alice.client.CoreV1().Events("tenant").List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
			if err != nil {
				return false, err
			}
			for _, e := range events.Items {
				if strings.HasPrefix(e.InvolvedObject.Name, "refused-") && strings.Contains(e.Message, "PodSecurityPolicy: unable to admit pod") {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Errorf("the ReplicaSet controller created alice's privileged pod, or said nothing: %v", err)
		}
		// The mistake: privileged granted to kube-system's service accounts
		// cluster-wide, so the controllers may use it in every namespace.
		lu.mustKubectl(t, "create", "clusterrolebinding", "mistake", "--clusterrole=psp:privileged", "--group=system:serviceaccounts:kube-system")
		defer lu.mustKubectl(t, "delete", "clusterrolebinding", "mistake")
		deployment("through-the-controller")
		err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
			pods, err := alice.client.CoreV1().Pods("tenant").List(ctx, metav1.ListOptions{LabelSelector: "app=through-the-controller"})
			if err != nil {
				return false, err
			}
			for _, p := range pods.Items {
				if sc := p.Spec.Containers[0].SecurityContext; p.Annotations["kubernetes.io/psp"] == "privileged" && sc != nil && ptr.Deref(sc.Privileged, false) {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Errorf("with the controllers granted privileged cluster-wide, alice's privileged pod was still not created: %v", err)
		}
		mustRun(t, alice.kubectl, "-n", "tenant", "delete", "deployment", "refused", "through-the-controller")
	})

	staticOut := t.TempDir() // outlives the subtest: the pod may still run when it ends
	t.Run("a static pod runs whatever it holds: not covered; its mirror pod is refused by PodSecurityPolicy", func(t *testing.T) {
		out := staticOut
		manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: static-root, namespace: tenant}
spec:
  containers:
  - name: c
    image: %s
    imagePullPolicy: Never
    command: ["sh", "-c", "id > /out/id; sleep 3600"]
    securityContext: {privileged: true}
    volumeMounts: [{name: out, mountPath: /out}]
  volumes: [{name: out, hostPath: {path: %s}}]
`, busybox, out)
		path := filepath.Join(localnode.StaticPodPath(lu.dir, node), "static-root.yaml")
		if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(path)
		err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
			id, _ := os.ReadFile(filepath.Join(out, "id"))
			return strings.Contains(string(id), "uid=0(root)"), nil
		})
		if err != nil {
			t.Errorf("the static pod did not run privileged as root: %v", err)
		}
		kubeletLog := filepath.Join(lu.dir, "logs", node+"-kubelet.log")
		err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(context.Context) (bool, error) {
			log, _ := os.ReadFile(kubeletLog)
			return strings.Contains(string(log), "PodSecurityPolicy: unable to admit pod"), nil
		})
		if err != nil {
			t.Errorf("%s never shows the mirror pod refused by PodSecurityPolicy", kubeletLog)
		}
		if _, err := admin.CoreV1().Pods("tenant").Get(ctx, "static-root-"+node, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the mirror pod of a privileged static pod: %v", err)
		}
		// Where the nodes may use a policy that admits it (the examples
		// grant privileged in kube-system), the mirror pod shows the pod.
		visible := filepath.Join(localnode.StaticPodPath(lu.dir, node), "static-visible.yaml")
		manifest = strings.Replace(strings.Replace(manifest, "static-root", "static-visible", 1), "namespace: tenant", "namespace: kube-system", 1)
		if err := os.WriteFile(visible, []byte(manifest), 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(visible)
		err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := admin.CoreV1().Pods("kube-system").Get(ctx, "static-visible-"+node, metav1.GetOptions{})
			return err == nil && p.Annotations["kubernetes.io/psp"] == "privileged", nil
		})
		if err != nil {
			t.Errorf("no mirror pod, admitted by privileged, for the static pod in kube-system: %v", err)
		}
	})

	t.Run("who may write PodSecurityPolicies and grant their use: RBAC and its escalation check decide", func(t *testing.T) {
		policy := `{"apiVersion":"policy/v1beta1","kind":"PodSecurityPolicy","metadata":{"name":"alice-anything"},
"spec":{"privileged":true,"allowPrivilegeEscalation":true,"volumes":["*"],"runAsUser":{"rule":"RunAsAny"},
"seLinux":{"rule":"RunAsAny"},"supplementalGroups":{"rule":"RunAsAny"},"fsGroup":{"rule":"RunAsAny"}}}`
		for _, args := range [][]string{{"create", "-f", "-"}, {"patch", "podsecuritypolicy", "restricted", "--type=merge", "-p", `{"spec":{"privileged":true}}`}} {
			if out, err := alice.kubectlStdin(policy)(args...); err == nil || !strings.Contains(out, "Forbidden") {
				t.Errorf("kubectl %s as alice, without rights on podsecuritypolicies: %v\n%s", args[0], err, out)
			}
		}
		lu.apply(t, pspAuthorRBAC)
		if _, err := eventually(ctx, func() (string, error) { return alice.kubectlStdin(policy)("create", "-f", "-") }); err != nil {
			t.Fatalf("alice creating a policy, granted: %v", err)
		}
		defer lu.mustKubectl(t, "delete", "podsecuritypolicy", "alice-anything")
		privileged := func(name string) error {
			_, err := alice.client.CoreV1().Pods("tenant").Create(ctx, sleeper(name, func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			}), metav1.CreateOptions{})
			return err
		}
		if err := privileged("own-policy"); err == nil || !strings.Contains(err.Error(), "PodSecurityPolicy: unable to admit pod") {
			t.Errorf("a privileged pod under a policy alice wrote but may not use: %v", err)
		}
		out, err := alice.kubectl("-n", "tenant", "create", "role", "use-anything", "--verb=use", "--resource=podsecuritypolicies.policy", "--resource-name=alice-anything")
		if err == nil || !strings.Contains(out, "is attempting to grant RBAC permissions not currently held") {
			t.Errorf("alice granting herself use of her policy: %v\n%s", err, out)
		}
		// With escalate and bind on Roles, RBAC no longer stops her.
		lu.mustKubectl(t, "-n", "tenant", "create", "role", "escalate", "--verb=escalate,bind", "--resource=roles.rbac.authorization.k8s.io")
		lu.mustKubectl(t, "-n", "tenant", "create", "rolebinding", "alice-escalate", "--role=escalate", "--serviceaccount=tenant:alice")
		_, err = eventually(ctx, func() (string, error) {
			return alice.kubectl("-n", "tenant", "create", "role", "use-anything", "--verb=use", "--resource=podsecuritypolicies.policy", "--resource-name=alice-anything")
		})
		if err != nil {
			t.Fatalf("alice, with escalate, granting herself use of her policy: %v", err)
		}
		mustRun(t, alice.kubectl, "-n", "tenant", "create", "rolebinding", "use-anything", "--role=use-anything", "--serviceaccount=tenant:alice")
		if _, err := eventually(ctx, func() (string, error) { return "", privileged("own-policy-used") }); err != nil {
			t.Errorf("with escalate and bind, alice's privileged pod under her own policy: %v", err)
		}
		lu.mustKubectl(t, "-n", "tenant", "delete", "rolebinding", "alice-escalate", "use-anything")
	})

	t.Run("who may change a policy others use: RBAC decides", func(t *testing.T) {
		defer lu.mustKubectl(t, "apply", "-f", "../../examples/podsecuritypolicy/policies.yaml")
		// A privileged container escalates: the policy must allow that too.
		mustRun(t, alice.kubectl, "patch", "podsecuritypolicy", "restricted", "--type=merge", "-p", `{"spec":{"privileged":true,"allowPrivilegeEscalation":true}}`)
		pod := sleeper("through-restricted", func(p *corev1.Pod) {
			nonRoot(p)
			p.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true)
		})
		_, err := eventually(ctx, func() (string, error) {
			created, err := alice.client.CoreV1().Pods("tenant").Create(ctx, pod, metav1.CreateOptions{})
			if err == nil && created.Annotations["kubernetes.io/psp"] != "restricted" {
				return "", fmt.Errorf("admitted by %s", created.Annotations["kubernetes.io/psp"])
			}
			return "", err
		})
		if err != nil {
			t.Errorf("a privileged pod under the restricted policy alice widened: %v", err)
		}
	})

	t.Run("/admissionz: RBAC on the non-resource URL decides", func(t *testing.T) {
		if out, err := alice.kubectl("get", "--raw", "/admissionz"); err == nil || !strings.Contains(out, "Forbidden") {
			t.Errorf("alice reading /admissionz without a grant: %v\n%s", err, out)
		}
		lu.mustKubectl(t, "create", "clusterrole", "admissionz-reader", "--verb=get", "--non-resource-url=/admissionz")
		lu.mustKubectl(t, "create", "clusterrolebinding", "alice-admissionz", "--clusterrole=admissionz-reader", "--serviceaccount=tenant:alice")
		out, err := eventually(ctx, func() (string, error) { return alice.kubectl("get", "--raw", "/admissionz") })
		if err != nil || !strings.Contains(out, "DenyEscalatingExec") || !strings.Contains(out, execConfig) {
			t.Errorf("alice reading /admissionz with a grant: %v\n%s", err, out)
		}
	})

	lu.interrupt(t)
}

// writeExecOptions writes DenyEscalatingExec's configuration with options.
func writeExecOptions(t *testing.T, path, options string) {
	t.Helper()
	data := "apiVersion: exec.admission.turnstile.dev/v1alpha1\nkind: ExecConfiguration\n" + options
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// With --nodes-proxy-get-requires-create, get on nodes/proxy alone opens
// nothing: the kubelet asks the apiserver (a SubjectAccessReview) whether a
// WebSocket exec at its port may run and is told no, and the apiserver's
// own nodes/proxy says no to a get, while monitoring's nodes/metrics still
// reads the kubelet and get with create opens what it opened before.
// TestAdversarial shows the same grant open without the flag.
func TestAdversarialNodesProxyGetRequiresCreate(t *testing.T) {
	t.Parallel() // its own nodes, beside the others': see "Running in parallel" in README.md
	lu := startLocalNodes(t, 1, "-admission-plugins", "", "-apiserver-arg", nodesproxy.Flag+"=true")
	ctx := t.Context()
	admin, node, kubelet := theNode(t, lu)
	if _, err := admin.CoreV1().Pods("default").Create(ctx, sleeper("privileged", func(p *corev1.Pod) {
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lu.mustKubectl(t, "create", "serviceaccount", "monitor")
	lu.mustKubectl(t, "create", "clusterrole", "monitor", "--verb=get", "--resource=nodes/proxy,nodes/metrics")
	lu.mustKubectl(t, "create", "clusterrolebinding", "monitor", "--clusterrole=monitor", "--serviceaccount=default:monitor")
	lu.mustKubectl(t, "wait", "--for=condition=Ready", "pod/privileged", "--timeout=3m")
	token := strings.TrimSpace(lu.mustKubectl(t, "create", "token", "monitor", "--duration=1h"))
	monitor := userFor(t, lu, token)
	kubeletExec := kubelet.JoinPath("exec/default/privileged/c")
	kubeletExec.RawQuery = "command=id&output=1"

	if out, err := websocketExec(ctx, kubeletConfig(token), kubeletExec); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("a WebSocket exec at the kubelet with get on nodes/proxy and the flag on: %v\n%s", err, out)
	}
	// Do, not DoRaw: DoRaw leaves the refusal's Status undecoded ("unknown").
	err := monitor.client.CoreV1().RESTClient().Get().AbsPath("api/v1/nodes", node, "proxy", "healthz").Do(ctx).Error()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), nodesproxy.Reason) {
		t.Errorf("get through the apiserver's nodes/proxy with the flag on: %v\nwant %q", err, nodesproxy.Reason)
	}
	metrics := kubelet.JoinPath("metrics")
	client, err := rest.HTTPClientFor(kubeletConfig(token))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := eventually(ctx, func() (string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, metrics.String(), nil)
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return string(body), fmt.Errorf("status %d", resp.StatusCode)
		}
		return string(body), nil
	}); err != nil || !strings.Contains(out, "kubelet_") {
		t.Errorf("the kubelet's /metrics with get on nodes/metrics: %v\n%.200s", err, out)
	}

	// get with create opens what it opened before. Another service account
	// holds both: the kubelet keeps monitor's refusal for 30 s (its webhook
	// authorizer's cache).
	lu.mustKubectl(t, "create", "serviceaccount", "operator")
	lu.mustKubectl(t, "create", "clusterrole", "nodes-proxy", "--verb=get,create", "--resource=nodes/proxy")
	lu.mustKubectl(t, "create", "clusterrolebinding", "operator", "--clusterrole=nodes-proxy", "--serviceaccount=default:operator")
	operator := strings.TrimSpace(lu.mustKubectl(t, "create", "token", "operator", "--duration=1h"))
	if out, err := eventually(ctx, func() (string, error) { return websocketExec(ctx, kubeletConfig(operator), kubeletExec) }); err != nil || !strings.Contains(out, "uid=0(root)") {
		t.Errorf("a WebSocket exec at the kubelet with get and create on nodes/proxy: %v\n%s", err, out)
	}
}

// aliceRBAC is a developer in namespace tenant: pods and their exec,
// attach, port-forward and ephemeral containers, Deployments, events, and
// reading nodes (kubectl debug node looks the node up).
const aliceRBAC = `apiVersion: v1
kind: Namespace
metadata: {name: tenant}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: alice, namespace: tenant}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: developer, namespace: tenant}
rules:
- apiGroups: [""]
  resources: [pods, pods/exec, pods/attach, pods/portforward, pods/proxy, pods/ephemeralcontainers]
  verbs: [create, get, list, watch, update, patch, delete]
- apiGroups: [apps]
  resources: [deployments, replicasets]
  verbs: [create, get, list, watch, patch, delete]
- apiGroups: [""]
  resources: [events]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: developer, namespace: tenant}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: developer}
subjects: [{kind: ServiceAccount, name: alice, namespace: tenant}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: node-reader}
rules: [{apiGroups: [""], resources: [nodes], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-node-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: node-reader}
subjects: [{kind: ServiceAccount, name: alice, namespace: tenant}]
`

// pspAuthorRBAC lets alice write PodSecurityPolicies and Roles and
// RoleBindings in tenant, and nothing more.
const pspAuthorRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: psp-author}
rules: [{apiGroups: [policy], resources: [podsecuritypolicies], verbs: [create, get, list, patch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-psp-author}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: psp-author}
subjects: [{kind: ServiceAccount, name: alice, namespace: tenant}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: rbac-author, namespace: tenant}
rules: [{apiGroups: [rbac.authorization.k8s.io], resources: [roles, rolebindings], verbs: [create, get, list, delete]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-rbac-author, namespace: tenant}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: rbac-author}
subjects: [{kind: ServiceAccount, name: alice, namespace: tenant}]
`

// sleeper is a busybox pod with one container, c, that sleeps.
func sleeper(name string, change func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "c", Image: busybox, Command: []string{"sleep", "3600"}}},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
		},
	}
	change(p)
	return p
}

// hostPathAt mounts the node's path at mountPath in a pod's first container.
func hostPathAt(path, mountPath string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "host", MountPath: mountPath})
	}
}

// holdsSysAdmin reports whether /proc/self/status's CapEff line shows
// CAP_SYS_ADMIN (capability 21).
func holdsSysAdmin(status string) bool {
	_, hex, ok := strings.Cut(strings.TrimSpace(status), "\t")
	if !ok {
		return false
	}
	caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
	return err == nil && caps&(1<<21) != 0
}

// nonRoot makes a pod the example restricted policy admits and busybox
// runs under: a non-root user.
func nonRoot(p *corev1.Pod) {
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000)}
}

// apply is kubectl apply of manifests as the admin.
func (lu *localUp) apply(t *testing.T, manifests string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(lu.bin, "kubectl"), "--kubeconfig", lu.kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifests)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

// mustRun runs kubectl through run and stops t when it fails.
func mustRun(t *testing.T, run func(...string) (string, error), args ...string) string {
	t.Helper()
	out, err := run(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// user is a cluster user with only a bearer token: a kubeconfig for
// kubectl and a client for the API.
type user struct {
	kubectlPath, kubeconfig string
	config                  *rest.Config
	client                  kubernetes.Interface
}

// userFor writes a kubeconfig with lu's server and CA and token as the
// only credential.
func userFor(t *testing.T, lu *localUp, token string) *user {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(lu.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for name, auth := range cfg.AuthInfos {
		auth.ClientCertificateData, auth.ClientKeyData, auth.ClientCertificate, auth.ClientKey = nil, nil, "", ""
		auth.Token = token
		cfg.AuthInfos[name] = auth
	}
	path := filepath.Join(t.TempDir(), "user.conf")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	config, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return &user{kubectlPath: filepath.Join(lu.bin, "kubectl"), kubeconfig: path, config: config, client: kubernetes.NewForConfigOrDie(config)}
}

func (u *user) kubectl(args ...string) (string, error) {
	return runKubectl(u.kubectlPath, u.kubeconfig, args...)
}

// kubectlStdin is kubectl as u with stdin.
func (u *user) kubectlStdin(stdin string) func(...string) (string, error) {
	return func(args ...string) (string, error) {
		cmd := exec.Command(u.kubectlPath, append([]string{"--kubeconfig", u.kubeconfig}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

// portForward runs kubectl port-forward as u to the pod's remote port in
// namespace tenant. It returns the local port once kubectl forwards, or 0
// and kubectl's output when kubectl ended (refused); stop ends kubectl.
func (u *user) portForward(t *testing.T, pod string, remote int) (int, string, func()) {
	t.Helper()
	ports := freePorts(t, 1)
	cmd := exec.Command(u.kubectlPath, "--kubeconfig", u.kubeconfig, "-n", "tenant", "port-forward", "pod/"+pod, fmt.Sprintf("%s:%d", ports[0], remote))
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { _ = cmd.Wait(); close(ended) }()
	stop := func() { _ = cmd.Process.Kill(); <-ended }
	deadline := time.After(30 * time.Second)
	for {
		select {
		case <-ended:
			return 0, out.String(), func() {}
		case <-deadline:
			stop()
			t.Fatalf("kubectl port-forward neither forwarded nor ended in 30 s:\n%s", out.String())
		case <-time.After(100 * time.Millisecond):
			if strings.Contains(out.String(), "Forwarding from") {
				var port int
				_, _ = fmt.Sscan(ports[0], &port)
				return port, out.String(), stop
			}
		}
	}
}

// nodeProxyURL is the URL of path on node's kubelet through the apiserver.
func (u *user) nodeProxyURL(node, path string) *url.URL {
	loc, err := url.Parse(u.config.Host)
	if err != nil {
		panic(err)
	}
	return loc.JoinPath("api/v1/nodes", node, "proxy", path)
}

// websocketExec runs the exec at u (its parameters in the query) over a
// WebSocket, as the kubelet's legacy stream server speaks it
// (v4.channel.k8s.io: each message a channel byte, 1 for stdout, then
// data), and returns stdout. A refused handshake is an error with the
// status and body.
func websocketExec(ctx context.Context, config *rest.Config, u *url.URL) (string, error) {
	tlsConfig, err := rest.TLSConfigFor(config)
	if err != nil {
		return "", err
	}
	header := http.Header{}
	if config.BearerToken != "" {
		header.Set("Authorization", "Bearer "+config.BearerToken)
	}
	dialer := gwebsocket.Dialer{TLSClientConfig: tlsConfig, Subprotocols: []string{"v4.channel.k8s.io"}, HandshakeTimeout: 10 * time.Second}
	ws := *u
	ws.Scheme = "wss"
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, resp, err := dialer.DialContext(ctx, ws.String(), header)
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(resp.Body)
			return "", fmt.Errorf("%w: %s: %s", err, resp.Status, strings.TrimSpace(string(body)))
		}
		return "", err
	}
	defer conn.Close()
	var stdout strings.Builder
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			if gwebsocket.IsCloseError(err, gwebsocket.CloseNormalClosure) || stdout.Len() > 0 {
				return stdout.String(), nil
			}
			return stdout.String(), err
		}
		if len(data) > 0 && data[0] == 1 {
			stdout.Write(data[1:])
		}
	}
}

// runThrough POSTs to the kubelet's /run endpoint at u (through the
// apiserver's nodes/proxy) with command, and returns what the kubelet
// answers: the command's output. A refusal is an error with the status and
// body.
func runThrough(ctx context.Context, config *rest.Config, u *url.URL, command string) (string, error) {
	client, err := rest.HTTPClientFor(config)
	if err != nil {
		return "", err
	}
	run := *u
	run.RawQuery = url.Values{"cmd": {command}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, run.String(), nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	return string(body), nil
}

// forwardThrough port-forwards a free local port to remote through u (a
// nodes/proxy portForward URL) over SPDY, and returns the local port and
// the function that stops it, or the refusal.
func forwardThrough(config *rest.Config, u *url.URL, remote int) (int, func(), error) {
	rt, upgrader, err := spdy.RoundTripperFor(config)
	if err != nil {
		return 0, nil, err
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", remote)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		return 0, nil, err
	}
	ended := make(chan error, 1)
	go func() { ended <- pf.ForwardPorts() }()
	select {
	case <-ready:
		ports, err := pf.GetPorts()
		if err != nil || len(ports) != 1 {
			close(stop)
			return 0, nil, fmt.Errorf("forwarded ports %v: %v", ports, err)
		}
		return int(ports[0].Local), func() { close(stop) }, nil
	case err := <-ended:
		return 0, nil, err
	case <-time.After(30 * time.Second):
		close(stop)
		return 0, nil, fmt.Errorf("port-forward through %s neither forwarded nor failed in 30 s", u)
	}
}

// streamExec runs the exec at u over SPDY, as kubectl exec did before
// websockets and as any client of nodes/proxy does, and returns stdout.
func streamExec(ctx context.Context, config *rest.Config, u *url.URL) (string, error) {
	executor, err := remotecommand.NewSPDYExecutor(config, http.MethodPost, u)
	if err != nil {
		return "", err
	}
	var stdout bytes.Buffer
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout})
	return stdout.String(), err
}

// kubeletConfig is a client of a kubelet's port with token. The kubelet's
// serving certificate is its own self-signed one, as kubeadm leaves it.
func kubeletConfig(token string) *rest.Config {
	return &rest.Config{BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
}

// nodeKubeletURL is the node's kubelet endpoint, https://<InternalIP>:<port>.
// theNode is the admin's client of lu, which runs one node, that node's
// name and its kubelet's URL.
func theNode(t *testing.T, lu *localUp) (admin kubernetes.Interface, node string, kubelet *url.URL) {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", lu.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin = kubernetes.NewForConfigOrDie(config)
	nodes, err := admin.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 1 {
		t.Fatalf("nodes: %v, %v", nodes, err)
	}
	return admin, nodes.Items[0].Name, nodeKubeletURL(t, &nodes.Items[0])
}

func nodeKubeletURL(t *testing.T, n *corev1.Node) *url.URL {
	t.Helper()
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return &url.URL{Scheme: "https", Host: fmt.Sprintf("%s:%d", a.Address, n.Status.DaemonEndpoints.KubeletEndpoint.Port)}
		}
	}
	t.Fatalf("node %s has no InternalIP", n.Name)
	return nil
}

// eventually retries f for up to a minute until it succeeds (an RBAC grant
// reaches the authorizer's cache, a reload applies) and returns its last
// output and error.
func eventually(ctx context.Context, f func() (string, error)) (string, error) {
	var out string
	var err error
	deadline := time.Now().Add(time.Minute)
	for {
		if out, err = f(); err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return out, err
		}
		time.Sleep(time.Second)
	}
}
