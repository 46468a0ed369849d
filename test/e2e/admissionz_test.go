// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"github.com/turnstile-k8s/turnstile/pkg/admission"
	"github.com/turnstile-k8s/turnstile/pkg/admission/admissionz"
	"github.com/turnstile-k8s/turnstile/pkg/admission/configfile"
)

// /admissionz shows the chain as it runs, in order, with where each
// plugin's configuration came from and its hash, and the last reload; it
// answers 403 to an anonymous user and to one without the grant.
func TestAdmissionz(t *testing.T) {
	t.Parallel() // its own apiserver: see "Running in parallel" in README.md
	ctx := context.Background()
	dir := t.TempDir()
	erl := filepath.Join(dir, "eventratelimit.yaml")
	write(t, erl, eventRateLimitConfig(100, 200))
	config := filepath.Join(dir, "admission.yaml")
	write(t, config, `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
  - name: EventRateLimit
    path: eventratelimit.yaml
  - name: PodNodeSelector
    configuration:
      podNodeSelectorPluginConfig:
        clusterDefaultNodeSelector: ""
`)
	enable := []string{"EventRateLimit", "PodNodeSelector", "SecurityContextDeny"}
	s, admin := startServer(t, "admissionz", "--enable-admission-plugins="+strings.Join(enable, ","), "--admission-control-config-file="+config)

	get := func(cfg *rest.Config, accept string) (int, []byte) {
		t.Helper()
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var status int
		body, _ := client.CoreV1().RESTClient().Get().AbsPath(admissionz.Path).SetHeader("Accept", accept).Do(ctx).StatusCode(&status).Raw()
		return status, body
	}
	viewer, err := s.Config("admissionz-viewer")
	if err != nil {
		t.Fatal(err)
	}
	anonymous := rest.AnonymousClientConfig(viewer)
	if status, body := get(anonymous, "text/plain"); status != http.StatusForbidden && status != http.StatusUnauthorized {
		t.Errorf("anonymous: %d, want 403 or 401:\n%s", status, body)
	}
	if status, body := get(viewer, "text/plain"); status != http.StatusForbidden {
		t.Errorf("a user without the grant: %d, want 403:\n%s", status, body)
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "admissionz-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{admissionz.Path}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "admissionz-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admissionz-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "admissionz-viewer"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var text []byte
	waitFor(t, "the grant", func() bool {
		var status int
		status, text = get(viewer, "text/plain")
		return status == http.StatusOK
	})
	for _, want := range []string{"configuration file:  " + config + " (sha256:", "last reload:         none", "EventRateLimit", "path " + erl} {
		if !strings.Contains(string(text), want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}

	status, body := get(viewer, "application/json")
	var report admissionz.Report
	if err := json.Unmarshal(body, &report); status != http.StatusOK || err != nil {
		t.Fatalf("JSON: %d, %v:\n%s", status, err, body)
	}
	// The chain holds the enabled plugins in the recommended order (a
	// plugin whose feature gate is off declines to run and is absent).
	o := kubeoptions.NewAdmissionOptions()
	if err := admission.Apply(o.GenericAdmission); err != nil {
		t.Fatal(err)
	}
	o.GenericAdmission.EnablePlugins = enable
	want := configfile.EnabledPlugins(o)
	var names []string
	byName := map[string]admissionz.Plugin{}
	for i, p := range report.Plugins {
		names = append(names, p.Name)
		byName[p.Name] = p
		if p.Position != i+1 {
			t.Errorf("%s at index %d has position %d", p.Name, i, p.Position)
		}
	}
	if !isSubsequence(names, want) || !slices.Contains(names, "NamespaceLifecycle") || !slices.Contains(names, "ResourceQuota") {
		t.Errorf("chain %v is not the enabled plugins %v in order", names, want)
	}
	erlBytes, err := os.ReadFile(erl)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(erlBytes)
	for name, check := range map[string]func(admissionz.Plugin) bool{
		"EventRateLimit": func(p admissionz.Plugin) bool {
			return p.Config == "path "+erl && p.ConfigSHA256 == hex.EncodeToString(sum[:]) && !p.DefaultOn && p.Reloadable
		},
		"PodNodeSelector": func(p admissionz.Plugin) bool { return p.Config == "inline" && p.ConfigSHA256 != "" },
		"SecurityContextDeny": func(p admissionz.Plugin) bool {
			return p.Config == "none" && slices.Equal(p.Phases, []string{"validating"})
		},
		"NamespaceLifecycle": func(p admissionz.Plugin) bool {
			return p.DefaultOn && !p.Reloadable && slices.Equal(p.Phases, []string{"mutating"})
		},
		"ResourceQuota": func(p admissionz.Plugin) bool { return !p.Reloadable && names[len(names)-1] == "ResourceQuota" },
	} {
		if !check(byName[name]) {
			t.Errorf("%s: %+v", name, byName[name])
		}
	}
	if report.ConfigFile != config || !strings.HasPrefix(report.ConfigHash, "sha256:") || report.LastReload != nil {
		t.Errorf("report header: file %q, hash %q, last reload %+v", report.ConfigFile, report.ConfigHash, report.LastReload)
	}

	write(t, erl, eventRateLimitConfig(50, 100))
	waitFor(t, "the reload on /admissionz", func() bool {
		_, body := get(viewer, "application/json")
		var r admissionz.Report
		return json.Unmarshal(body, &r) == nil && r.LastReload != nil && r.LastReload.Result == "success" && r.ConfigHash != report.ConfigHash
	})
}

// reloaded runs change, which rewrites the apiserver's admission
// configuration, and waits until /admissionz reports a successful reload to
// a configuration other than the one in force before: a test that compares
// decisions before and after must not take the old chain's for the new.
func reloaded(t *testing.T, admin kubernetes.Interface, change func()) {
	t.Helper()
	report := func() (admissionz.Report, error) {
		var r admissionz.Report
		body, err := admin.CoreV1().RESTClient().Get().AbsPath(admissionz.Path).SetHeader("Accept", "application/json").Do(context.Background()).Raw()
		if err == nil {
			err = json.Unmarshal(body, &r)
		}
		return r, err
	}
	before, err := report()
	if err != nil {
		t.Fatalf("%s: %v", admissionz.Path, err)
	}
	change()
	policyEventually(t, "the reload on "+admissionz.Path, func() (bool, error) {
		r, err := report()
		return err == nil && r.LastReload != nil && r.LastReload.Result == "success" && r.ConfigHash != before.ConfigHash, err
	})
}

// isSubsequence reports whether a is b with some elements left out.
func isSubsequence(a, b []string) bool {
	i := 0
	for _, x := range b {
		if i < len(a) && a[i] == x {
			i++
		}
	}
	return i == len(a)
}
