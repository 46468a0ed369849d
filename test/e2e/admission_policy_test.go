// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// policyServers are the apiservers of the policy area, members of one
// control plane on an etcd prefix of their own (policies and bindings are
// cluster-wide objects that must not reach the shared server):
//
//   - on: EventRateLimit and AlwaysAdmit enabled, upstream's default plugins
//     (PodSecurity, ValidatingAdmissionPolicy, MutatingAdmissionPolicy,
//     NamespaceLifecycle ...), testdata/policy/admission-config.yaml, and a
//     file audit log;
//   - off: the same control plane with PodSecurity, ValidatingAdmissionPolicy,
//     MutatingAdmissionPolicy and NamespaceLifecycle disabled and neither
//     EventRateLimit nor AlwaysAdmit enabled, with its own audit log: every
//     negative case sends its request here;
//   - AlwaysDeny gets a third, short-lived server (admission_basic_test.go).
type policyServers struct {
	dir, prefix       string
	on, off           *framework.APIServer
	onAudit, offAudit string // audit log files
}

// policyUsersGroup is the group the tests' non-admin users are in; the
// servers' RBAC lets it work with events, configmaps and pods.
const policyUsersGroup = "e2e-policy-users"

// TestAdmissionPolicyPlugins proves ValidatingAdmissionPolicy,
// MutatingAdmissionPolicy, PodSecurity, EventRateLimit, NamespaceLifecycle,
// AlwaysAdmit and AlwaysDeny in our binary: each subtest shows the plugin's
// documented effect on the "on" server (AlwaysDeny's on a third) and its
// absence on the "off" server.
func TestAdmissionPolicyPlugins(t *testing.T) {
	t.Parallel() // long and independent of the others: see "Running in parallel" in README.md
	s := startPolicyServers(t)
	t.Run("EventRateLimit", func(t *testing.T) { testPolicyEventRateLimit(t, s) })
	t.Run("ValidatingAdmissionPolicy", func(t *testing.T) { testPolicyValidatingAdmissionPolicy(t, s) })
	t.Run("MutatingAdmissionPolicy", func(t *testing.T) { testPolicyMutatingAdmissionPolicy(t, s) })
	t.Run("PodSecurity", func(t *testing.T) { testPolicyPodSecurity(t, s) })
	t.Run("NamespaceLifecycle", func(t *testing.T) { testPolicyNamespaceLifecycle(t, s) })
	t.Run("AlwaysAdmit", func(t *testing.T) { testPolicyAlwaysAdmit(t, s) })
	t.Run("AlwaysDeny", func(t *testing.T) { testPolicyAlwaysDeny(t, s) })
}

func startPolicyServers(t *testing.T) *policyServers {
	t.Helper()
	dir, err := os.MkdirTemp(root, "policy-")
	if err != nil {
		t.Fatal(err)
	}
	s := &policyServers{dir: dir, prefix: filepath.Base(dir)}
	s.onAudit, s.offAudit = filepath.Join(dir, "on-audit.log"), filepath.Join(dir, "off-audit.log")
	auditPolicy := policyTestdata(t, "audit-policy.yaml")
	s.on = policyStartServer(t, s, "on",
		"--enable-admission-plugins=EventRateLimit,AlwaysAdmit",
		"--admission-control-config-file="+policyTestdata(t, "admission-config.yaml"),
		"--audit-policy-file="+auditPolicy, "--audit-log-path="+s.onAudit)
	s.off = policyStartServer(t, s, "off",
		"--disable-admission-plugins=PodSecurity,ValidatingAdmissionPolicy,MutatingAdmissionPolicy,NamespaceLifecycle",
		"--audit-policy-file="+auditPolicy, "--audit-log-path="+s.offAudit)
	policyGrantUsers(t, s)
	return s
}

// policyStartServer starts a member of the policy control plane; extra
// flags come after the defaults and so override them.
func policyStartServer(t *testing.T, s *policyServers, name string, args ...string) *framework.APIServer {
	t.Helper()
	srv, err := framework.StartAPIServer(framework.APIServerConfig{
		Dir: filepath.Join(s.dir, name), Etcd: etcd, PKI: pki,
		Args: append([]string{"--etcd-prefix=/" + s.prefix}, args...),
	})
	if err != nil {
		t.Fatalf("starting the policy-%s apiserver: %v", name, err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(syscall.SIGTERM); err != nil {
			t.Errorf("policy-%s apiserver did not stop cleanly: %v\n%s", name, err, srv.Tail(20))
		}
	})
	return srv
}

func policyTestdata(t *testing.T, name string) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", "policy", name))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// policyGrantUsers lets policyUsersGroup create and read events, configmaps
// and pods, and waits until the authorizer of both servers knows it.
func policyGrantUsers(t *testing.T, s *policyServers) {
	t.Helper()
	ctx := context.Background()
	admin := policyClient(t, s.on, "e2e-admin", "system:masters")
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-policy-user"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""},
			Resources: []string{"events", "configmaps", "pods"},
			Verbs:     []string{"create", "get", "list", "update", "patch", "delete"},
		}},
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-policy-user"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: policyUsersGroup}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	for _, srv := range []*framework.APIServer{s.on, s.off} {
		user := policyClient(t, srv, "e2e-policy-probe", policyUsersGroup)
		policyEventually(t, "RBAC for "+policyUsersGroup, func() (bool, error) {
			_, err := user.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{Limit: 1})
			if apierrors.IsForbidden(err) {
				return false, nil
			}
			return err == nil, err
		})
	}
}

// policyClient is a clientset for user in groups on srv.
func policyClient(t *testing.T, srv *framework.APIServer, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	c, err := srv.Client(user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// policyWarnings collects the Warning headers of the responses a client
// receives.
type policyWarnings struct {
	mu       sync.Mutex
	warnings []policyWarning
}

type policyWarning struct {
	code int
	text string
}

func (w *policyWarnings) HandleWarningHeader(code int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, policyWarning{code, text})
}

// take returns the texts of the warnings received since the last take that
// start with prefix, and checks that each came with code 299.
func (w *policyWarnings) take(t *testing.T, prefix string) []string {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	var texts []string
	for _, warning := range w.warnings {
		if !strings.HasPrefix(warning.text, prefix) {
			continue
		}
		if warning.code != 299 {
			t.Errorf("warning %q has code %d, want 299", warning.text, warning.code)
		}
		texts = append(texts, warning.text)
	}
	w.warnings = nil
	return texts
}

// policyWarnClient is a clientset for user in groups on srv whose
// responses' warnings are collected.
func policyWarnClient(t *testing.T, srv *framework.APIServer, user string, groups ...string) (kubernetes.Interface, *policyWarnings) {
	t.Helper()
	config, err := srv.Config(user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	warnings := &policyWarnings{}
	config.WarningHandler = warnings
	c, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return c, warnings
}

// policyNamespace creates a namespace with labels and the "default"
// ServiceAccount that kube-controller-manager would add, and deletes it
// afterwards (it then stays Terminating, as nothing finalizes it).
func policyNamespace(t *testing.T, c kubernetes.Interface, labels map[string]string) string {
	t.Helper()
	return createNamespaceFrom(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-policy-", Labels: labels}})
}

// policyEventually polls condition every 200ms for up to 30s.
func policyEventually(t *testing.T, what string, condition func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) {
			done, err := condition()
			last = err
			return done, nil
		})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last error: %v)", what, err, last)
	}
}

// policyAuditEvent waits for the ResponseComplete audit event of the
// (non dry-run) request that did verb on resource ns/name, and returns it.
func policyAuditEvent(t *testing.T, path, verb, resource, ns, name string) auditv1.Event {
	t.Helper()
	var found *auditv1.Event
	policyEventually(t, "audit event for "+verb+" "+resource+" "+ns+"/"+name, func() (bool, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return false, err
		}
		scanner := bufio.NewScanner(bytes.NewReader(data))
		scanner.Buffer(make([]byte, 0, 1<<20), 1<<24)
		for scanner.Scan() {
			var e auditv1.Event
			if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
				return false, err
			}
			if e.Stage == auditv1.StageResponseComplete && e.Verb == verb && e.ObjectRef != nil &&
				e.ObjectRef.Resource == resource && e.ObjectRef.Namespace == ns && e.ObjectRef.Name == name &&
				!strings.Contains(e.RequestURI, "dryRun") {
				found = &e
			}
		}
		return found != nil, scanner.Err()
	})
	return *found
}

var policyMetricLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)

// policyAdmissionCount sums apiserver_admission_controller_admission_duration_seconds_count
// of srv over the series whose labels include every pair of want (name,
// type, operation, rejected).
func policyAdmissionCount(t *testing.T, srv *framework.APIServer, want map[string]string) float64 {
	t.Helper()
	c := policyClient(t, srv, "e2e-admin", "system:masters")
	body, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	const metric = "apiserver_admission_controller_admission_duration_seconds_count{"
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, metric)
		if !ok {
			continue
		}
		labels, value, _ := strings.Cut(rest, "} ")
		got := map[string]string{}
		for _, m := range policyMetricLabel.FindAllStringSubmatch(labels, -1) {
			got[m[1]] = m[2]
		}
		match := true
		for k, v := range want {
			match = match && got[k] == v
		}
		if !match {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += n
	}
	return sum
}
