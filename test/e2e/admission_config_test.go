// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	imagepolicyv1alpha1 "k8s.io/api/imagepolicy/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// The tests of --admission-control-config-file and of the admission flags.
// Their inputs are under testdata/admission-config/: v1/ and v1alpha1/
// configure every configurable plugin, legacy/ is the legacy unversioned
// file, malformed/ holds one broken configuration per directory.

// admissionConfigBackend is the HTTPS server that the servers' configuration
// points at: ImagePolicyWebhook's backend (it denies images whose name has
// "forbidden") and an admission webhook that records the bearer token each
// request carries, which comes from the kubeConfigFile of the webhook plugins'
// configuration.
type admissionConfigBackend struct {
	hostPort string
	caPEM    []byte

	mu     sync.Mutex
	tokens map[string][]string // path -> tokens seen
	images []string            // images ImagePolicyWebhook asked about
}

func startAdmissionConfigBackend(t *testing.T) *admissionConfigBackend {
	certPEM, keyPEM, err := pki.Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "admission-config-backend"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	b := &admissionConfigBackend{caPEM: pki.CAPEM, tokens: map[string][]string{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(b.serve))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	b.hostPort = srv.Listener.Addr().String()
	return b
}

func (b *admissionConfigBackend) serve(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.tokens[r.URL.Path] = append(b.tokens[r.URL.Path], strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	b.mu.Unlock()
	var response any
	switch r.URL.Path {
	case "/imagepolicy":
		var review imagepolicyv1alpha1.ImageReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		review.Status.Allowed = true
		for _, c := range review.Spec.Containers {
			b.mu.Lock()
			b.images = append(b.images, c.Image)
			b.mu.Unlock()
			if strings.Contains(c.Image, "forbidden") {
				review.Status = imagepolicyv1alpha1.ImageReviewStatus{Allowed: false, Reason: "image " + c.Image + " is not allowed"}
			}
		}
		response = review
	case "/mutate", "/validate":
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		response = review
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(response)
}

func (b *admissionConfigBackend) sawToken(path, token string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Contains(b.tokens[path], token)
}

func (b *admissionConfigBackend) seen() map[string][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := map[string][]string{}
	for path, tokens := range b.tokens {
		seen[path] = slices.Compact(slices.Sorted(slices.Values(tokens)))
	}
	return seen
}

func (b *admissionConfigBackend) sawImage(image string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Contains(b.images, image)
}

// copyAdmissionConfig copies testdata/admission-config/<name> to dir,
// replacing ${DIR} with dir, ${BACKEND} with the backend's host:port and
// ${CA} with the test CA's file, and returns the configuration file's path.
func copyAdmissionConfig(t *testing.T, name, dir string, b *admissionConfigBackend) string {
	t.Helper()
	src := filepath.Join("testdata", "admission-config", name)
	backend := "127.0.0.1:1" // nothing listens: the malformed cases exit before calling it
	if b != nil {
		backend = b.hostPort
	}
	replacer := strings.NewReplacer("${DIR}", dir, "${BACKEND}", backend, "${CA}", filepath.Join(pki.Dir, "ca.crt"))
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
			return err
		}
		return os.WriteFile(out, []byte(replacer.Replace(string(data))), 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "admission.yaml")
}

// Every configurable plugin is enabled and configured, some by path and some
// inline, in apiserver.config.k8s.io/v1 and again in the deprecated
// apiserver.k8s.io/v1alpha1 with the other way of each; the server comes up,
// and each plugin shows that it read its configuration. The admission policy
// plugins' one option, staticManifestsDir, needs an alpha feature gate, so
// for them coming up with a configuration is all there is to see.
func TestAdmissionConfigEveryPlugin(t *testing.T) {
	t.Parallel() // its own apiserver: see "Running in parallel" in README.md
	for _, version := range []string{"v1", "v1alpha1"} {
		t.Run(version, func(t *testing.T) {
			backend := startAdmissionConfigBackend(t)
			config := copyAdmissionConfig(t, version, filepath.Join(root, "admission-config-"+version+"-files"), backend)
			_, c := startServer(t, "admission-config-"+version,
				"--enable-admission-plugins=EventRateLimit,ImagePolicyWebhook,PodNodeSelector,PodTolerationRestriction,"+
					"SecurityContextDeny,DenyEscalatingExec,DenyExecOnPrivileged",
				"--admission-control-config-file="+config)
			testAdmissionConfigEffects(t, c, backend, version)
		})
	}
}

// testAdmissionConfigEffects checks one observable effect of each plugin's
// configuration in testdata/admission-config/<version>.
func testAdmissionConfigEffects(t *testing.T, c kubernetes.Interface, backend *admissionConfigBackend, version string) {
	ctx := context.Background()
	ns := createNamespace(t, c)
	pod, err := c.CoreV1().Pods(ns).Create(ctx, pausePod("plain", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a plain pod: %v", err)
	}

	t.Run("PodNodeSelector", func(t *testing.T) {
		// clusterDefaultNodeSelector, legacy unversioned format (v1 by path, v1alpha1 inline).
		if got := pod.Spec.NodeSelector["turnstile.dev/pool"]; got != version {
			t.Errorf("nodeSelector %v, want turnstile.dev/pool=%s from clusterDefaultNodeSelector", pod.Spec.NodeSelector, version)
		}
	})
	t.Run("PodTolerationRestriction", func(t *testing.T) {
		if !slices.ContainsFunc(pod.Spec.Tolerations, func(tol corev1.Toleration) bool {
			return tol.Key == "turnstile.dev/loader" && tol.Effect == corev1.TaintEffectNoSchedule
		}) {
			t.Errorf("tolerations %+v lack the configured default turnstile.dev/loader", pod.Spec.Tolerations)
		}
	})
	t.Run("ImagePolicyWebhook", func(t *testing.T) {
		// The kubeconfig named by imagePolicy.kubeConfigFile leads to the backend.
		if !backend.sawImage("registry.k8s.io/pause:3.10") || !backend.sawToken("/imagepolicy", "imagepolicy-token") {
			t.Errorf("the image policy backend was not asked about the plain pod with the kubeconfig's token")
		}
		bad := pausePod("forbidden-image", "")
		bad.Spec.Containers[0].Image = "registry.example/forbidden:" + version
		_, err := c.CoreV1().Pods(ns).Create(ctx, bad, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "image registry.example/forbidden:"+version+" is not allowed") {
			t.Errorf("pod with a forbidden image: %v, want 403 from the backend", err)
		}
	})
	t.Run("PodSecurity", func(t *testing.T) {
		// defaults.enforce: baseline (the default is privileged).
		p := pausePod("privileged", "")
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		_, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "baseline:latest"`) {
			t.Errorf("privileged pod: %v, want 403 from PodSecurity baseline", err)
		}
	})
	t.Run("SecurityContextDeny", func(t *testing.T) {
		// coverEphemeralContainers: upstream's plugin never checked them.
		patch := `{"spec":{"ephemeralContainers":[{"name":"debug","image":"busybox","securityContext":{"runAsUser":1000}}]}}`
		_, err := c.CoreV1().Pods(ns).Patch(ctx, "plain", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "ephemeralcontainers")
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `ephemeral container "debug": SecurityContext.RunAsUser is forbidden`) {
			t.Errorf("ephemeral container with runAsUser: %v, want 403 (coverEphemeralContainers)", err)
		}
	})
	t.Run("ResourceQuota", func(t *testing.T) {
		// limitedResources: a LoadBalancer Service needs a quota that covers it.
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "lb"},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}},
		}
		_, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "services.loadbalancers") {
			t.Errorf("LoadBalancer Service without quota: %v, want 403 naming services.loadbalancers", err)
		}
	})
	t.Run("EventRateLimit", func(t *testing.T) {
		// A namespace bucket of 3 and 1/s: ten events at once cannot all pass.
		if limited := createAdmissionConfigEvents(t, c, ns, 10); limited == 0 {
			t.Errorf("ten events at once: none got 429, want the namespace limit (burst 3, 1 qps)")
		}
	})
	t.Run("DenyEscalatingExec and DenyExecOnPrivileged", func(t *testing.T) {
		// The pods run in a namespace that PodSecurity exempts.
		privNS := "loader-privileged"
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: privNS}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.CoreV1().Namespaces().Delete(context.Background(), privNS, metav1.DeleteOptions{}) })
		if _, err := c.CoreV1().ServiceAccounts(privNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		mixed := pausePod("mixed", "")
		mixed.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		mixed.Spec.Containers = append(mixed.Spec.Containers, corev1.Container{Name: "b", Image: "busybox"})
		hostPID := pausePod("host-pid", "")
		hostPID.Spec.HostPID = true
		for _, p := range []*corev1.Pod{mixed, hostPID} {
			if _, err := c.CoreV1().Pods(privNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating pod %s: %v", p.Name, err)
			}
		}
		// Only DenyEscalatingExec looks at host namespaces.
		expectConnect(t, c, privNS, "host-pid", "exec", "pause", hostPIDMsg)
		expectConnect(t, c, privNS, "mixed", "exec", "pause", privilegedMsg)
		if version == "v1" {
			// perContainer in both plugins' configuration: the plain
			// container of a pod with a privileged one can be reached.
			expectConnect(t, c, privNS, "mixed", "exec", "b", "")
		} else {
			// perContainer in DenyEscalatingExec's only: DenyExecOnPrivileged
			// still judges the whole pod.
			expectConnect(t, c, privNS, "mixed", "exec", "b", privilegedMsg)
		}
	})
	t.Run("MutatingAdmissionWebhook and ValidatingAdmissionWebhook", func(t *testing.T) {
		// kubeConfigFile gives the token the apiserver presents to webhooks.
		registerAdmissionConfigWebhooks(t, c, backend, version)
		want := map[string]string{"/mutate": version + "-mutating-token", "/validate": version + "-validating-token"}
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "hooked-", Labels: map[string]string{"loader-webhook": version}}}
			if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				return false, err
			}
			return backend.sawToken("/mutate", want["/mutate"]) && backend.sawToken("/validate", want["/validate"]), nil
		})
		if err != nil {
			t.Errorf("webhooks did not receive the kubeconfigs' tokens %v: %v (seen: %v)", want, err, backend.seen())
		}
	})
}

// createAdmissionConfigEvents creates n events in ns as fast as it can and
// returns how many were refused with 429.
func createAdmissionConfigEvents(t *testing.T, c kubernetes.Interface, ns string, n int) int {
	t.Helper()
	limited := 0
	for range n {
		event := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{GenerateName: "burst-"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "plain"},
			Reason:         "Burst", Message: "one of many", Type: corev1.EventTypeNormal,
		}
		_, err := c.CoreV1().Events(ns).Create(context.Background(), event, metav1.CreateOptions{})
		switch {
		case apierrors.IsTooManyRequests(err):
			limited++
		case err != nil:
			t.Fatalf("creating an event: %v", err)
		}
	}
	return limited
}

// registerAdmissionConfigWebhooks points a mutating and a validating webhook
// for ConfigMaps labelled loader-webhook=<version> at the backend.
func registerAdmissionConfigWebhooks(t *testing.T, c kubernetes.Interface, b *admissionConfigBackend, version string) {
	t.Helper()
	ctx := context.Background()
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"loader-webhook": version}}
	client := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://" + b.hostPort + path), CABundle: b.caPEM}
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "loader-" + version},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mutate.loader.turnstile.dev", ClientConfig: client("/mutate"), Rules: rules, ObjectSelector: selector,
			SideEffects: &none, FailurePolicy: &fail, AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "loader-" + version},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "validate.loader.turnstile.dev", ClientConfig: client("/validate"), Rules: rules, ObjectSelector: selector,
			SideEffects: &none, FailurePolicy: &fail, AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// The legacy unversioned file as the whole --admission-control-config-file,
// with the deprecated --admission-control naming the plugins that run:
// the two legacy plugins read the file, and every plugin not named is off.
func TestAdmissionConfigLegacyFileAndAdmissionControlFlag(t *testing.T) {
	t.Parallel() // its own apiserver: see "Running in parallel" in README.md
	ctx := context.Background()
	backend := startAdmissionConfigBackend(t)
	config := copyAdmissionConfig(t, "legacy", filepath.Join(root, "admission-config-legacy-files"), backend)
	_, c := startServer(t, "admission-config-legacy",
		"--admission-control=NamespaceLifecycle,PodNodeSelector,ImagePolicyWebhook",
		"--admission-control-config-file="+config)
	ns := createNamespace(t, c)

	pod, err := c.CoreV1().Pods(ns).Create(ctx, pausePod("plain", "ghost"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pod with a service account that does not exist: %v, want admitted (ServiceAccount is off)", err)
	}
	if got := pod.Spec.NodeSelector["turnstile.dev/pool"]; got != "legacy" {
		t.Errorf("PodNodeSelector: nodeSelector %v, want the legacy file's clusterDefaultNodeSelector turnstile.dev/pool=legacy", pod.Spec.NodeSelector)
	}
	if !backend.sawImage("registry.k8s.io/pause:3.10") {
		t.Errorf("ImagePolicyWebhook: the backend of the legacy file's kubeconfig was not asked")
	}
	bad := pausePod("forbidden-image", "")
	bad.Spec.Containers[0].Image = "registry.example/forbidden:legacy"
	if _, err := c.CoreV1().Pods(ns).Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("ImagePolicyWebhook: pod with a forbidden image: %v, want 403", err)
	}
	if _, err := c.CoreV1().Pods("no-such-namespace").Create(ctx, pausePod("orphan", ""), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("NamespaceLifecycle: pod in a missing namespace: %v, want 404", err)
	}

	// Everything --admission-control does not name is off, default-on
	// plugins included.
	if slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return strings.HasPrefix(v.Name, "kube-api-access-") }) {
		t.Errorf("ServiceAccount is on: the pod got a token volume %+v", pod.Spec.Volumes)
	}
	if pod.Spec.Priority != nil {
		t.Errorf("Priority is on: the pod got priority %d", *pod.Spec.Priority)
	}
	if len(pod.Spec.Tolerations) != 0 {
		t.Errorf("DefaultTolerationSeconds or PodTolerationRestriction is on: tolerations %+v", pod.Spec.Tolerations)
	}
	// What the other plugins would refuse: a namespace that PodSecurity
	// enforces baseline in, with a quota of no load balancers, and in it a
	// privileged pod that runs as a user in the host's PID namespace
	// (PodSecurity, SecurityContextDeny, DenyEscalatingExec) and a
	// LoadBalancer Service (ResourceQuota).
	if _, err := c.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"baseline"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-load-balancers"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceServicesLoadBalancers: resource.MustParse("0")}},
	}
	quota, err = c.CoreV1().ResourceQuotas(ns).Create(ctx, quota, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The quota controller would fill in the status; there is none here.
	quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{corev1.ResourceServicesLoadBalancers: resource.MustParse("0")}}
	if _, err := c.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, quota, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := pausePod("privileged-as-user", "")
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true), RunAsUser: ptr.To[int64](1000)}
	p.Spec.HostPID = true
	if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Errorf("a privileged pod with runAsUser and hostPID: %v, want admitted (PodSecurity and SecurityContextDeny are off)", err)
	}
	lb := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "lb"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}},
	}
	if _, err := c.CoreV1().Services(ns).Create(ctx, lb, metav1.CreateOptions{}); err != nil {
		t.Errorf("a LoadBalancer Service beyond the quota: %v, want admitted (ResourceQuota is off)", err)
	}
	expectConnect(t, c, ns, "privileged-as-user", "exec", "pause", "")
}

// --admission-control=NamespaceLifecycle,AlwaysDeny: AlwaysDeny refuses every
// write that NamespaceLifecycle lets through. The server shares the shared
// server's etcd prefix, which is bootstrapped already, so it becomes ready
// without writing anything.
func TestAdmissionControlFlagAlwaysDeny(t *testing.T) {
	t.Parallel() // its own apiserver: see "Running in parallel" in README.md
	ctx := context.Background()
	_, c := startServer(t, "admission-config-always-deny",
		"--etcd-prefix=/shared", "--admission-control=NamespaceLifecycle,AlwaysDeny")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "denied-"}}
	_, err := c.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "admission control is denying all modifications") {
		t.Errorf("creating a ConfigMap: %v, want 403 from AlwaysDeny", err)
	}
	if _, err := c.CoreV1().ConfigMaps("no-such-namespace").Create(ctx, cm, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("creating a ConfigMap in a missing namespace: %v, want 404 from NamespaceLifecycle", err)
	}
	if _, err := c.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("listing ConfigMaps: %v, want reads to pass", err)
	}
	// The shared server, on the same data, admits the same write.
	created, err := adminClient(t).CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("shared server: creating a ConfigMap: %v", err)
	}
	_ = adminClient(t).CoreV1().ConfigMaps("default").Delete(ctx, created.Name, metav1.DeleteOptions{})
}

// Both styles of flag at once, and unknown names among known ones, are
// refused with upstream's messages.
func TestAdmissionFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--admission-control=NamespaceLifecycle", "--enable-admission-plugins=AlwaysDeny"},
			"admission-control and enable-admission-plugins/disable-admission-plugins flags are mutually exclusive"},
		{[]string{"--admission-control=NamespaceLifecycle", "--disable-admission-plugins=ServiceAccount"},
			"admission-control and enable-admission-plugins/disable-admission-plugins flags are mutually exclusive"},
		{[]string{"--disable-admission-plugins=ServiceAccount,NoSuchPlugin"}, `disable-admission-plugins plugin "NoSuchPlugin" is unknown`},
		{[]string{"--enable-admission-plugins=EventRateLimit,eventratelimit"}, `enable-admission-plugins plugin "eventratelimit" is unknown`},
		{[]string{"--admission-control=NamespaceLifecycle,SecurityContextDenied"}, `admission-control plugin "SecurityContextDenied" is unknown`},
		{[]string{"--enable-admission-plugins=AlwaysDeny", "--disable-admission-plugins=AlwaysDeny"},
			"[AlwaysDeny] in enable-admission-plugins and disable-admission-plugins overlapped"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			out := runAdmissionConfigBinary(t, c.args...)
			if !strings.Contains(out, c.want) {
				t.Errorf("output lacks %q:\n%s", c.want, out)
			}
		})
	}
}

// Each malformed configuration stops the binary before it serves, with an
// error that names the file, the plugin and the field, and without a panic.
func TestAdmissionConfigRejectsMalformedFiles(t *testing.T) {
	cases := malformedConfigs
	// Every case directory is in the table.
	dirs, err := os.ReadDir(filepath.Join("testdata", "admission-config", "malformed"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !slices.ContainsFunc(cases, func(c malformedCase) bool { return c.dir == d.Name() }) {
			t.Errorf("testdata/admission-config/malformed/%s is not in the table", d.Name())
		}
	}
	for _, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			config := copyAdmissionConfig(t, filepath.Join("malformed", c.dir), dir, nil)
			args := []string{"--admission-control-config-file=" + config}
			if c.enable != "" {
				args = append(args, "--enable-admission-plugins="+c.enable)
			}
			out := runAdmissionConfigBinary(t, args...)
			for _, want := range append([]string{"admission-control-config-file " + config + ": "}, c.want...) {
				if want = strings.ReplaceAll(want, "${DIR}", dir); !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
	t.Run("missing-config-file", func(t *testing.T) {
		t.Parallel()
		config := filepath.Join(t.TempDir(), "admission.yaml")
		out := runAdmissionConfigBinary(t, "--admission-control-config-file="+config)
		if want := "admission-control-config-file " + config + ": stat " + config + ": no such file or directory"; !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	})
}

// malformedCase is a broken configuration under testdata/admission-config/malformed.
type malformedCase struct {
	dir    string
	enable string   // --enable-admission-plugins: the plugin runs, as it would in real use
	want   []string // ${DIR} is the copy of the case's directory
}

func (c malformedCase) name() string {
	if c.enable == "" {
		return c.dir + "/defaults"
	}
	return c.dir + "/" + c.enable
}

// The broken configurations, with the shapes of upstream's loader bugs: an
// empty entry (a panic in v1.9), PodNodeSelector's silent fallback on a file
// it cannot parse, path and configuration together, a directory or the file
// itself where a plugin's file belongs, unknown and duplicate fields.
var malformedConfigs = []malformedCase{
	{"unknown-field", "EventRateLimit", []string{"plugin EventRateLimit (path ${DIR}/eventratelimit.yaml)", `unknown field "limits[0].qpss"`}},
	{"wrong-kind", "PodTolerationRestriction", []string{"plugin PodTolerationRestriction (inline configuration, plugins[0])",
		"kind PodTolerationRestrictionConfiguration is not a configuration of this plugin; want apiVersion podtolerationrestriction.admission.k8s.io/v1alpha1, kind Configuration"}},
	{"duplicate-field", "", []string{"plugin PodSecurity (plugins[0])", "plugins[0].configuration.defaults.enforce: Duplicate value"}},
	{"duplicate-field-in-path", "PodNodeSelector", []string{"plugin PodNodeSelector (path ${DIR}/podnodeselector.yaml)",
		"podNodeSelectorPluginConfig.clusterDefaultNodeSelector: Duplicate value"}},
	{"missing-file", "", []string{`plugin ResourceQuota (plugins[0].path "resourcequota.yaml")`, "${DIR}/resourcequota.yaml: no such file or directory"}},
	{"negative-qps", "EventRateLimit", []string{"plugin EventRateLimit (inline configuration, plugins[0])", "limits[0].qps: Invalid value: -1: must be positive"}},
	// A plugin's configuration is checked even when the plugin is off.
	{"negative-qps", "", []string{"plugin EventRateLimit (inline configuration, plugins[0])", "limits[0].qps: Invalid value: -1: must be positive"}},
	{"empty-file", "PodTolerationRestriction", []string{"plugin PodTolerationRestriction (path ${DIR}/podtolerationrestriction.yaml): the file is empty"}},
	{"empty-config-file", "", []string{"the file is empty"}},
	{"unknown-plugin", "EventRateLimit", []string{`plugins[0].name: plugin "EventRateLimits" is not a registered admission plugin`}},
	{"legacy-bad-selector", "PodNodeSelector", []string{"plugin PodNodeSelector (legacy unversioned file)", `podNodeSelectorPluginConfig[team-a]: Invalid value: "team"`}},
	{"image-policy-ttl", "ImagePolicyWebhook", []string{"plugin ImagePolicyWebhook (path ${DIR}/imagepolicy.yaml)", "imagePolicy.allowTTL: Invalid value: 3600"}},
	{"webhook-relative-kubeconfig", "", []string{"plugin ValidatingAdmissionWebhook (inline configuration, plugins[0])",
		`kubeConfigFile: Invalid value: "webhook.kubeconfig": must be an absolute file path`}},
	{"restored-unknown-field", "SecurityContextDeny", []string{"plugin SecurityContextDeny (path ${DIR}/securitycontextdeny.yaml)", `unknown field "coverEphemeralContainer"`}},
	{"wrong-config-kind", "", []string{"apiVersion apiserver.config.k8s.io/v1, kind AdmissionConfig is not an admission configuration"}},
	{"unknown-config-field", "", []string{`unknown field "plugin"`}},
	{"path-and-configuration", "DenyEscalatingExec", []string{"plugin DenyEscalatingExec (plugins[0]): give either path or configuration, not both"}},
	{"plugin-without-configuration", "AlwaysPullImages", []string{"plugin AlwaysPullImages (inline configuration, plugins[0]): this plugin takes no configuration"}},
	{"empty-plugin-entry", "", []string{"plugins[0].name: Required value: name the admission plugin this entry configures"}},
	{"podnodeselector-unparsable", "PodNodeSelector", []string{"plugin PodNodeSelector (path ${DIR}/podnodeselector.yaml)", "did not find expected ',' or ']'"}},
	{"path-is-directory", "EventRateLimit", []string{`plugin EventRateLimit (plugins[0].path "confdir")`, "${DIR}/confdir is not a regular file"}},
	{"self-reference", "EventRateLimit", []string{"plugin EventRateLimit (path ${DIR}/admission.yaml)",
		"kind AdmissionConfiguration is not a configuration of this plugin; want apiVersion eventratelimit.admission.k8s.io/v1alpha1, kind Configuration"}},
	{"duplicate-plugin-entry", "EventRateLimit", []string{"plugin EventRateLimit (plugins[1]): configured again; plugins[0] configures it already"}},
	{"wrong-case-plugin", "EventRateLimit", []string{`plugins[0].name: plugin "eventratelimit" is not a registered admission plugin (did you mean "EventRateLimit"?)`}},
}

// runAdmissionConfigBinary runs our kube-apiserver with the flags it needs
// to get as far as serving, plus args; it must exit non-zero without a
// panic. It returns the combined output, with klog's quoting undone.
func runAdmissionConfigBinary(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := framework.Binary("kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	port, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := []string{
		"--etcd-servers=" + etcd.URL, "--etcd-prefix=/admission-config-refused",
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port), "--service-cluster-ip-range=10.96.0.0/16",
		"--tls-cert-file=" + filepath.Join(pki.Dir, "apiserver.crt"), "--tls-private-key-file=" + filepath.Join(pki.Dir, "apiserver.key"),
		"--client-ca-file=" + filepath.Join(pki.Dir, "ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file=" + filepath.Join(pki.Dir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(pki.Dir, "sa.key"),
		"--authorization-mode=Node,RBAC",
	}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	raw, err := cmd.CombinedOutput()
	out := strings.ReplaceAll(strings.ReplaceAll(string(raw), `\"`, `"`), `\n`, "\n")
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("kube-apiserver %v did not exit within a minute (it should refuse to start):\n%s", args, out)
	case err == nil:
		t.Fatalf("kube-apiserver %v exited 0, want a refusal:\n%s", args, out)
	case !errors.As(err, &exit):
		t.Fatalf("kube-apiserver %v: %v", args, err)
	}
	if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
		t.Errorf("kube-apiserver %v panicked:\n%s", args, out)
	}
	return out
}
