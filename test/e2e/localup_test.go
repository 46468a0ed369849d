// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/turnstile-k8s/turnstile/internal/process"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// The `make run` flow: local-up brings up the control plane with kubeadm's
// PKI and the example AdmissionConfiguration, kubectl-style clients work
// through admin.conf, controllers and scheduler act, a second run is
// refused, and Ctrl-C stops everything cleanly.
func TestLocalUp(t *testing.T) {
	t.Parallel()
	lu := startLocalUp(t, "-admission-plugins", "EventRateLimit,PodNodeSelector,PodTolerationRestriction")
	t.Logf("local-up ready in %s", lu.took.Round(10*time.Millisecond))
	for _, want := range []string{"kubeconfig: " + lu.kubeconfig, "get namespaces", "create deployment web", "auth can-i"} {
		if !strings.Contains(lu.output, want) {
			t.Errorf("local-up's ready message lacks %q:\n%s", want, lu.output)
		}
	}
	for _, file := range []string{"pki/ca.crt", "pki/apiserver.crt", "pki/front-proxy-ca.crt", "pki/front-proxy-client.crt", "pki/sa.key", "pki/sa.pub",
		"admin.conf", "controller-manager.conf", "scheduler.conf"} {
		if _, err := os.Stat(filepath.Join(lu.dir, file)); err != nil {
			t.Errorf("kubeadm layout: %v", err)
		}
	}

	config, err := clientcmd.BuildConfigFromFlags("", lu.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c := kubernetes.NewForConfigOrDie(config)
	checkLocalControlPlane(t, c)

	second, err := exec.Command(lu.cmd.Path, lu.cmd.Args[1:]...).CombinedOutput()
	if !strings.Contains(string(second), "a local control plane is already running from "+lu.dir) {
		t.Errorf("a second local-up was not refused (%v):\n%s", err, second)
	}
	checkControllerRestarted(t, c, lu)
	if rest := lu.interrupt(t); !strings.Contains(rest, "kube-controller-manager exited (signal: killed)") || !strings.Contains(rest, "restarting it") {
		t.Errorf("local-up did not say it restarted kube-controller-manager:\n%s", rest)
	}
}

// checkControllerRestarted kills kube-controller-manager, as it exits when
// it loses its leader lease on a loaded machine, and checks that local-up
// starts it again and the new one leads.
func checkControllerRestarted(t *testing.T, c kubernetes.Interface, lu *localUp) {
	t.Helper()
	ctx := context.Background()
	kubeconfig := "--kubeconfig=" + filepath.Join(lu.dir, "controller-manager.conf")
	pids := process.Matching(kubeconfig)
	if len(pids) != 1 {
		t.Fatalf("kube-controller-manager processes: %v, want one", pids)
	}
	lease, err := c.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, "kube-controller-manager", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		t.Fatalf("kube-controller-manager's lease: %v, %+v", err, lease)
	}
	// local-up restarts a controller that ran for 15 seconds (its
	// minUptime); one that exits sooner is broken, and the run ends. It
	// started before local-up said it was ready.
	time.Sleep(time.Until(lu.started.Add(lu.took + 16*time.Second)))
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		now, err := c.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, "kube-controller-manager", metav1.GetOptions{})
		if err != nil || now.Spec.HolderIdentity == nil {
			return false, nil
		}
		again := process.Matching(kubeconfig)
		return len(again) == 1 && again[0] != pids[0] && *now.Spec.HolderIdentity != *lease.Spec.HolderIdentity, nil
	})
	if err != nil {
		t.Fatalf("no new kube-controller-manager took the lease after the old one was killed: %v", err)
	}
}

// localUp is a test's running cmd/local-up.
type localUp struct {
	cmd                  *exec.Cmd
	dir, bin, kubeconfig string
	started              time.Time
	output               string        // what it printed up to its ready message
	took                 time.Duration // until the ready message
	rest                 chan string   // what it prints after its ready message
}

// startLocalUp starts local-up on free ports with the example
// AdmissionConfiguration and args, in a new state directory, and waits for
// its ready message. The directory's name is short, not t.TempDir's (which
// holds the test's name): the nodes' unix sockets live under it, and a
// socket's path has at most 107 bytes.
func startLocalUp(t *testing.T, args ...string) *localUp {
	t.Helper()
	binary, err := framework.Binary("local-up")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "local-up-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return launchLocalUp(t, localUpRun{dir: dir, bin: filepath.Dir(binary)}, args...)
}

// localUpRun is where a local-up runs from and as whom.
type localUpRun struct {
	dir, bin string
	// as runs local-up as another user; nil runs it as the test.
	as *syscall.Credential
}

// launchLocalUp starts bin's local-up on the state in dir on free ports
// with the example AdmissionConfiguration and args, and waits for its
// ready message.
func launchLocalUp(t *testing.T, run localUpRun, args ...string) *localUp {
	t.Helper()
	lu := &localUp{dir: run.dir, bin: run.bin, rest: make(chan string, 1)}
	lu.kubeconfig = filepath.Join(lu.dir, "admin.conf")
	free := freePorts(t, 3)
	lu.cmd = exec.Command(filepath.Join(run.bin, "local-up"), append([]string{"-dir", lu.dir, "-bin", lu.bin,
		"-port", free[0], "-controller-manager-port", free[1], "-scheduler-port", free[2],
		"-admission-config", "../../examples/admission/admission-config.yaml"}, args...)...)
	if run.as != nil {
		lu.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: run.as}
	}
	stdout, err := lu.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	lu.cmd.Stderr = lu.cmd.Stdout
	if err := lu.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if lu.cmd.ProcessState == nil {
			_ = lu.cmd.Process.Signal(os.Interrupt)
			_ = lu.cmd.Wait()
		}
	})
	began := time.Now()
	lu.started = began
	var output strings.Builder
	lines := bufio.NewScanner(stdout)
	for !strings.Contains(output.String(), "Ctrl-C stops it") {
		if !lines.Scan() {
			// The logs first: CI shows a failure's last lines, which must say why.
			t.Fatalf("logs: %s\nlocal-up ended before it was ready:\n%s", tailLogs(lu.dir), output.String())
		}
		output.WriteString(lines.Text() + "\n")
	}
	lu.output, lu.took = output.String(), time.Since(began)
	go func() { // keep draining, so local-up never blocks on a full pipe
		var b strings.Builder
		for lines.Scan() {
			b.WriteString(lines.Text() + "\n")
		}
		lu.rest <- b.String()
	}()
	return lu
}

// freePorts is n free ports, as flag values.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var free []string
	for range n {
		p, err := framework.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		free = append(free, fmt.Sprint(p))
	}
	return free
}

func (lu *localUp) kubectl(args ...string) (string, error) {
	return runKubectl(filepath.Join(lu.bin, "kubectl"), lu.kubeconfig, args...)
}

func (lu *localUp) mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	return mustRunKubectl(t, filepath.Join(lu.bin, "kubectl"), lu.kubeconfig, args...)
}

// runKubectl runs the kubectl at path with kubeconfig and returns its
// output, stdout and stderr together.
func runKubectl(path, kubeconfig string, args ...string) (string, error) {
	out, err := exec.Command(path, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// mustRunKubectl is runKubectl that stops t when kubectl fails.
func mustRunKubectl(t *testing.T, path, kubeconfig string, args ...string) string {
	t.Helper()
	out, err := runKubectl(path, kubeconfig, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// interrupt is Ctrl-C: local-up must stop cleanly within three minutes. It
// returns what local-up printed after its ready message.
func (lu *localUp) interrupt(t *testing.T) string {
	t.Helper()
	if err := lu.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- lu.cmd.Wait() }()
	select {
	case err := <-exited:
		tail := <-lu.rest
		if err != nil {
			t.Fatalf("local-up did not stop cleanly on Ctrl-C: %v\n%s\nlogs: %s", err, tail, tailLogs(lu.dir))
		}
		return tail
	case <-time.After(3 * time.Minute):
		t.Fatalf("local-up still running 3 minutes after Ctrl-C")
	}
	return ""
}

func checkLocalControlPlane(t *testing.T, c kubernetes.Interface) {
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		t.Fatalf("admin.conf cannot read namespaces: %v", err)
	}

	// kube-controller-manager turns a Deployment into a ReplicaSet and a Pod,
	// and the scheduler marks that Pod unschedulable: there are no nodes.
	ns := "team-a" // PodNodeSelector's inline configuration names this namespace
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:        ns,
		Annotations: map[string]string{"scheduler.alpha.kubernetes.io/node-selector": "team=a"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	if _, err := c.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx"}}},
			},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating deployment: %v", err)
	}
	var pod corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil || len(pods.Items) == 0 {
			return false, err
		}
		pod = pods.Items[0]
		return slices.ContainsFunc(pod.Status.Conditions, func(cond corev1.PodCondition) bool {
			return cond.Type == corev1.PodScheduled && cond.Reason == corev1.PodReasonUnschedulable
		}), nil
	})
	if err != nil {
		t.Fatalf("no pod of the deployment was marked unschedulable by the scheduler: %v (last pod: %+v)", err, pod.Status)
	}
	if pod.Status.Phase != corev1.PodPending {
		t.Errorf("pod phase %s, want Pending", pod.Status.Phase)
	}
	if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return strings.HasPrefix(v.Name, "kube-api-access-") }) {
		t.Errorf("pod has no service account token volume: %+v", pod.Spec.Volumes)
	}
	// PodNodeSelector applied the namespace's selector, and its inline
	// configuration limits team-a's pods to selecting team=a only.
	// PodTolerationRestriction, configured through path:, added its default.
	if pod.Spec.NodeSelector["team"] != "a" {
		t.Errorf("PodNodeSelector did not apply the namespace's team=a: %v", pod.Spec.NodeSelector)
	}
	ssd := pausePod("ssd", "")
	ssd.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	_, err = c.CoreV1().Pods(ns).Create(ctx, ssd, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "conflict with its namespace whitelist") {
		t.Errorf("pod selecting disk=ssd in team-a: got %v, want Forbidden by the configured whitelist", err)
	}
	if !slices.ContainsFunc(pod.Spec.Tolerations, func(tol corev1.Toleration) bool { return tol.Key == "turnstile.dev/local" }) {
		t.Errorf("PodTolerationRestriction did not add its default toleration: %+v", pod.Spec.Tolerations)
	}
	// ResourceQuota, configured inline, makes LoadBalancer Services need a quota.
	_, err = c.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "lb"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "services.loadbalancers") {
		t.Errorf("LoadBalancer Service without a quota: got %v, want Forbidden naming services.loadbalancers", err)
	}

	// RBAC answers as bootstrapped: a default service account may not create pods.
	review, err := c.AuthorizationV1().SubjectAccessReviews().Create(ctx, sarFor("system:serviceaccount:default:default", "create", "pods"), metav1.CreateOptions{})
	if err != nil || review.Status.Allowed {
		t.Errorf("default service account allowed to create pods (err %v)", err)
	}

	// Deleting a namespace completes: the namespace controller runs.
	if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("namespace %s was not deleted within a minute", ns)
	}
}

func tailLogs(dir string) string {
	var out strings.Builder
	for _, name := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		data, _ := os.ReadFile(filepath.Join(dir, "logs", name+".log"))
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		out.WriteString("\n--- " + name + " ---\n" + strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
	return out.String()
}

func sarFor(user, verb, resource string) *authorizationv1.SubjectAccessReview {
	return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               user,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: verb, Resource: resource},
	}}
}

// local-up -upstream, the baseline of `make conformance PROFILE=upstream`:
// vanilla kube-apiserver on etcd as a process of its own, without an
// AdmissionConfiguration. It serves upstream's APIs only, its controllers
// run, and Ctrl-C stops etcd too, after the apiserver.
func TestLocalUpUpstream(t *testing.T) {
	t.Parallel()
	lu := startLocalUp(t, "-upstream", "-admission-config", "")
	if !strings.Contains(lu.output, "Vanilla upstream control plane is ready") || !strings.Contains(lu.output, "with etcd on http://127.0.0.1:") {
		t.Errorf("local-up's ready message does not name vanilla upstream and its etcd:\n%s", lu.output)
	}
	config, err := clientcmd.BuildConfigFromFlags("", lu.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c := kubernetes.NewForConfigOrDie(config)
	ctx := context.Background()
	if _, err := c.Discovery().ServerResourcesForGroupVersion("policy/v1beta1"); !apierrors.IsNotFound(err) {
		t.Errorf("policy/v1beta1 discovery: %v, want NotFound from vanilla upstream", err)
	}
	// kube-controller-manager runs against it: a namespace gets its
	// default service account.
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "upstream"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().ServiceAccounts("upstream").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Errorf("no default service account in a new namespace: %v", err)
	}
	etcd := process.Matching("--data-dir=" + filepath.Join(lu.dir, "etcd"))
	if len(etcd) != 1 {
		t.Fatalf("etcd processes with this run's data directory: %v, want one", etcd)
	}
	lu.interrupt(t)
	if left := process.Matching("--data-dir=" + filepath.Join(lu.dir, "etcd")); len(left) > 0 {
		t.Errorf("etcd still running after Ctrl-C: pids %v", left)
	}
}
