// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/template"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	imagepolicyv1alpha1 "k8s.io/api/imagepolicy/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// TestAdmissionWebhooks proves ImagePolicyWebhook, MutatingAdmissionWebhook
// and ValidatingAdmissionWebhook in our binary against HTTPS servers run by
// the test. Three apiservers share the shared server's etcd prefix, so an
// object or webhook configuration created through one is seen by all:
//
//   - shared: upstream's default plugins, so both webhook plugins without a
//     WebhookAdmissionConfiguration, and no ImagePolicyWebhook;
//   - strict: ImagePolicyWebhook failing closed (defaultAllow: false), and
//     both webhook plugins with a kubeconfig of credentials for the webhooks;
//   - off: ImagePolicyWebhook failing open (defaultAllow: true), and both
//     webhook plugins disabled.
func TestAdmissionWebhooks(t *testing.T) {
	t.Parallel() // long and independent of the others: see "Running in parallel" in README.md
	env := startWebhooksEnv(t)
	t.Run("ImagePolicyWebhook", func(t *testing.T) { testImagePolicyWebhook(t, env) })
	t.Run("webhooks", func(t *testing.T) {
		webhooksRegister(t, env)
		t.Run("MutatingAdmissionWebhook", func(t *testing.T) { testMutatingAdmissionWebhook(t, env) })
		t.Run("ValidatingAdmissionWebhook", func(t *testing.T) { testValidatingAdmissionWebhook(t, env) })
		t.Run("failurePolicy", func(t *testing.T) { testWebhooksFailurePolicy(t, env) })
		t.Run("WebhookAdmissionConfiguration", func(t *testing.T) { testWebhookAdmissionConfiguration(t, env) })
		// The server without the webhook plugins never called a webhook,
		// although its watch cache held the configurations.
		if calls := env.hooks.callsBy(webhooksOffUser); len(calls) > 0 {
			t.Errorf("webhooks-off (both webhook plugins disabled) called webhooks %d times, first %s", len(calls), calls[0].path)
		}
	})
}

const (
	webhooksDomain   = "webhooks.e2e.turnstile.dev"
	webhooksCaseKey  = webhooksDomain + "/case"
	webhooksTraceKey = webhooksDomain + "/trace"
	// webhooksDownURL is a webhook nobody serves: port 1 refuses connections.
	webhooksDownURL = "https://127.0.0.1:1/down"
	// imagePolicyAuditPrefix starts the audit annotations ImagePolicyWebhook
	// adds: "failed-open" when it admits a pod because the backend failed,
	// and the backend's status.auditAnnotations.
	imagePolicyAuditPrefix = "imagepolicywebhook.image-policy.k8s.io/"

	webhooksSharedUser = "e2e-admin" // adminClient's user
	webhooksStrictUser = "e2e-webhooks-strict"
	webhooksOffUser    = "e2e-webhooks-off"
)

// webhooksEnv is what the subtests of TestAdmissionWebhooks share.
type webhooksEnv struct {
	ns                  string
	shared, strict, off kubernetes.Interface
	backend             *imagePolicyBackend
	hooks               *webhooksRecorder
	token               string // the bearer token strict presents to webhooks
	offAuditLog         string // the off server's audit log
}

func startWebhooksEnv(t *testing.T) *webhooksEnv {
	env := &webhooksEnv{shared: adminClient(t), backend: &imagePolicyBackend{}, hooks: &webhooksRecorder{}}
	var err error
	if env.backend.server, err = framework.StartWebhookServer(pki, env.backend); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.backend.server.Close() })
	if env.hooks.server, err = framework.StartWebhookServer(pki, env.hooks); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.hooks.server.Close() })

	// The configuration files: testdata/webhooks/*.yaml are templates for
	// the backend's and the webhooks' addresses and the generated PKI.
	dir := filepath.Join(root, "webhooks-config")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	token := make([]byte, 16)
	_, _ = rand.Read(token)
	env.token = hex.EncodeToString(token)
	values := map[string]string{
		"CAFile":          write("ca.crt", pki.CAPEM),
		"BackendURL":      env.backend.server.URL,
		"WebhookHostPort": env.hooks.server.HostPort,
		"Token":           env.token,
	}
	for prefix, user := range map[string]string{"ImagePolicy": "e2e-imagepolicy-client", "Webhook": "e2e-webhook-client"} {
		cert, key, err := pki.ClientCert(user)
		if err != nil {
			t.Fatal(err)
		}
		values[prefix+"ClientCertFile"] = write(user+".crt", cert)
		values[prefix+"ClientKeyFile"] = write(user+".key", key)
	}
	render := func(name string, extra map[string]string) string {
		tmpl, err := template.ParseFiles(filepath.Join("testdata", "webhooks", name))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := tmpl.Option("missingkey=error").Execute(&out, extra); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return write(name, out.Bytes())
	}
	values["ImagePolicyKubeconfig"] = render("imagepolicy-kubeconfig.yaml", map[string]string{
		"CAFile": values["CAFile"], "BackendURL": values["BackendURL"],
		"ClientCertFile": values["ImagePolicyClientCertFile"], "ClientKeyFile": values["ImagePolicyClientKeyFile"],
	})
	values["WebhookKubeconfig"] = render("webhook-kubeconfig.yaml", map[string]string{
		"WebhookHostPort": values["WebhookHostPort"], "Token": values["Token"],
		"ClientCertFile": values["WebhookClientCertFile"], "ClientKeyFile": values["WebhookClientKeyFile"],
	})
	render("imagepolicy.yaml", values)
	strictConfig := render("strict-admission.yaml", values)
	offConfig := render("failopen-admission.yaml", values)
	auditPolicy, err := filepath.Abs(filepath.Join("testdata", "webhooks", "audit-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	env.offAuditLog = filepath.Join(root, "webhooks-off", "audit.log")

	// Both servers start at once; each takes a few seconds.
	type started struct {
		c   kubernetes.Interface
		err error
	}
	start := func(name, user string, args ...string) <-chan started {
		ch := make(chan started, 1)
		go func() {
			s, err := framework.StartAPIServer(framework.APIServerConfig{
				Dir: filepath.Join(root, name), Etcd: etcd, PKI: pki,
				Args: append([]string{"--etcd-prefix=/shared"}, args...),
			})
			if err != nil {
				ch <- started{err: fmt.Errorf("%s: %w", name, err)}
				return
			}
			t.Cleanup(func() {
				if err := s.Stop(syscall.SIGTERM); err != nil {
					t.Errorf("%s did not stop cleanly: %v", name, err)
				}
			})
			c, err := s.Client(user, "system:masters")
			ch <- started{c, err}
		}()
		return ch
	}
	strict := start("webhooks-strict", webhooksStrictUser,
		"--enable-admission-plugins=ImagePolicyWebhook",
		"--admission-control-config-file="+strictConfig)
	off := start("webhooks-off", webhooksOffUser,
		"--enable-admission-plugins=ImagePolicyWebhook",
		"--disable-admission-plugins=MutatingAdmissionWebhook,ValidatingAdmissionWebhook",
		"--admission-control-config-file="+offConfig,
		"--audit-policy-file="+auditPolicy, "--audit-log-path="+env.offAuditLog)
	s, o := <-strict, <-off
	if err := errors.Join(s.err, o.err); err != nil {
		t.Fatal(err)
	}
	env.strict, env.off = s.c, o.c
	env.ns = createNamespace(t, env.shared)
	return env
}

// imagePolicyBackend is an ImagePolicyWebhook backend. It decides by image
// name: an image with "/fail-" in it makes it answer 500, "/deny-silent-"
// denies without a reason, "/deny-" denies with one; anything else is
// allowed. Its answers carry the audit annotation e2e-decision. It records
// every review it receives.
type imagePolicyBackend struct {
	server *framework.WebhookServer
	mu     sync.Mutex
	calls  []imagePolicyCall
}

type imagePolicyCall struct {
	at                        time.Time
	method, path, contentType string
	clientCN                  string // the apiserver's client certificate
	review                    imagepolicyv1alpha1.ImageReview
}

func (c imagePolicyCall) images() []string {
	var images []string
	for _, container := range c.review.Spec.Containers {
		images = append(images, container.Image)
	}
	return images
}

func (b *imagePolicyBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	call := imagePolicyCall{at: time.Now(), method: r.Method, path: r.URL.Path, contentType: r.Header.Get("Content-Type")}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		call.clientCN = r.TLS.PeerCertificates[0].Subject.CommonName
	}
	if err := json.NewDecoder(r.Body).Decode(&call.review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	b.calls = append(b.calls, call)
	b.mu.Unlock()

	status := imagepolicyv1alpha1.ImageReviewStatus{Allowed: true}
	for _, image := range call.images() {
		switch {
		case strings.Contains(image, "/fail-"):
			http.Error(w, "e2e backend failure", http.StatusInternalServerError)
			return
		case status.Allowed && strings.Contains(image, "/deny-silent-"):
			status = imagepolicyv1alpha1.ImageReviewStatus{Allowed: false}
		case status.Allowed && strings.Contains(image, "/deny-"):
			status = imagepolicyv1alpha1.ImageReviewStatus{Allowed: false, Reason: "image " + image + " is not on the e2e allow list"}
		}
	}
	status.AuditAnnotations = map[string]string{"e2e-decision": map[bool]string{true: "allowed", false: "denied"}[status.Allowed]}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(imagepolicyv1alpha1.ImageReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "imagepolicy.k8s.io/v1alpha1", Kind: "ImageReview"},
		Status:   status,
	})
}

// callsFor returns the reviews that contained image, oldest first.
func (b *imagePolicyBackend) callsFor(image string) []imagePolicyCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	var calls []imagePolicyCall
	for _, c := range b.calls {
		if slices.Contains(c.images(), image) {
			calls = append(calls, c)
		}
	}
	return calls
}

func imagePolicyPod(name string, images ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for i, image := range images {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", i), Image: image})
	}
	return pod
}

var webhooksDryRun = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

// imagePolicyExpectDenied checks that err is a 403 for pod name saying want.
func imagePolicyExpectDenied(t *testing.T, err error, name, want string) {
	t.Helper()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `pods "`+name+`" is forbidden: `) || !strings.Contains(err.Error(), want) {
		t.Errorf("pod %s: got %v, want 403 %q", name, err, want)
	}
}

func imagePolicyExpectCalls(t *testing.T, b *imagePolicyBackend, image string, want int) []imagePolicyCall {
	t.Helper()
	calls := b.callsFor(image)
	if len(calls) != want {
		t.Errorf("backend reviewed %s %d times, want %d", image, len(calls), want)
	}
	return calls
}

func testImagePolicyWebhook(t *testing.T, env *webhooksEnv) {
	ctx := context.Background()
	ns, b := env.ns, env.backend
	const denied = "image policy webhook backend denied one or more images: "

	t.Run("review", func(t *testing.T) {
		main, sidecar, initImage := "e2e.invalid/allow-review-main:1", "e2e.invalid/allow-review-sidecar:1", "e2e.invalid/allow-review-init:1"
		pod := imagePolicyPod("review", main, sidecar)
		pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: initImage}}
		pod.Annotations = map[string]string{
			"mycluster.image-policy.k8s.io/ticket-1234": "break-glass",
			"image-policy.k8s.io/no-subdomain":          "not sent: *.image-policy.k8s.io/* needs one",
			"example.com/unrelated":                     "not sent",
		}
		if _, err := env.strict.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("pod with allowed images: %v", err)
		}
		calls := imagePolicyExpectCalls(t, b, main, 1)
		if len(calls) != 1 {
			return
		}
		c := calls[0]
		if c.method != http.MethodPost || c.path != "/imagepolicy" || !strings.HasPrefix(c.contentType, "application/json") {
			t.Errorf("backend got %s %s (%s), want POST /imagepolicy (the kubeconfig's server) with JSON", c.method, c.path, c.contentType)
		}
		if c.clientCN != "e2e-imagepolicy-client" {
			t.Errorf("apiserver presented client certificate %q, want the kubeconfig's e2e-imagepolicy-client", c.clientCN)
		}
		if c.review.APIVersion != "imagepolicy.k8s.io/v1alpha1" || c.review.Kind != "ImageReview" {
			t.Errorf("review is %s %s, want imagepolicy.k8s.io/v1alpha1 ImageReview", c.review.APIVersion, c.review.Kind)
		}
		images := c.images()
		slices.Sort(images)
		if want := []string{initImage, main, sidecar}; !slices.Equal(images, want) {
			t.Errorf("review containers %v, want the containers and init containers %v", images, want)
		}
		if want := map[string]string{"mycluster.image-policy.k8s.io/ticket-1234": "break-glass"}; !maps.Equal(c.review.Spec.Annotations, want) {
			t.Errorf("review annotations %v, want only the *.image-policy.k8s.io/* one %v", c.review.Spec.Annotations, want)
		}
		if c.review.Spec.Namespace != ns {
			t.Errorf("review namespace %q, want %q", c.review.Spec.Namespace, ns)
		}
	})

	t.Run("deny", func(t *testing.T) {
		cases := []struct{ name, image, want string }{
			{name: "deny-reason", image: "e2e.invalid/deny-reason:1",
				want: denied + "image e2e.invalid/deny-reason:1 is not on the e2e allow list"},
			{name: "deny-silent", image: "e2e.invalid/deny-silent-plain:1",
				want: "one or more images rejected by webhook backend"},
			{name: "deny-init", image: "e2e.invalid/deny-init:1",
				want: denied + "image e2e.invalid/deny-init:1 is not on the e2e allow list"},
		}
		for _, tc := range cases {
			pod := imagePolicyPod(tc.name, tc.image)
			if tc.name == "deny-init" {
				pod = imagePolicyPod(tc.name, "e2e.invalid/allow-init-main:1")
				pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: tc.image}}
			}
			_, err := env.strict.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			imagePolicyExpectDenied(t, err, tc.name, tc.want)
			imagePolicyExpectCalls(t, b, tc.image, 1)
		}
		// defaultAllow is about a failing backend: a denial stands.
		_, err := env.off.CoreV1().Pods(ns).Create(ctx, imagePolicyPod("deny-failopen", "e2e.invalid/deny-failopen:1"), metav1.CreateOptions{})
		imagePolicyExpectDenied(t, err, "deny-failopen", denied+"image e2e.invalid/deny-failopen:1 is not on the e2e allow list")
		imagePolicyExpectCalls(t, b, "e2e.invalid/deny-failopen:1", 1)
		// The backend's status.auditAnnotations reach the audit log.
		imagePolicyExpectAudit(t, env, "deny-failopen", map[string]string{imagePolicyAuditPrefix + "e2e-decision": "denied"})
	})

	t.Run("ephemeral-containers-and-updates", func(t *testing.T) {
		// A pod with a denied image, created through the shared server,
		// which does not run the plugin: no review.
		target := imagePolicyPod("debug-target", "e2e.invalid/deny-target:1")
		if _, err := env.shared.CoreV1().Pods(ns).Create(ctx, target, metav1.CreateOptions{}); err != nil {
			t.Fatalf("shared server (no ImagePolicyWebhook): %v", err)
		}
		imagePolicyExpectCalls(t, b, "e2e.invalid/deny-target:1", 0)
		debug := func(c kubernetes.Interface, name, image string) error {
			patch := `{"spec":{"ephemeralContainers":[{"name":"` + name + `","image":"` + image + `"}]}}`
			_, err := c.CoreV1().Pods(ns).Patch(ctx, target.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "ephemeralcontainers")
			return err
		}
		// The pods/ephemeralcontainers update is reviewed, with the
		// ephemeral containers only.
		err := debug(env.strict, "denied", "e2e.invalid/deny-ephemeral:1")
		imagePolicyExpectDenied(t, err, target.Name, denied+"image e2e.invalid/deny-ephemeral:1 is not on the e2e allow list")
		if calls := imagePolicyExpectCalls(t, b, "e2e.invalid/deny-ephemeral:1", 1); len(calls) == 1 {
			if got := calls[0].images(); !slices.Equal(got, []string{"e2e.invalid/deny-ephemeral:1"}) {
				t.Errorf("ephemeral container review has images %v, want only the ephemeral container's", got)
			}
		}
		if err := debug(env.strict, "allowed", "e2e.invalid/allow-ephemeral:1"); err != nil {
			t.Errorf("allowed ephemeral container: %v", err)
		}
		imagePolicyExpectCalls(t, b, "e2e.invalid/allow-ephemeral:1", 1)
		if err := debug(env.shared, "unreviewed", "e2e.invalid/deny-ephemeral-shared:1"); err != nil {
			t.Errorf("shared server (no ImagePolicyWebhook): ephemeral container: %v", err)
		}
		imagePolicyExpectCalls(t, b, "e2e.invalid/deny-ephemeral-shared:1", 0)

		// An update of the pod itself is reviewed like a create.
		_, err = env.strict.CoreV1().Pods(ns).Patch(ctx, target.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{})
		imagePolicyExpectDenied(t, err, target.Name, denied+"image e2e.invalid/deny-target:1 is not on the e2e allow list")
		imagePolicyExpectCalls(t, b, "e2e.invalid/deny-target:1", 1)
	})

	t.Run("cache", func(t *testing.T) { testImagePolicyCache(t, env) })

	t.Run("backend-error", func(t *testing.T) {
		// A 500 is retried (upstream: 5 attempts, retryBackoff apart), then
		// the failure decides by defaultAllow, and is not cached.
		_, err := env.strict.CoreV1().Pods(ns).Create(ctx, imagePolicyPod("error-strict", "e2e.invalid/fail-strict:1"), metav1.CreateOptions{})
		imagePolicyExpectDenied(t, err, "error-strict", "e2e backend failure")
		imagePolicyExpectCalls(t, b, "e2e.invalid/fail-strict:1", 5)

		for i, want := range []int{5, 10} {
			name := fmt.Sprintf("error-failopen-%d", i)
			if _, err := env.off.CoreV1().Pods(ns).Create(ctx, imagePolicyPod(name, "e2e.invalid/fail-open:1"), metav1.CreateOptions{}); err != nil {
				t.Errorf("defaultAllow: true, backend answering 500: %v, want admitted", err)
			}
			imagePolicyExpectCalls(t, b, "e2e.invalid/fail-open:1", want)
			imagePolicyExpectAudit(t, env, name, map[string]string{imagePolicyAuditPrefix + "failed-open": "true"})
		}
	})

	t.Run("plugin-off", func(t *testing.T) {
		// The shared server runs without ImagePolicyWebhook: the backend
		// is not asked, and what it would deny is admitted.
		for _, image := range []string{"e2e.invalid/deny-off:1", "e2e.invalid/fail-off:1"} {
			name := "off-" + strings.TrimSuffix(strings.TrimPrefix(image, "e2e.invalid/"), ":1")
			if _, err := env.shared.CoreV1().Pods(ns).Create(ctx, imagePolicyPod(name, image), metav1.CreateOptions{}); err != nil {
				t.Errorf("shared server: pod with %s: %v, want admitted", image, err)
			}
			imagePolicyExpectCalls(t, b, image, 0)
		}
	})

	// Last: stop the backend for good.
	t.Run("backend-down", func(t *testing.T) {
		if err := b.server.Close(); err != nil {
			t.Fatalf("stopping the backend: %v", err)
		}
		_, err := env.strict.CoreV1().Pods(ns).Create(ctx, imagePolicyPod("down-strict", "e2e.invalid/allow-down:1"), metav1.CreateOptions{})
		// The error is the transport's: connection refused, or broken pipe
		// or reset on a connection the apiserver had kept open.
		imagePolicyExpectDenied(t, err, "down-strict", `Post "`+b.server.URL+`/imagepolicy`)
		if _, err := env.off.CoreV1().Pods(ns).Create(ctx, imagePolicyPod("down-failopen", "e2e.invalid/allow-down:1"), metav1.CreateOptions{}); err != nil {
			t.Errorf("defaultAllow: true, backend down: %v, want admitted", err)
		}
		imagePolicyExpectCalls(t, b, "e2e.invalid/allow-down:1", 0)
		imagePolicyExpectAudit(t, env, "down-failopen", map[string]string{imagePolicyAuditPrefix + "failed-open": "true"})
	})
}

// testImagePolicyCache proves allowTTL (6 s) and denyTTL (2 s) on the strict
// server: requests for the same review within a TTL are answered from the
// cache, the first one after it goes to the backend again.
func testImagePolicyCache(t *testing.T, env *webhooksEnv) {
	const allowTTL, denyTTL = 6 * time.Second, 2 * time.Second
	ctx := context.Background()
	allow, deny := "e2e.invalid/allow-ttl:1", "e2e.invalid/deny-ttl:1"
	try := func(image string, annotations map[string]string) error {
		pod := imagePolicyPod("ttl", image)
		pod.Annotations = annotations
		_, err := env.strict.CoreV1().Pods(env.ns).Create(ctx, pod, webhooksDryRun)
		return err
	}
	// plain is the backend's reviews of image without annotations.
	plain := func(image string) []imagePolicyCall {
		return slices.DeleteFunc(env.backend.callsFor(image), func(c imagePolicyCall) bool { return len(c.review.Spec.Annotations) > 0 })
	}
	check := func(image string, err error) {
		t.Helper()
		if image == allow && err != nil {
			t.Fatalf("%s: %v, want admitted", image, err)
		}
		if image == deny {
			imagePolicyExpectDenied(t, err, "ttl", "image "+deny+" is not on the e2e allow list")
			if t.Failed() {
				t.FailNow()
			}
		}
	}
	for _, image := range []string{allow, deny} {
		check(image, try(image, nil))
		if n := len(plain(image)); n != 1 {
			t.Fatalf("backend reviewed %s %d times, want 1", image, n)
		}
	}
	// The annotations are part of the cache key.
	check(allow, try(allow, map[string]string{"ticket.image-policy.k8s.io/id": "1"}))
	if n := len(env.backend.callsFor(allow)); n != 2 {
		t.Errorf("backend reviewed %s %d times, want 2: a new annotation is a new review", allow, n)
	}

	// Ask again and again until each image is reviewed a second time.
	type progress struct {
		asked    int // requests after the first review
		recalled time.Duration
	}
	state := map[string]*progress{allow: {}, deny: {}}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, allowTTL+30*time.Second, true, func(context.Context) (bool, error) {
		done := true
		for image, p := range state {
			if p.recalled != 0 {
				continue
			}
			check(image, try(image, nil))
			p.asked++
			if calls := plain(image); len(calls) > 1 {
				p.recalled = calls[1].at.Sub(calls[0].at)
			} else {
				done = false
			}
		}
		return done, nil
	})
	if err != nil {
		t.Fatalf("the cached reviews did not expire: %v", err)
	}
	for image, ttl := range map[string]time.Duration{allow: allowTTL, deny: denyTTL} {
		p := state[image]
		t.Logf("%s: reviewed again %v after the first review, %d requests answered from the cache", image, p.recalled, p.asked-1)
		if p.recalled < ttl {
			t.Errorf("%s was reviewed again after %v, within its TTL %v", image, p.recalled, ttl)
		}
		if p.asked < 2 {
			t.Errorf("%s: no request was answered from the cache", image)
		}
	}
	// The denial expired by denyTTL, long before allowTTL.
	if p := state[deny]; p.recalled >= allowTTL {
		t.Errorf("the denial stayed cached %v, want denyTTL %v, not allowTTL %v", p.recalled, denyTTL, allowTTL)
	}
}

// imagePolicyExpectAudit waits until the off server's audit log has the
// event of the create of pod name, and checks that it has the annotations
// want. (Upstream also sets alpha.image-policy.k8s.io/failed-open on the pod
// when failing open, but on the copy of the pod that validation sees, so
// the audit annotation is what records it.)
func imagePolicyExpectAudit(t *testing.T, env *webhooksEnv, name string, want map[string]string) {
	t.Helper()
	var event *auditv1.Event
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		data, err := os.ReadFile(env.offAuditLog)
		if err != nil {
			return false, nil
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			var e auditv1.Event
			if json.Unmarshal(line, &e) != nil || e.Verb != "create" || e.ObjectRef == nil || e.Stage != auditv1.StageResponseComplete {
				continue
			}
			if e.ObjectRef.Resource == "pods" && e.ObjectRef.Subresource == "" && e.ObjectRef.Namespace == env.ns && e.ObjectRef.Name == name {
				event = &e
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no audit event for the create of pod %s in %s: %v", name, env.offAuditLog, err)
		return
	}
	for k, v := range want {
		if got, ok := event.Annotations[k]; !ok || got != v {
			t.Errorf("audit event of pod %s: annotations %v, want %s=%s", name, event.Annotations, k, v)
		}
	}
}

// webhooksRecorder serves the admission webhooks by path and records every
// call:
//
//	/mutate/first, /mutate/second  append their name to the trace annotation
//	/validate/left, /validate/right  wait for each other (so they must be
//	    called in parallel), then deny a configmap whose data.deny names them
//	/slow   answers after 5 s, or when the caller gives up
//	/allow  allows
type webhooksRecorder struct {
	server   *framework.WebhookServer
	mu       sync.Mutex
	calls    []webhooksCall
	arrivals map[string]chan struct{}
}

type webhooksCall struct {
	path, user, name string // user is the requester in the AdmissionReview
	trace            string // the trace annotation the webhook saw
	parallel         bool   // for left and right: the other was called too, at the same time
	authorization    string // the Authorization header the apiserver sent
	clientCN         string // the client certificate the apiserver presented
}

func (h *webhooksRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("not an AdmissionReview request: %v", err), http.StatusBadRequest)
		return
	}
	req := review.Request
	var cm corev1.ConfigMap
	if err := json.Unmarshal(req.Object.Raw, &cm); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	call := webhooksCall{
		path: r.URL.Path, user: req.UserInfo.Username, name: cm.Name,
		trace: cm.Annotations[webhooksTraceKey], authorization: r.Header.Get("Authorization"),
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		call.clientCN = r.TLS.PeerCertificates[0].Subject.CommonName
	}
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	deny := func(msg string) {
		resp.Allowed = false
		resp.Result = &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: msg}
	}
	switch r.URL.Path {
	case "/mutate/first", "/mutate/second":
		trace := path.Base(r.URL.Path)
		if call.trace != "" {
			trace = call.trace + "," + trace
		}
		op := map[string]any{"op": "add", "path": "/metadata/annotations", "value": map[string]string{webhooksTraceKey: trace}}
		if cm.Annotations != nil {
			op = map[string]any{"op": "add", "path": "/metadata/annotations/" + strings.ReplaceAll(webhooksTraceKey, "/", "~1"), "value": trace}
		}
		resp.Patch, _ = json.Marshal([]any{op})
		resp.PatchType = ptr.To(admissionv1.PatchTypeJSONPatch)
	case "/validate/left", "/validate/right":
		side := path.Base(r.URL.Path)
		other := map[string]string{"left": "right", "right": "left"}[side]
		call.parallel = h.meet(side, other, call.user+"/"+call.name)
		switch {
		case !call.parallel:
			deny(side + " webhook: the " + other + " webhook was not called at the same time")
		case cm.Data["deny"] == side:
			deny(side + " webhook refuses configmap " + cm.Name)
		}
	case "/slow":
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}
	h.mu.Lock()
	h.calls = append(h.calls, call)
	h.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Response: resp,
	})
}

// meet records that side was called for key and waits up to 5 s for other;
// it says whether other came.
func (h *webhooksRecorder) meet(side, other, key string) bool {
	arrival := func(who string) chan struct{} {
		if h.arrivals == nil {
			h.arrivals = map[string]chan struct{}{}
		}
		ch, ok := h.arrivals[who+"/"+key]
		if !ok {
			ch = make(chan struct{})
			h.arrivals[who+"/"+key] = ch
		}
		return ch
	}
	h.mu.Lock()
	mine, theirs := arrival(side), arrival(other)
	select {
	case <-mine:
	default:
		close(mine)
	}
	h.mu.Unlock()
	select {
	case <-theirs:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

// callsFor returns the calls for the configmap name requested by user, in
// the order they came.
func (h *webhooksRecorder) callsFor(user, name string) []webhooksCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	var calls []webhooksCall
	for _, c := range h.calls {
		if c.user == user && c.name == name {
			calls = append(calls, c)
		}
	}
	return calls
}

func (h *webhooksRecorder) callsBy(user string) []webhooksCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	var calls []webhooksCall
	for _, c := range h.calls {
		if c.user == user {
			calls = append(calls, c)
		}
	}
	return calls
}

func webhooksConfigMap(name, testCase string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{webhooksCaseKey: testCase}},
		Data:       data,
	}
}

// webhooksRegister registers, through the shared server, the mutating and
// validating webhooks of the test, each for configmaps of the test's
// namespace with its case label, and waits until the shared and strict
// servers call them and the off server has them in its watch cache.
func webhooksRegister(t *testing.T, env *webhooksEnv) {
	ctx := context.Background()
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	namespace := &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: env.ns}}
	object := func(testCase string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{webhooksCaseKey: testCase}}
	}
	client := func(url string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: pki.CAPEM}
	}
	none := ptr.To(admissionregistrationv1.SideEffectClassNone)
	fail, ignore := ptr.To(admissionregistrationv1.Fail), ptr.To(admissionregistrationv1.Ignore)
	mutating := func(name, path string, reinvocation admissionregistrationv1.ReinvocationPolicyType) admissionregistrationv1.MutatingWebhook {
		return admissionregistrationv1.MutatingWebhook{
			Name: name + "." + webhooksDomain, ClientConfig: client(env.hooks.server.URL + path), Rules: rules,
			NamespaceSelector: namespace, ObjectSelector: object("mutate"), SideEffects: none,
			AdmissionReviewVersions: []string{"v1"}, FailurePolicy: fail, TimeoutSeconds: ptr.To[int32](10),
			ReinvocationPolicy: &reinvocation,
		}
	}
	validating := func(name, url, testCase string, policy *admissionregistrationv1.FailurePolicyType, timeout int32) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name: name + "." + webhooksDomain, ClientConfig: client(url), Rules: rules,
			NamespaceSelector: namespace, ObjectSelector: object(testCase), SideEffects: none,
			AdmissionReviewVersions: []string{"v1"}, FailurePolicy: policy, TimeoutSeconds: &timeout,
		}
	}
	url := env.hooks.server.URL
	name := "e2e-webhooks-" + env.ns
	m := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			mutating("first", "/mutate/first", admissionregistrationv1.IfNeededReinvocationPolicy),
			mutating("second", "/mutate/second", admissionregistrationv1.NeverReinvocationPolicy),
		},
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			validating("left", url+"/validate/left", "validate", fail, 10),
			validating("right", url+"/validate/right", "validate", fail, 10),
			validating("down-fail", webhooksDownURL, "down-fail", fail, 10),
			validating("down-ignore", webhooksDownURL, "down-ignore", ignore, 10),
			validating("slow-fail", url+"/slow", "slow-fail", fail, 1),
			validating("slow-ignore", url+"/slow", "slow-ignore", ignore, 1),
			validating("credentials", url+"/allow", "credentials", fail, 10),
		},
	}
	admissionregistration := env.shared.AdmissionregistrationV1()
	if _, err := admissionregistration.MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admissionregistration.MutatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	if _, err := admissionregistration.ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admissionregistration.ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})

	// Dry-run probes until both configurations are in force: webhooks
	// with sideEffects None are called for dry-run requests too.
	probes := 0
	for server, c := range map[string]kubernetes.Interface{"shared": env.shared, "webhooks-strict": env.strict} {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			probes++
			cms := c.CoreV1().ConfigMaps(env.ns)
			cm, err := cms.Create(ctx, webhooksConfigMap(fmt.Sprintf("probe-mutate-%d", probes), "mutate", nil), webhooksDryRun)
			if err != nil || cm.Annotations[webhooksTraceKey] != "first,second,first" {
				return false, nil
			}
			_, err = cms.Create(ctx, webhooksConfigMap(fmt.Sprintf("probe-validate-%d", probes), "validate", map[string]string{"deny": "left"}), webhooksDryRun)
			return err != nil && strings.Contains(err.Error(), "left webhook refuses"), nil
		})
		if err != nil {
			t.Fatalf("%s: the webhooks did not come into force: %v", server, err)
		}
	}
	// The off server cannot be probed (it calls no webhook): wait until
	// its watch cache, which its informers read, has both configurations.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		ms, err := env.off.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, nil
		}
		vs, err := env.off.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, nil
		}
		return slices.ContainsFunc(ms.Items, func(c admissionregistrationv1.MutatingWebhookConfiguration) bool { return c.Name == name }) &&
			slices.ContainsFunc(vs.Items, func(c admissionregistrationv1.ValidatingWebhookConfiguration) bool { return c.Name == name }), nil
	})
	if err != nil {
		t.Fatalf("webhooks-off never listed the webhook configurations: %v", err)
	}
}

func testMutatingAdmissionWebhook(t *testing.T, env *webhooksEnv) {
	ctx := context.Background()
	// Serial mutation: first, then second, which sees first's patch; then
	// first again (reinvocationPolicy IfNeeded) because second changed the
	// object after it.
	if _, err := env.shared.CoreV1().ConfigMaps(env.ns).Create(ctx, webhooksConfigMap("serial", "mutate", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stored, err := env.shared.CoreV1().ConfigMaps(env.ns).Get(ctx, "serial", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := stored.Annotations[webhooksTraceKey]; got != "first,second,first" {
		t.Errorf("stored trace %q, want first,second,first", got)
	}
	var got []string
	for _, c := range env.hooks.callsFor(webhooksSharedUser, "serial") {
		got = append(got, fmt.Sprintf("%s saw %q", c.path, c.trace))
	}
	want := []string{`/mutate/first saw ""`, `/mutate/second saw "first"`, `/mutate/first saw "first,second"`}
	if !slices.Equal(got, want) {
		t.Errorf("webhook calls %q, want %q", got, want)
	}

	// Without MutatingAdmissionWebhook the configuration is ignored.
	if _, err := env.off.CoreV1().ConfigMaps(env.ns).Create(ctx, webhooksConfigMap("unmutated", "mutate", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stored, err = env.off.CoreV1().ConfigMaps(env.ns).Get(ctx, "unmutated", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if trace, ok := stored.Annotations[webhooksTraceKey]; ok {
		t.Errorf("webhooks-off (MutatingAdmissionWebhook disabled) mutated the configmap: trace %q", trace)
	}
}

func testValidatingAdmissionWebhook(t *testing.T, env *webhooksEnv) {
	ctx := context.Background()
	cms := env.shared.CoreV1().ConfigMaps(env.ns)
	// Both webhooks are called, at the same time (each waits for the
	// other), and the denial of either one is the request's answer.
	for _, side := range []string{"left", "right", "none"} {
		name := "validate-" + side
		_, err := cms.Create(ctx, webhooksConfigMap(name, "validate", map[string]string{"deny": side}), metav1.CreateOptions{})
		if side == "none" {
			if err != nil {
				t.Errorf("configmap neither webhook denies: %v", err)
			}
		} else {
			want := fmt.Sprintf(`admission webhook "%s.%s" denied the request: %s webhook refuses configmap %s`, side, webhooksDomain, side, name)
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
				t.Errorf("configmap denied by %s: got %v, want 403 %q", side, err, want)
			}
		}
		var called []string
		for _, c := range env.hooks.callsFor(webhooksSharedUser, name) {
			called = append(called, fmt.Sprintf("%s parallel=%t", c.path, c.parallel))
		}
		slices.Sort(called)
		if want := []string{"/validate/left parallel=true", "/validate/right parallel=true"}; !slices.Equal(called, want) {
			t.Errorf("%s: webhook calls %v, want %v", name, called, want)
		}
	}

	// Without ValidatingAdmissionWebhook the configuration is ignored.
	if _, err := env.off.CoreV1().ConfigMaps(env.ns).Create(ctx, webhooksConfigMap("validate-off", "validate", map[string]string{"deny": "left"}), metav1.CreateOptions{}); err != nil {
		t.Errorf("webhooks-off (ValidatingAdmissionWebhook disabled): %v, want admitted", err)
	}
}

func testWebhooksFailurePolicy(t *testing.T, env *webhooksEnv) {
	ctx := context.Background()
	cases := []struct {
		testCase string
		wantErr  string // "" admits
		minTime  time.Duration
	}{
		{"down-fail", `failed calling webhook "down-fail.` + webhooksDomain + `"`, 0},
		{"down-ignore", "", 0},
		{"slow-fail", `failed calling webhook "slow-fail.` + webhooksDomain + `"`, time.Second},
		{"slow-ignore", "", time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.testCase, func(t *testing.T) {
			start := time.Now()
			_, err := env.shared.CoreV1().ConfigMaps(env.ns).Create(ctx, webhooksConfigMap(tc.testCase, tc.testCase, nil), metav1.CreateOptions{})
			took := time.Since(start)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("got %v, want admitted (failurePolicy Ignore)", err)
			case tc.wantErr != "" && (!apierrors.IsInternalError(err) || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("got %v, want 500 %q (failurePolicy Fail)", err, tc.wantErr)
			}
			if took < tc.minTime {
				t.Errorf("answered after %v: the webhook's timeoutSeconds (1) was not waited for", took)
			}
			t.Logf("%s: %v after %v", tc.testCase, err, took.Round(time.Millisecond))
			// Without ValidatingAdmissionWebhook no webhook is called.
			if _, err := env.off.CoreV1().ConfigMaps(env.ns).Create(ctx, webhooksConfigMap(tc.testCase+"-off", tc.testCase, nil), metav1.CreateOptions{}); err != nil {
				t.Errorf("webhooks-off (ValidatingAdmissionWebhook disabled): %v, want admitted", err)
			}
		})
	}
}

// testWebhookAdmissionConfiguration: the strict server presents the bearer
// token and client certificate of its WebhookAdmissionConfiguration's
// kubeconfig to webhooks; the shared server, without one, presents neither.
func testWebhookAdmissionConfiguration(t *testing.T, env *webhooksEnv) {
	ctx := context.Background()
	for user, c := range map[string]kubernetes.Interface{webhooksStrictUser: env.strict, webhooksSharedUser: env.shared} {
		name := "credentials-" + user
		if _, err := c.CoreV1().ConfigMaps(env.ns).Create(ctx, webhooksConfigMap(name, "credentials", nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		calls := env.hooks.callsFor(user, name)
		if len(calls) != 1 {
			t.Fatalf("%s: %d webhook calls, want 1", user, len(calls))
		}
		wantAuth, wantCN := "Bearer "+env.token, "e2e-webhook-client"
		if user == webhooksSharedUser {
			wantAuth, wantCN = "", ""
		}
		if calls[0].authorization != wantAuth || calls[0].clientCN != wantCN {
			t.Errorf("webhook called for %s with Authorization %q and client certificate %q, want %q and %q",
				user, calls[0].authorization, calls[0].clientCN, wantAuth, wantCN)
		}
	}
	// Both plugins read the configuration: the mutating and validating
	// webhooks the strict server called (its probes) got the credentials.
	seen := map[string]bool{}
	for _, c := range env.hooks.callsBy(webhooksStrictUser) {
		seen[c.path] = true
		if c.authorization != "Bearer "+env.token || c.clientCN != "e2e-webhook-client" {
			t.Errorf("webhooks-strict called %s without the kubeconfig's credentials", c.path)
		}
	}
	for _, p := range []string{"/mutate/first", "/mutate/second", "/validate/left", "/validate/right"} {
		if !seen[p] {
			t.Errorf("webhooks-strict never called %s", p)
		}
	}
}
