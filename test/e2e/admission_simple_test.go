// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// simpleOnPlugins are the default-off plugins the "on" server enables.
var simpleOnPlugins = []string{
	"AlwaysPullImages", "DenyServiceExternalIPs", "ExtendedResourceToleration",
	"LimitPodHardAntiAffinityTopology", "NamespaceAutoProvision", "NamespaceExists",
	"PodNodeSelector", "PodTolerationRestriction",
}

// simpleOffPlugins are the default-on plugins the "off" server disables.
var simpleOffPlugins = []string{
	"NamespaceLifecycle", "LimitRanger", "ServiceAccount", "Priority", "DefaultStorageClass",
	"DefaultIngressClass", "PersistentVolumeClaimResize", "StorageObjectInUseProtection",
	"ResourceQuota", "RuntimeClass", "PodResizeValidator",
}

// simpleServers are two kube-apiservers on one etcd prefix of their own, so an
// object written through one is seen by the other, as in an HA control plane
// whose members run different plugins:
//   - on: upstream's default plugins plus simpleOnPlugins, with
//     testdata/simple/admission-config.yaml (PodNodeSelector,
//     PodTolerationRestriction, ResourceQuota's limitedResources), and without
//     NamespaceLifecycle, which would hide NamespaceExists;
//   - off: upstream's default plugins minus simpleOffPlugins.
//
// Each plugin's case shows its effect through "on" and its absence through
// "off", so a plugin missing from "on" turns its case red.
type simpleServers struct {
	on, off kubernetes.Interface
}

// TestSimpleAdmission proves, one subtest per plugin, that the
// upstream-backed admission controllers of the documentation work in our
// binary.
func TestSimpleAdmission(t *testing.T) {
	t.Parallel() // its own apiserver: see "Running in parallel" in README.md
	s := startSimpleServers(t)
	for _, tc := range []struct {
		plugin string
		test   func(*testing.T, simpleServers)
	}{
		{"AlwaysPullImages", testSimpleAlwaysPullImages},
		{"DefaultIngressClass", testSimpleDefaultIngressClass},
		{"DefaultStorageClass", testSimpleDefaultStorageClass},
		{"DenyServiceExternalIPs", testSimpleDenyServiceExternalIPs},
		{"ExtendedResourceToleration", testSimpleExtendedResourceToleration},
		{"LimitPodHardAntiAffinityTopology", testSimpleLimitPodHardAntiAffinityTopology},
		{"LimitRanger", testSimpleLimitRanger},
		{"NamespaceAutoProvision", testSimpleNamespaceAutoProvision},
		{"NamespaceExists", testSimpleNamespaceExists},
		{"PersistentVolumeClaimResize", testSimplePersistentVolumeClaimResize},
		{"PodNodeSelector", testSimplePodNodeSelector},
		{"PodResizeValidator", testSimplePodResizeValidator},
		{"PodTolerationRestriction", testSimplePodTolerationRestriction},
		{"Priority", testSimplePriority},
		{"ResourceQuota", testSimpleResourceQuota},
		{"RuntimeClass", testSimpleRuntimeClass},
		{"ServiceAccount", testSimpleServiceAccount},
		{"StorageObjectInUseProtection", testSimpleStorageObjectInUseProtection},
	} {
		t.Run(tc.plugin, func(t *testing.T) { tc.test(t, s) })
	}
}

func startSimpleServers(t *testing.T) simpleServers {
	t.Helper()
	config, err := filepath.Abs("testdata/simple/admission-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	args := map[string][]string{
		"simple-on": {
			"--enable-admission-plugins=" + strings.Join(simpleOnPlugins, ","),
			"--disable-admission-plugins=NamespaceLifecycle",
			"--admission-control-config-file=" + config,
		},
		"simple-off": {"--disable-admission-plugins=" + strings.Join(simpleOffPlugins, ",")},
	}
	// A fresh prefix for each start, so -count=N does not meet the
	// namespaces (Terminating forever) of the previous run.
	prefix := "/simple-" + utilrand.String(5)
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		clients = map[string]kubernetes.Interface{}
		errs    []error
	)
	for name, extra := range args {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := framework.StartAPIServer(framework.APIServerConfig{
				Dir: filepath.Join(root, name), Etcd: etcd, PKI: pki,
				Args: append([]string{"--etcd-prefix=" + prefix}, extra...),
			})
			var c kubernetes.Interface
			if err == nil {
				t.Cleanup(func() {
					if err := s.Stop(syscall.SIGTERM); err != nil {
						t.Errorf("%s did not stop cleanly: %v", name, err)
					}
				})
				c, err = s.Client("e2e-admin", "system:masters")
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			clients[name] = c
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("starting the servers: %v", errs)
	}
	return simpleServers{on: clients["simple-on"], off: clients["simple-off"]}
}

const simpleImage = "registry.k8s.io/pause:3.10"

// simpleNamespace creates a namespace (name "" generates one) with
// annotations and the "default" ServiceAccount, and deletes it afterwards.
// Without kube-controller-manager a deleted namespace stays Terminating,
// with whatever it holds, under this run's etcd prefix.
func simpleNamespace(t *testing.T, c kubernetes.Interface, name string, annotations map[string]string) string {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
	if name == "" {
		ns.GenerateName = "e2e-"
	}
	ns, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() {
		_ = c.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	if _, err := c.CoreV1().ServiceAccounts(ns.Name).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the default service account: %v", err)
	}
	return ns.Name
}

// simplePod is a one-container pod with no resources (BestEffort).
func simplePod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: simpleImage}}},
	}
}

var simpleDryRun = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

// simpleForbidden fails unless err is a 403 whose message contains want.
func simpleForbidden(t *testing.T, what string, err error, want string) {
	t.Helper()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: got %v, want 403 %q", what, err, want)
	}
}

// simpleRejectedWith fails unless err is an API error with HTTP status code
// whose message contains want.
func simpleRejectedWith(t *testing.T, what string, err error, code int32, want string) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != code || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: got %v, want %d %q", what, err, code, want)
	}
}

// simpleEventually polls cond until it holds. Plugins that read an informer
// (Priority, DefaultStorageClass, ...) see a new object a moment after its
// create returns; cond returns its last observation for the failure message.
func simpleEventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true,
		func(context.Context) (bool, error) {
			var ok bool
			ok, last = cond()
			return ok, nil
		})
	if err != nil {
		t.Fatalf("%s: never happened; last: %s", what, last)
	}
}

// simpleAfterSecond waits until the clock is past the second of ts, so an
// object created next has a later creationTimestamp (whole seconds).
func simpleAfterSecond(t *testing.T, ts metav1.Time) {
	t.Helper()
	simpleEventually(t, "the clock passing "+ts.String(), func() (bool, string) {
		return time.Now().Truncate(time.Second).After(ts.Time), time.Now().String()
	})
}

func simpleHasToleration(tols []corev1.Toleration, key string) bool {
	return slices.ContainsFunc(tols, func(tol corev1.Toleration) bool { return tol.Key == key })
}
