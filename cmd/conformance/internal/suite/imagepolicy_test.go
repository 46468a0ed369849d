// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	imagepolicyv1alpha1 "k8s.io/api/imagepolicy/v1alpha1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	turnstileadmission "github.com/turnstile-k8s/turnstile/pkg/admission"
	"github.com/turnstile-k8s/turnstile/pkg/admission/configfile"
)

// TestImagePolicyBackend starts the backend, checks that the admission
// configuration it writes is one the apiserver accepts, and asks it for
// reviews through the kubeconfig it wrote, as the apiserver does.
func TestImagePolicyBackend(t *testing.T) {
	dir := t.TempDir()
	b, config, err := startImagePolicyBackend(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.stop()

	o := kubeoptions.NewAdmissionOptions()
	if err := turnstileadmission.Apply(o.GenericAdmission); err != nil {
		t.Fatal(err)
	}
	if err := configfile.Validate(config, configfile.Plugins{Registered: o.GenericAdmission.Plugins.Registered(), Enabled: []string{"ImagePolicyWebhook"}}); err != nil {
		t.Fatalf("the apiserver would refuse the written configuration: %v", err)
	}

	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "imagepolicy-kubeconfig.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	review := func(images ...string) (imagepolicyv1alpha1.ImageReviewStatus, int) {
		t.Helper()
		var r imagepolicyv1alpha1.ImageReview
		r.Spec.Namespace = "conformance"
		for _, image := range images {
			r.Spec.Containers = append(r.Spec.Containers, imagepolicyv1alpha1.ImageReviewContainerSpec{Image: image})
		}
		body, _ := json.Marshal(r)
		resp, err := client.Post(rc.Host, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var answer imagepolicyv1alpha1.ImageReview
		if resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
				t.Fatal(err)
			}
			if answer.Kind != "ImageReview" || answer.APIVersion != "imagepolicy.k8s.io/v1alpha1" {
				t.Errorf("answer is %s %s, want imagepolicy.k8s.io/v1alpha1 ImageReview", answer.APIVersion, answer.Kind)
			}
		}
		return answer.Status, resp.StatusCode
	}

	for _, tc := range []struct {
		images  []string
		allowed bool
		reason  string
	}{
		{[]string{"registry.k8s.io/pause:3.10"}, true, ""},
		{[]string{"registry.k8s.io/e2e-test-images/agnhost:2.59", "registry.k8s.io/e2e-test-images/busybox:1.37.0-1"}, true, ""},
		{[]string{"nginx"}, false, "image nginx is not from an allowed registry (registry.k8s.io/)"},
		{[]string{"registry.k8s.io/pause:3.10", "docker.io/library/busybox"}, false, "image docker.io/library/busybox is not"},
		// A prefix of the name is not the registry.
		{[]string{"registry.k8s.io.example/pause"}, false, "registry.k8s.io.example/pause"},
	} {
		status, code := review(tc.images...)
		if code != http.StatusOK || status.Allowed != tc.allowed || !strings.Contains(status.Reason, tc.reason) {
			t.Errorf("%v: HTTP %d, %+v; want allowed=%v with reason %q", tc.images, code, status, tc.allowed, tc.reason)
		}
	}
	if resp, err := client.Get(rc.Host); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %v %v, want 405", resp, err)
	}
	if resp, err := client.Post(rc.Host, "application/json", strings.NewReader("{")); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad JSON: %v %v, want 400", resp, err)
	}

	report := b.report()
	for _, want := range []string{"5 reviews, 3 images denied", "nginx: denied 1 times", "docker.io/library/busybox: denied 1 times"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	b.stop()
	log, err := os.ReadFile(filepath.Join(dir, "imagepolicy.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), " denied namespace=conformance "); n != 3 {
		t.Errorf("the log has %d denials, want 3:\n%s", n, log)
	}
}
