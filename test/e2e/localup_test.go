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

	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// The `make run` flow: local-up brings up the control plane with kubeadm's
// PKI and the example AdmissionConfiguration, kubectl-style clients work
// through admin.conf, controllers and scheduler act, a second run is
// refused, and Ctrl-C stops everything cleanly.
func TestLocalUp(t *testing.T) {
	localUp, err := framework.Binary("local-up")
	if err != nil {
		t.Fatal(err)
	}
	binDir := filepath.Dir(localUp)
	port, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	args := []string{
		"-dir", dir, "-bin", binDir, "-port", fmt.Sprint(port),
		"-admission-config", "../../examples/admission/admission-config.yaml",
		"-admission-plugins", "EventRateLimit,PodNodeSelector,PodTolerationRestriction",
	}
	cmd := exec.Command(localUp, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	began := time.Now()
	var output strings.Builder
	lines := bufio.NewScanner(stdout)
	for !strings.Contains(output.String(), "Ctrl-C stops it.") {
		if !lines.Scan() {
			t.Fatalf("local-up ended before it was ready:\n%s\nlogs: %s", output.String(), tailLogs(dir))
		}
		output.WriteString(lines.Text() + "\n")
	}
	t.Logf("local-up ready in %s", time.Since(began).Round(10*time.Millisecond))
	go func() { // keep draining, so local-up never blocks on a full pipe
		for lines.Scan() {
		}
	}()
	for _, want := range []string{"kubeconfig: " + filepath.Join(dir, "admin.conf"), "get namespaces", "create deployment web", "auth can-i"} {
		if !strings.Contains(output.String(), want) {
			t.Errorf("local-up's ready message lacks %q:\n%s", want, output.String())
		}
	}
	for _, file := range []string{"pki/ca.crt", "pki/apiserver.crt", "pki/front-proxy-ca.crt", "pki/front-proxy-client.crt", "pki/sa.key", "pki/sa.pub",
		"admin.conf", "controller-manager.conf", "scheduler.conf"} {
		if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
			t.Errorf("kubeadm layout: %v", err)
		}
	}

	config, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	c := kubernetes.NewForConfigOrDie(config)
	checkLocalControlPlane(t, c)

	second, err := exec.Command(localUp, args...).CombinedOutput()
	if !strings.Contains(string(second), "a local control plane is already running from "+dir) {
		t.Errorf("a second local-up was not refused (%v):\n%s", err, second)
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("local-up did not stop cleanly on Ctrl-C: %v\nlogs: %s", err, tailLogs(dir))
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("local-up still running two minutes after Ctrl-C")
	}
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
