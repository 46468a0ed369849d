// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/internal/localnode"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

var (
	agnhost = oci.AgnhostImage
	busybox = oci.BusyBoxImage
)

// `make run NODES=2` as a user runs it: two real nodes with the locally
// built images; a Deployment's pods run; kubectl exec, logs and
// port-forward work; a ClusterIP Service answers a pod through kube-proxy
// under its CoreDNS name; nothing gets out; the restored exec plugins
// refuse a real exec and attach into a privileged pod and let a plain one
// through; and Ctrl-C leaves the host as it was. `make test-node` runs it
// as root with the images built.
func TestLocalNodes(t *testing.T) {
	before := hostSnapshot(t)
	lu := startLocalNodes(t, 2, "-admission-plugins", "DenyEscalatingExec,PodSecurityPolicy",
		"-pod-security-policies", "../../examples/podsecuritypolicy")
	binDir, kubeconfig, kubectl := lu.bin, lu.kubeconfig, lu.kubectl
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(config)
	ctx := t.Context()

	t.Run("two nodes are Ready, untainted", func(t *testing.T) {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes.Items) != 2 {
			t.Fatalf("want 2 nodes, got %d", len(nodes.Items))
		}
		for _, n := range nodes.Items {
			if !nodeReady(&n) || len(n.Spec.Taints) > 0 || n.Spec.PodCIDR == "" {
				t.Errorf("node %s: ready %v, taints %v, pod CIDR %q", n.Name, nodeReady(&n), n.Spec.Taints, n.Spec.PodCIDR)
			}
		}
	})

	// The example policies give everyone restricted, which runs nothing as
	// root; the default namespace's service accounts get baseline, as the
	// examples' documentation grants it per namespace.
	lu.mustKubectl(t, "create", "rolebinding", "psp-baseline", "--clusterrole=psp:baseline", "--group=system:serviceaccounts:default")
	lu.mustKubectl(t, "create", "deployment", "web", "--image="+agnhost, "--replicas=2", "--", "/agnhost", "netexec", "--http-port=8080")
	lu.mustKubectl(t, "expose", "deployment", "web", "--port=80", "--target-port=8080")
	lu.mustKubectl(t, "run", "client", "--image="+busybox, "--restart=Never", "--", "sleep", "3600")
	lu.mustKubectl(t, "wait", "--for=condition=Available", "deployment/web", "--timeout=3m")
	lu.mustKubectl(t, "wait", "--for=condition=Ready", "pod/client", "--timeout=3m")
	pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(pods.Items) != 2 {
		t.Fatalf("web pods: %v, %v", pods, err)
	}
	web := pods.Items[0].Name
	names := []string{pods.Items[0].Name, pods.Items[1].Name}

	t.Run("pods pulled nothing", func(t *testing.T) { checkNothingPulled(ctx, t, client) })

	t.Run("pulls come from the nodes' registry", func(t *testing.T) {
		lu.mustKubectl(t, "run", "pulled", "--image="+busybox, "--image-pull-policy=Always", "--restart=Never", "--", "sleep", "3600")
		lu.mustKubectl(t, "wait", "--for=condition=Ready", "pod/pulled", "--timeout=2m")
		events, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=pulled,reason=Pulled"})
		if err != nil || len(events.Items) == 0 || !strings.Contains(events.Items[0].Message, "Successfully pulled") {
			t.Errorf("no Pulled event for pod pulled: %v %v", events, err)
		}
		// A name the tarballs lack is not found, and nothing else is asked.
		missing := strings.Split(busybox, ":")[0] + ":0.0-not-built"
		lu.mustKubectl(t, "run", "missing", "--image="+missing, "--restart=Never", "--", "sleep", "3600")
		err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			events, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=missing,reason=Failed"})
			if err != nil {
				return false, err
			}
			for _, e := range events.Items {
				if strings.Contains(e.Message, "not found") {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Errorf("pulling %s did not fail as not found: %v", missing, err)
		}
		// A registry no tarball names has no mirror: containerd goes to
		// it, and the guard lets nothing out, so the pull fails.
		elsewhere := "registry.example.com/turnstile/not-served:1"
		lu.mustKubectl(t, "run", "elsewhere", "--image="+elsewhere, "--restart=Never", "--", "sleep", "3600")
		err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			events, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=elsewhere,reason=Failed"})
			return err == nil && len(events.Items) > 0, err
		})
		if err != nil {
			t.Errorf("pulling %s, from a registry off the machine, did not fail: %v", elsewhere, err)
		}
		if pod, err := client.CoreV1().Pods("default").Get(ctx, "elsewhere", metav1.GetOptions{}); err == nil && pod.Status.Phase == corev1.PodRunning {
			t.Errorf("pod elsewhere runs %s, which no tarball holds", elsewhere)
		}
		lu.mustKubectl(t, "delete", "pod", "pulled", "missing", "elsewhere", "--wait=false")
	})

	t.Run("exec", func(t *testing.T) {
		if out := lu.mustKubectl(t, "exec", web, "--", "hostname"); strings.TrimSpace(out) != web {
			t.Errorf("kubectl exec hostname = %q, want %q", out, web)
		}
	})

	t.Run("logs", func(t *testing.T) {
		if out := lu.mustKubectl(t, "logs", web); !strings.Contains(out, "Started HTTP server on port 8080") {
			t.Errorf("kubectl logs %s lacks netexec's start line:\n%s", web, out)
		}
	})

	t.Run("port-forward", func(t *testing.T) {
		port, err := framework.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		pf := exec.Command(filepath.Join(binDir, "kubectl"), "--kubeconfig", kubeconfig, "port-forward", "pod/"+web, fmt.Sprintf("%d:8080", port))
		if err := pf.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = pf.Process.Kill(); _ = pf.Wait() }()
		if body := httpGet(ctx, t, fmt.Sprintf("http://127.0.0.1:%d/hostname", port)); body != web {
			t.Errorf("through kubectl port-forward: %q, want %q", body, web)
		}
	})

	t.Run("a Service answers by its DNS name through kube-proxy", func(t *testing.T) {
		svc, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		lookup := lu.mustKubectl(t, "exec", "client", "--", "nslookup", "web.default.svc.cluster.local")
		if !strings.Contains(lookup, svc.Spec.ClusterIP) {
			t.Errorf("nslookup web.default.svc.cluster.local does not give %s:\n%s", svc.Spec.ClusterIP, lookup)
		}
		// Each answer comes from one of the Deployment's pods; with two
		// backends, some request reaches each within a few tries.
		seen := map[string]bool{}
		for i := 0; i < 40 && len(seen) < 2; i++ {
			out := lu.mustKubectl(t, "exec", "client", "--", "wget", "-q", "-T", "5", "-O", "-", "http://web/hostname")
			if !slices.Contains(names, out) {
				t.Fatalf("http://web/hostname answered %q, not one of %v", out, names)
			}
			seen[out] = true
		}
		if len(seen) < 2 {
			t.Errorf("the Service reached only %v", seen)
		}
	})

	t.Run("nothing leaves the machine", func(t *testing.T) {
		// 198.51.100.1 (TEST-NET-2) stands for any outside address: the
		// node has no route to it and the guard drops it.
		out, err := kubectl("exec", "client", "--", "wget", "-q", "-T", "3", "-O", "-", "http://198.51.100.1/")
		if err == nil {
			t.Errorf("a pod reached 198.51.100.1: %s", out)
		}
		out, err = kubectl("exec", "client", "--", "nslookup", "example.com")
		if err == nil && !strings.Contains(out, "NXDOMAIN") && !strings.Contains(out, "can't find") {
			t.Errorf("CoreDNS resolved a name outside the cluster:\n%s", out)
		}
	})

	t.Run("DenyEscalatingExec against real pods", func(t *testing.T) {
		privileged := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "privileged"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "c", Image: busybox, Command: []string{"sleep", "3600"}, Stdin: true,
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
			}}},
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, privileged, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		lu.mustKubectl(t, "wait", "--for=condition=Ready", "pod/privileged", "--timeout=2m")
		want := `pods "privileged" is forbidden: cannot exec into or attach to a privileged container`
		for _, args := range [][]string{{"exec", "privileged", "--", "true"}, {"attach", "privileged", "-i=false"}} {
			out, err := kubectl(args...)
			if err == nil || !strings.Contains(out, want) {
				t.Errorf("kubectl %s: %v\n%s\nwant the refusal %q", strings.Join(args, " "), err, out, want)
			}
		}
		if out := lu.mustKubectl(t, "exec", "client", "--", "echo", "through"); strings.TrimSpace(out) != "through" {
			t.Errorf("exec into a plain pod gave %q", out)
		}
	})

	t.Run("PodSecurityPolicy's settings are what the container runs with", func(t *testing.T) {
		policy := `apiVersion: policy/v1beta1
kind: PodSecurityPolicy
metadata:
  name: e2e-ranges
  annotations:
    seccomp.security.alpha.kubernetes.io/allowedProfileNames: runtime/default
    seccomp.security.alpha.kubernetes.io/defaultProfileName: runtime/default
spec:
  allowPrivilegeEscalation: false
  requiredDropCapabilities: [ALL]
  volumes: [projected, secret, configMap, emptyDir]
  runAsUser: {rule: MustRunAs, ranges: [{min: 2000, max: 2999}]}
  runAsGroup: {rule: MustRunAs, ranges: [{min: 3000, max: 3999}]}
  supplementalGroups: {rule: MustRunAs, ranges: [{min: 4000, max: 4999}]}
  fsGroup: {rule: MustRunAs, ranges: [{min: 5000, max: 5999}]}
  seLinux: {rule: RunAsAny}
---
apiVersion: v1
kind: Namespace
metadata: {name: psp-ranges}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: e2e-ranges, namespace: psp-ranges}
rules:
- {apiGroups: [policy], resources: [podsecuritypolicies], resourceNames: [e2e-ranges], verbs: [use]}
- {apiGroups: [""], resources: [pods], verbs: [create, get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: e2e-ranges, namespace: psp-ranges}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: e2e-ranges}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: e2e-psp-ranges}]
`
		apply := exec.Command(filepath.Join(binDir, "kubectl"), "--kubeconfig", kubeconfig, "apply", "-f", "-")
		apply.Stdin = strings.NewReader(policy)
		if out, err := apply.CombinedOutput(); err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
		// The requester may use e2e-ranges and, through system:authenticated,
		// the example's restricted; both mutate, and e2e-ranges comes first
		// by name.
		lu.mustKubectl(t, "--as=e2e-psp-ranges", "-n", "psp-ranges", "run", "ranged", "--image="+busybox, "--restart=Never", "--", "sleep", "3600")
		lu.mustKubectl(t, "-n", "psp-ranges", "wait", "--for=condition=Ready", "pod/ranged", "--timeout=2m")
		pod, err := client.CoreV1().Pods("psp-ranges").Get(ctx, "ranged", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := pod.Annotations["kubernetes.io/psp"]; got != "e2e-ranges" {
			t.Fatalf("pod admitted by policy %q, want e2e-ranges", got)
		}
		status := lu.mustKubectl(t, "-n", "psp-ranges", "exec", "ranged", "--", "cat", "/proc/self/status")
		fields := map[string]string{}
		for _, line := range strings.Split(status, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				fields[k] = strings.Join(strings.Fields(v), " ")
			}
		}
		for key, want := range map[string]string{
			"Uid":        "2000 2000 2000 2000",
			"Gid":        "3000 3000 3000 3000",
			"NoNewPrivs": "1",
			"Seccomp":    "2", // filter mode: the runtime's default profile
			"CapEff":     "0000000000000000",
		} {
			if got := fields[key]; got != want {
				t.Errorf("/proc/self/status %s: %q, want %q", key, fields[key], want)
			}
		}
		// The supplemental group and fsGroup the policy chose, next to the
		// primary group (which runtimes may or may not list again).
		groups := strings.Fields(fields["Groups"])
		for _, g := range groups {
			if g != "3000" && g != "4000" && g != "5000" {
				t.Errorf("/proc/self/status Groups: %v has %s, which the policy did not give", groups, g)
			}
		}
		if !slices.Contains(groups, "4000") || !slices.Contains(groups, "5000") {
			t.Errorf("/proc/self/status Groups: %v, want 4000 (supplemental) and 5000 (fsGroup)", groups)
		}
		if t.Failed() {
			t.Logf("/proc/self/status:\n%s", status)
		}
	})

	lu.interrupt(t)
	if left := localnode.Leftovers(lu.cmd.Process.Pid, lu.dir); len(left) > 0 {
		t.Errorf("Ctrl-C left behind:\n  %s", strings.Join(left, "\n  "))
	}
	compareHost(t, before, hostSnapshot(t))
}

// startLocalNodes starts local-up with n nodes (see startLocalUp).
// Without root or the images it skips the test.
func startLocalNodes(t *testing.T, n int, args ...string) *localUp {
	t.Helper()
	images := os.Getenv("TURNSTILE_NODE_IMAGES")
	if images == "" || os.Geteuid() != 0 {
		t.Skip("needs root and TURNSTILE_NODE_IMAGES (the image tarballs); `make test-node` runs it")
	}
	lu := startLocalUp(t, append([]string{"-images", images, "-nodes", fmt.Sprint(n)}, args...)...)
	t.Logf("local-up with %d node(s) ready in %s", n, lu.took.Round(100*time.Millisecond))
	return lu
}

// compareHost reports every part of the host that differs.
func compareHost(t *testing.T, before, after map[string]string) {
	t.Helper()
	for what, b := range before {
		if a := after[what]; a != b {
			t.Errorf("the host's %s changed:\nbefore:\n%s\nafter:\n%s", what, b, a)
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// checkNothingPulled fails t for every Pulling event: the nodes' images
// are imported, and a pull attempt is a name or a policy to fix.
func checkNothingPulled(ctx context.Context, t *testing.T, client kubernetes.Interface) {
	t.Helper()
	events, err := client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=Pulling"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		t.Errorf("a pull was attempted: %s: %s", e.InvolvedObject.Name, e.Message)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// hostSnapshot is what an operator would compare to see whether a run
// left anything on the host: interfaces, routes, nftables and iptables
// rules (without counters), network namespaces, mounts and top-level
// cgroups.
func hostSnapshot(t *testing.T) map[string]string {
	t.Helper()
	counters := regexp.MustCompile(`\[\d+:\d+\]|packets \d+ bytes \d+`)
	runOut := func(name string, args ...string) string {
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			return fmt.Sprintf("(%s: %v)", name, err)
		}
		return counters.ReplaceAllString(string(out), "")
	}
	snap := map[string]string{
		"interfaces":         runOut("sh", "-c", "ip -o link show | cut -d: -f2 | sort"),
		"routes":             runOut("ip", "route", "show", "table", "all"),
		"nftables ruleset":   runOut("nft", "list", "ruleset"),
		"iptables rules":     runOut("sh", "-c", "iptables-save | grep -v '^#'"),
		"network namespaces": runOut("ls", "/run/netns"),
		"mounts":             runOut("sh", "-c", "cut -d' ' -f5 /proc/self/mountinfo | sort"),
		"cgroups":            runOut("sh", "-c", "ls /sys/fs/cgroup/*/ -d; ls /sys/fs/cgroup/memory/"),
		"ip_forward":         runOut("cat", "/proc/sys/net/ipv4/ip_forward"),
	}
	return snap
}

// A run killed outright (SIGKILL: no clean-up of its own) leaves shims,
// containers, mounts and namespaces behind; `make clean-local` (local-up
// -clean) removes them all, and the host is as it was.
func TestLocalNodesKilledRun(t *testing.T) {
	before := hostSnapshot(t)
	lu := startLocalNodes(t, 1)
	cmd, dir, localUp := lu.cmd, lu.dir, filepath.Join(lu.bin, "local-up")
	lu.mustKubectl(t, "run", "sleeper", "--image="+busybox, "--restart=Never", "--", "sleep", "3600")
	lu.mustKubectl(t, "wait", "--for=condition=Ready", "pod/sleeper", "--timeout=3m")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if left := localnode.Leftovers(cmd.Process.Pid, dir); len(left) == 0 {
		t.Fatal("a killed run left nothing behind: this test shows nothing")
	}
	clean := exec.Command(localUp, "-dir", dir, "-clean")
	if out, err := clean.CombinedOutput(); err != nil {
		t.Fatalf("local-up -clean: %v\n%s", err, out)
	}
	if left := localnode.Leftovers(cmd.Process.Pid, dir); len(left) > 0 {
		t.Errorf("after local-up -clean, still there:\n  %s", strings.Join(left, "\n  "))
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("local-up -clean left %s: %v", dir, err)
	}
	compareHost(t, before, hostSnapshot(t))
}
