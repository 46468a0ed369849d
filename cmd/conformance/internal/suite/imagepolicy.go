// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	imagepolicyv1alpha1 "k8s.io/api/imagepolicy/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
)

// imagePolicyRegistries are the registries the impact-ImagePolicyWebhook
// backend admits images from: the one every image of the local nodes is
// named after (the run's registry serves it). A registry allow list is what
// ImagePolicyWebhook is most often deployed for.
var imagePolicyRegistries = []string{"registry.k8s.io/"}

// imagePolicyBackend is an ImagePolicyWebhook backend on loopback that
// admits a pod when every image it names comes from an allowed registry.
// It writes each review's decision to a log, and counts the images it
// denied, for the run's summary.
type imagePolicyBackend struct {
	allowed []string
	server  *http.Server
	url     string
	caPEM   []byte

	mu     sync.Mutex
	log    *os.File
	denied map[string]int // image -> reviews that denied it
	total  int
}

// decide is the policy: every image must start with an allowed prefix. It
// returns the images it refused, too.
func (b *imagePolicyBackend) decide(spec imagepolicyv1alpha1.ImageReviewSpec) (imagepolicyv1alpha1.ImageReviewStatus, []string) {
	var refused []string
	for _, c := range spec.Containers {
		if !hasAnyPrefix(c.Image, b.allowed) {
			refused = append(refused, c.Image)
		}
	}
	if len(refused) == 0 {
		return imagepolicyv1alpha1.ImageReviewStatus{Allowed: true}, nil
	}
	return imagepolicyv1alpha1.ImageReviewStatus{
		Reason: fmt.Sprintf("image %s is not from an allowed registry (%s)", strings.Join(refused, ", "), strings.Join(b.allowed, ", ")),
	}, refused
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func (b *imagePolicyBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var review imagepolicyv1alpha1.ImageReview
	if r.Method != http.MethodPost {
		http.Error(w, "POST an ImageReview", http.StatusMethodNotAllowed)
		return
	}
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
		http.Error(w, "decoding the ImageReview: "+err.Error(), http.StatusBadRequest)
		return
	}
	status, refused := b.decide(review.Spec)
	b.record(review.Spec, refused)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(imagepolicyv1alpha1.ImageReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "imagepolicy.k8s.io/v1alpha1", Kind: "ImageReview"},
		Status:   status,
	})
}

func (b *imagePolicyBackend) record(spec imagepolicyv1alpha1.ImageReviewSpec, refused []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total++
	for _, image := range refused {
		b.denied[image]++
	}
	var images []string
	for _, c := range spec.Containers {
		images = append(images, c.Image)
	}
	decision := "allowed"
	if len(refused) > 0 {
		decision = "denied"
	}
	fmt.Fprintf(b.log, "%s %s namespace=%s images=%s\n", time.Now().UTC().Format(time.RFC3339Nano), decision, spec.Namespace, strings.Join(images, ","))
}

// startImagePolicyBackend serves the policy over HTTPS on a free loopback
// port, with a certificate made for this run, and writes into dir the
// kubeconfig that reaches it and an AdmissionConfiguration that fails
// closed (a backend that cannot be reached denies every pod). It returns
// that configuration's path.
func startImagePolicyBackend(dir string) (*imagePolicyBackend, string, error) {
	// The generated certificate is the server's, followed by its CA's.
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		return nil, "", fmt.Errorf("ImagePolicyWebhook backend: certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, "", fmt.Errorf("ImagePolicyWebhook backend: %w", err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("ImagePolicyWebhook backend: %w", err)
	}
	b := &imagePolicyBackend{
		allowed: imagePolicyRegistries, caPEM: certPEM, denied: map[string]int{},
		url: "https://" + listener.Addr().String() + "/imagepolicy",
	}
	config, err := b.writeConfig(dir)
	if err == nil {
		b.log, err = os.Create(filepath.Join(dir, "imagepolicy.log"))
	}
	if err != nil {
		listener.Close()
		return nil, "", err
	}
	b.server = &http.Server{Handler: b, TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair}}, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := b.server.ServeTLS(listener, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "conformance: ImagePolicyWebhook backend: %v\n", err)
		}
	}()
	return b, config, nil
}

// writeConfig writes the backend's kubeconfig and the AdmissionConfiguration
// naming it, and returns the latter's path.
func (b *imagePolicyBackend) writeConfig(dir string) (string, error) {
	kubeconfig := filepath.Join(dir, "imagepolicy-kubeconfig.yaml")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`# How ImagePolicyWebhook reaches the run's backend (cmd/conformance/internal/suite/imagepolicy.go).
apiVersion: v1
kind: Config
clusters:
- name: image-policy-backend
  cluster:
    certificate-authority-data: %s
    server: %s
users:
- name: kube-apiserver
  user: {}
contexts:
- name: image-policy
  context:
    cluster: image-policy-backend
    user: kube-apiserver
current-context: image-policy
`, base64.StdEncoding.EncodeToString(b.caPEM), b.url)), 0o600); err != nil {
		return "", err
	}
	config := filepath.Join(dir, "admission-config.yaml")
	return config, os.WriteFile(config, []byte(fmt.Sprintf(`# AdmissionConfiguration of impact-ImagePolicyWebhook: images only from %s,
# decisions cached as the documentation's example caches them, and a
# backend that cannot be reached denies the pod.
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ImagePolicyWebhook
  configuration:
    imagePolicy:
      kubeConfigFile: %s
      allowTTL: 50
      denyTTL: 50
      retryBackoff: 500
      defaultAllow: false
`, strings.Join(b.allowed, ", "), kubeconfig)), 0o600)
}

// report says how many reviews the backend answered and which images it
// denied, most often first.
func (b *imagePolicyBackend) report() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	images := make([]string, 0, len(b.denied))
	for image := range b.denied {
		images = append(images, image)
	}
	sort.Slice(images, func(i, j int) bool {
		if b.denied[images[i]] != b.denied[images[j]] {
			return b.denied[images[i]] > b.denied[images[j]]
		}
		return images[i] < images[j]
	})
	var s strings.Builder
	fmt.Fprintf(&s, "ImagePolicyWebhook backend: %d reviews, %d images denied (%s)\n", b.total, len(images), b.log.Name())
	for _, image := range images {
		fmt.Fprintf(&s, "  %s: denied %d times\n", image, b.denied[image])
	}
	return s.String()
}

func (b *imagePolicyBackend) stop() {
	_ = b.server.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	_ = b.log.Close()
}
