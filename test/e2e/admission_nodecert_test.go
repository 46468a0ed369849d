// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// The node and certificate area: NodeRestriction, the three Certificate*
// plugins, OwnerReferencesPermissionEnforcement, DefaultTolerationSeconds,
// PodTopologyLabels, NodeDeclaredFeatureValidator and TaintNodesByCondition,
// plus upstream's undocumented ClusterTrustBundleAttest and PodGroupProtection.
//
// Two apiservers run every case with the same flags but for the admission
// plugin lists: "on" enables the two default-off plugins of the area and
// keeps the default-on ones, "off" runs none of them. Every case states what
// "on" must do and that "off" must not, so a plugin missing from "on" turns
// its case red. Each server has its own etcd prefix, so node names can be
// reused and one server's objects never reach the other's informers.

// nodecertDefaultOff are the area's plugins that upstream leaves off.
var nodecertDefaultOff = []string{"NodeRestriction", "OwnerReferencesPermissionEnforcement"}

// nodecertDefaultOn are the area's plugins that upstream runs by default.
var nodecertDefaultOn = []string{
	"CertificateApproval", "CertificateSigning", "CertificateSubjectRestriction", "ClusterTrustBundleAttest",
	"DefaultTolerationSeconds", "NodeDeclaredFeatureValidator", "PodGroupProtection",
	"PodTopologyLabels", "TaintNodesByCondition",
}

// nodecertCommonArgs are the flags both servers share: non-default toleration
// seconds, and the feature gates and API versions the stretch plugins need
// (ClusterTrustBundle is GA, but its v1beta1 API, which the case uses, is
// off; GenericWorkload is beta and off).
// NodeDeclaredFeatures (GA) and PodTopologyLabelsAdmission (beta) are on by
// default, so they need no flag.
var nodecertCommonArgs = []string{
	"--default-not-ready-toleration-seconds=17",
	"--default-unreachable-toleration-seconds=42",
	"--feature-gates=ClusterTrustBundle=true,GenericWorkload=true",
	"--runtime-config=certificates.k8s.io/v1beta1/clustertrustbundles=true,scheduling.k8s.io/v1alpha3=true",
}

const (
	nodecertNotReadySeconds    = 17
	nodecertUnreachableSeconds = 42
)

// nodecertServer is one of the area's two apiservers.
type nodecertServer struct {
	name string
	// on says whether the area's plugins run on this server.
	on    bool
	api   *framework.APIServer
	admin kubernetes.Interface
}

func startNodecertServers(t *testing.T) (on, off *nodecertServer) {
	t.Helper()
	on = &nodecertServer{name: "nodecert-on", on: true}
	off = &nodecertServer{name: "nodecert-off"}
	onArgs := append([]string{"--enable-admission-plugins=" + strings.Join(nodecertDefaultOff, ",")}, nodecertCommonArgs...)
	offArgs := append([]string{"--disable-admission-plugins=" + strings.Join(nodecertDefaultOn, ",")}, nodecertCommonArgs...)

	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []*nodecertServer{on, off} {
		args := [][]string{onArgs, offArgs}[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.api, errs[i] = framework.StartAPIServer(framework.APIServerConfig{
				Dir: filepath.Join(root, s.name), Etcd: etcd, PKI: pki, Args: args,
			})
		}()
	}
	wg.Wait()
	for i, s := range []*nodecertServer{on, off} {
		if errs[i] == nil {
			t.Cleanup(func() {
				if err := s.api.Stop(syscall.SIGTERM); err != nil {
					t.Errorf("%s did not stop cleanly: %v\n%s", s.name, err, s.api.Tail(30))
				}
			})
		}
	}
	for i, s := range []*nodecertServer{on, off} {
		if errs[i] != nil {
			t.Fatalf("starting %s: %v", s.name, errs[i])
		}
		s.admin = s.as(t, "e2e-admin", "system:masters")
	}
	return on, off
}

// as returns a client that authenticates with a client certificate for user
// in groups.
func (s *nodecertServer) as(t *testing.T, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	c, err := s.api.Client(user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// forEachNodecertServer runs one case against both servers.
func forEachNodecertServer(t *testing.T, servers []*nodecertServer, run func(t *testing.T, s *nodecertServer)) {
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) { run(t, s) })
	}
}

// judged checks a request the plugin under test refuses: with the plugin
// (server "on") it must fail with 403 and say want; without it, it must
// succeed.
func (s *nodecertServer) judged(t *testing.T, what string, err error, want string) {
	t.Helper()
	if s.on {
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want 403 saying %q", what, err, want)
		}
	} else if err != nil {
		t.Errorf("%s, without the plugin: %v, want it admitted", what, err)
	}
}

// admittedNodecert checks a request that both servers must admit.
func admittedNodecert(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v, want it admitted", what, err)
	}
}

// grant gives user the rules through a ClusterRole and ClusterRoleBinding
// named nodecert-<name>, and waits until the authorizer has seen them:
// check is one request the rules allow.
func (s *nodecertServer) grant(t *testing.T, name, user string, check authorizationv1.ResourceAttributes, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	name = "nodecert-" + name
	rbac := s.admin.RbacV1()
	if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ClusterRole %s: %v", name, err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ClusterRoleBinding %s: %v", name, err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	s.waitAuthorized(t, user, check, true)
}

// waitAuthorized polls a SubjectAccessReview until the authorizer, which
// the admission plugins ask too, answers want for user.
func (s *nodecertServer) waitAuthorized(t *testing.T, user string, attrs authorizationv1.ResourceAttributes, want bool) {
	t.Helper()
	var last *authorizationv1.SubjectAccessReviewStatus
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		sar, err := s.admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &attrs},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		last = &sar.Status
		return sar.Status.Allowed == want, nil
	})
	if err != nil {
		t.Fatalf("%s: authorizer never answered allowed=%v for %s %+v: %v (last %+v)", s.name, want, user, attrs, err, last)
	}
}

// nodecertRetryWhileInformerLags repeats a request while the answer shows that an
// informer of the apiserver has not seen an object created a moment ago
// (NodeRestriction, NodeDeclaredFeatureValidator and PodResizeValidator look
// nodes and pods up in informers), and returns the last answer.
func nodecertRetryWhileInformerLags(do func() error) error {
	var last error
	_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		last = do()
		if last == nil {
			return true, nil
		}
		var status apierrors.APIStatus
		lagging := apierrors.IsNotFound(last) ||
			(errors.As(last, &status) && strings.Contains(status.Status().Message, "not found")) ||
			strings.Contains(last.Error(), "not yet ready to handle request")
		return !lagging, nil
	})
	return last
}

// TestNodeAndCertificateAdmission proves, case by case, that each plugin of
// the area works in our binary, and that without it the same requests have
// no such effect.
func TestNodeAndCertificateAdmission(t *testing.T) {
	t.Parallel() // long and independent of the others: see "Running in parallel" in README.md
	on, off := startNodecertServers(t)
	servers := []*nodecertServer{on, off}
	for _, tc := range []struct {
		plugin string
		run    func(t *testing.T, s *nodecertServer)
	}{
		{"NodeRestriction", nodecertNodeRestriction},
		{"TaintNodesByCondition", nodecertTaintNodesByCondition},
		{"DefaultTolerationSeconds", nodecertDefaultTolerationSeconds},
		{"PodTopologyLabels", nodecertPodTopologyLabels},
		{"NodeDeclaredFeatureValidator", nodecertNodeDeclaredFeatureValidator},
		{"CertificateApproval", nodecertCertificateApproval},
		{"CertificateSigning", nodecertCertificateSigning},
		{"CertificateSubjectRestriction", nodecertCertificateSubjectRestriction},
		{"ClusterTrustBundleAttest", nodecertClusterTrustBundleAttest},
		{"OwnerReferencesPermissionEnforcement", nodecertOwnerReferencesPermissionEnforcement},
		{"PodGroupProtection", nodecertPodGroupProtection},
	} {
		t.Run(tc.plugin, func(t *testing.T) { forEachNodecertServer(t, servers, tc.run) })
	}
}
