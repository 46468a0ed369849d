// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/internal/process"
	policyv1beta1 "github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
	pspclient "github.com/turnstile-k8s/turnstile/pkg/client/clientset/versioned"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

const (
	pspAnnotation    = "kubernetes.io/psp"
	pspAdmitAudit    = "podsecuritypolicy.policy.k8s.io/admit-policy"
	pspValidateAudit = "podsecuritypolicy.policy.k8s.io/validate-policy"
	// pspUsersGroup is the group of the tests' users; RBAC lets it work
	// with pods, and nothing more: each user's `use` grants are its own.
	pspUsersGroup = "e2e-psp-users"

	pspCannotAdmit    = "PodSecurityPolicy: unable to admit pod: ["
	pspCannotValidate = "PodSecurityPolicy: unable to validate pod: ["
	// What a requester who may use no policy is told.
	pspNoneUsable      = "PodSecurityPolicy: unable to admit pod: []"
	pspNoneToValidate  = "PodSecurityPolicy: unable to validate pod: []"
	pspViolatesPSA     = `violates PodSecurity "restricted:latest"`
	pspPauseImage      = "registry.k8s.io/pause:3.10"
	pspOtherPauseImage = "registry.k8s.io/pause:3.9"
)

// The tests' requesters. Each is in pspUsersGroup; its `use` grants are:
const (
	pspAlice   = "e2e-psp-alice"   // restricted: a Role in namespace a, a RoleBinding to a ClusterRole in enforce
	pspBob     = "e2e-psp-bob"     // none; the ServiceAccount psp-sa of namespace a has baseline (RoleBinding)
	pspCarol   = "e2e-psp-carol"   // privileged, cluster-wide (ClusterRoleBinding)
	pspDave    = "e2e-psp-dave"    // sel-a-mutating and sel-b-open, cluster-wide
	pspErin    = "e2e-psp-erin"    // order-1 and order-2 in namespace a
	pspFrank   = "e2e-psp-frank"   // mutating-ranges in namespace a, by a Role in API group extensions
	pspMallory = "e2e-psp-mallory" // none
	pspSync    = "e2e-psp-sync"    // zz-sync, the policy created last
	pspSA      = "psp-sa"
)

// pspEnv is a control plane of three apiservers on an etcd prefix of its own
// (policies and RBAC are cluster-wide):
//
//   - main: PodSecurityPolicy enabled (next to upstream's defaults, so
//     PodSecurity too), the API also named by --runtime-config, a file audit log;
//   - plain: PodSecurityPolicy enabled and nothing else: the plugin alone
//     makes the apiserver serve policy/v1beta1 podsecuritypolicies;
//     kube-controller-manager runs against it;
//   - off: the API served by --runtime-config, the plugin off. Every case
//     sends its request here too (as a dry run where it would change the
//     shared objects) and expects upstream's behaviour without PSP.
type pspEnv struct {
	main, plain, off *framework.APIServer
	dir, audit       string
	nsA, nsB, nsEnf  string
}

// TestPodSecurityPolicyAdmission drives the restored PodSecurityPolicy
// plugin through the real binary: selection and authorization (users and
// service accounts, RoleBindings and ClusterRoleBindings, groups policy and
// extensions), mutation, rejection messages, the kubernetes.io/psp
// annotation and the audit annotations, UPDATE validation,
// pods/ephemeralcontainers, coexistence with PodSecurity, a Deployment's
// pods created by kube-controller-manager, and the API served because the
// plugin is enabled.
func TestPodSecurityPolicyAdmission(t *testing.T) {
	e := startPSPEnv(t)
	kcm := startPSPControllerManager(t, e.plain, e.dir)
	admin := e.client(t, e.main, "e2e-admin", "system:masters")
	e.nsA = createNamespaceFrom(t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-psp-a-"}})
	e.nsB = createNamespaceFrom(t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-psp-b-"}})
	e.nsEnf = createNamespaceFrom(t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "e2e-psp-enforce-",
		Labels:       map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}})

	// Before any policy exists every pod is refused, even system:masters'.
	t.Run("no policies", func(t *testing.T) {
		_, err := admin.CoreV1().Pods(e.nsA).Create(context.Background(), pausePod("no-policies", ""), metav1.CreateOptions{})
		pspExpectDenied(t, "pod with no policies", err, "no-policies", "PodSecurityPolicy: no providers available to validate pod request")
		offAdmin := e.client(t, e.off, "e2e-admin", "system:masters")
		if _, err := offAdmin.CoreV1().Pods(e.nsA).Create(context.Background(), pausePod("no-policies-off", ""), pspDryRun); err != nil {
			t.Errorf("plugin off: %v, want admitted", err)
		}
	})

	e.createFixtures(t)
	deployments := e.createDeployments(t)

	t.Run("create", func(t *testing.T) { testPSPCreate(t, e) })
	t.Run("update", func(t *testing.T) { testPSPUpdate(t, e) })
	t.Run("ephemeral containers", func(t *testing.T) { testPSPEphemeralContainers(t, e) })
	t.Run("PodSecurity validates first", func(t *testing.T) { testPSPPodSecurityFirst(t, e) })
	t.Run("Deployment through kube-controller-manager", func(t *testing.T) { testPSPDeployments(t, e, kcm, deployments) })
	t.Run("API served by the plugin alone", func(t *testing.T) { testPSPServedByPlugin(t, e) })
}

// TestPodSecurityPolicyAdmissionNeedsItsAPI: with the plugin enabled,
// switching its API off by --runtime-config stops the binary at startup
// with a message that says what to change.
func TestPodSecurityPolicyAdmissionNeedsItsAPI(t *testing.T) {
	for flag, want := range map[string]string{
		"--runtime-config=policy/v1beta1/podsecuritypolicies=false": "--runtime-config=policy/v1beta1/podsecuritypolicies=false disables the API that the PodSecurityPolicy admission plugin needs: remove it or disable the plugin",
		"--runtime-config=policy/v1beta1=false":                     "--runtime-config disables policy/v1beta1, which the PodSecurityPolicy admission plugin needs: enable policy/v1beta1/podsecuritypolicies or disable the plugin",
	} {
		t.Run(flag, func(t *testing.T) {
			t.Parallel()
			port, err := framework.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			args := framework.WithoutPluginArgs(configCheckArgs(t, "--enable-admission-plugins=PodSecurityPolicy", flag,
				"--etcd-prefix=/psp-refused", "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port)))
			stdout, stderr, err := execBinary(t, "kube-apiserver", args...)
			out := strings.ReplaceAll(stdout+stderr, `\"`, `"`)
			if err == nil || !strings.Contains(out, want) {
				t.Errorf("kube-apiserver %v: err=%v, output lacks %q:\n%s", args, err, want, tail(out, 20))
			}
		})
	}
}

var pspDryRun = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

func startPSPEnv(t *testing.T) *pspEnv {
	t.Helper()
	dir, err := os.MkdirTemp(root, "psp-admission-")
	if err != nil {
		t.Fatal(err)
	}
	e := &pspEnv{dir: dir, audit: filepath.Join(dir, "main-audit.log")}
	prefix := "--etcd-prefix=/" + filepath.Base(dir)
	args := map[string][]string{
		"main": {prefix, "--enable-admission-plugins=PodSecurityPolicy", pspRuntimeConfig,
			"--audit-policy-file=" + policyTestdata(t, "audit-policy.yaml"), "--audit-log-path=" + e.audit},
		"plain": {prefix, "--enable-admission-plugins=PodSecurityPolicy"},
		"off":   {prefix, pspRuntimeConfig},
	}
	// Started together: they are members of one control plane.
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		servers = map[string]*framework.APIServer{}
		errs    []error
	)
	for name, a := range args {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := framework.StartAPIServer(framework.APIServerConfig{Dir: filepath.Join(dir, name), Etcd: etcd, PKI: pki, Args: a})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("starting the psp-%s apiserver: %w", name, err))
				return
			}
			servers[name] = s
		}()
	}
	wg.Wait()
	for name, s := range servers {
		t.Cleanup(func() {
			if err := s.Stop(syscall.SIGTERM); err != nil {
				t.Errorf("psp-%s apiserver did not stop cleanly: %v\n%s", name, err, s.Tail(20))
			}
		})
	}
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	e.main, e.plain, e.off = servers["main"], servers["plain"], servers["off"]
	return e
}

func (e *pspEnv) client(t *testing.T, srv *framework.APIServer, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	c, err := srv.Client(user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// user is a clientset on srv for one of the tests' requesters.
func (e *pspEnv) user(t *testing.T, srv *framework.APIServer, name string) kubernetes.Interface {
	return e.client(t, srv, name, pspUsersGroup)
}

// startPSPControllerManager runs kube-controller-manager's deployment and
// replicaset controllers against srv, as kubeadm runs them: as
// system:kube-controller-manager, each controller with its own service
// account's credentials.
func startPSPControllerManager(t *testing.T, srv *framework.APIServer, dir string) *process.Process {
	t.Helper()
	bin, err := framework.Binary("kube-controller-manager")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "controller-manager.conf")
	if err := srv.WriteKubeconfig(kubeconfig, "system:kube-controller-manager"); err != nil {
		t.Fatal(err)
	}
	p, err := process.Start("kube-controller-manager", filepath.Join(dir, "kube-controller-manager.log"), []string{bin,
		"--kubeconfig=" + kubeconfig, "--leader-elect=false", "--secure-port=0", "--use-service-account-credentials=true",
		"--controllers=deployment-controller,replicaset-controller"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(syscall.SIGTERM, 30*time.Second); err != nil && !process.EndedBy(err, syscall.SIGTERM) {
			t.Errorf("kube-controller-manager: %v\n%s", err, p.Tail(20))
		}
	})
	return p
}

// pspPermissive allows everything and mutates nothing.
func pspPermissive(name string) *policyv1beta1.PodSecurityPolicy {
	return &policyv1beta1.PodSecurityPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			"seccomp.security.alpha.kubernetes.io/allowedProfileNames": "*",
		}},
		Spec: policyv1beta1.PodSecurityPolicySpec{
			Privileged:               true,
			AllowPrivilegeEscalation: ptr.To(true),
			AllowedCapabilities:      []corev1.Capability{"*"},
			Volumes:                  []policyv1beta1.FSType{policyv1beta1.All},
			HostNetwork:              true,
			HostPID:                  true,
			HostIPC:                  true,
			HostPorts:                []policyv1beta1.HostPortRange{{Min: 0, Max: 65535}},
			SELinux:                  policyv1beta1.SELinuxStrategyOptions{Rule: policyv1beta1.SELinuxStrategyRunAsAny},
			RunAsUser:                policyv1beta1.RunAsUserStrategyOptions{Rule: policyv1beta1.RunAsUserStrategyRunAsAny},
			SupplementalGroups:       policyv1beta1.SupplementalGroupsStrategyOptions{Rule: policyv1beta1.SupplementalGroupsStrategyRunAsAny},
			FSGroup:                  policyv1beta1.FSGroupStrategyOptions{Rule: policyv1beta1.FSGroupStrategyRunAsAny},
		},
	}
}

// pspMustRunAs is pspPermissive with runAsUser pinned to uid, so it
// defaults the container's runAsUser of pods that set none.
func pspMustRunAs(name string, uid int64) *policyv1beta1.PodSecurityPolicy {
	p := pspPermissive(name)
	p.Spec.RunAsUser = policyv1beta1.RunAsUserStrategyOptions{
		Rule: policyv1beta1.RunAsUserStrategyMustRunAs, Ranges: []policyv1beta1.IDRange{{Min: uid, Max: uid}},
	}
	return p
}

// pspBaseline forbids privileged containers and host namespaces and
// defaults seccomp (any allowed) and AppArmor to runtime/default.
func pspBaseline() *policyv1beta1.PodSecurityPolicy {
	p := pspPermissive("baseline")
	p.Annotations = map[string]string{
		"seccomp.security.alpha.kubernetes.io/allowedProfileNames": "*",
		"seccomp.security.alpha.kubernetes.io/defaultProfileName":  "runtime/default",
		"apparmor.security.beta.kubernetes.io/defaultProfileName":  "runtime/default",
	}
	p.Spec.Privileged, p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC, p.Spec.HostPorts = false, false, false, false, nil
	return p
}

// createFixtures makes the policies (those of a v1.24 cluster applied with
// kubectl, and more through the typed client), the RBAC grants, the
// service accounts and the RuntimeClass, then waits until both apiservers
// with the plugin authorize with the grants and see every policy.
func (e *pspEnv) createFixtures(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	admin := e.client(t, e.main, "e2e-admin", "system:masters")

	// The v1.24 manifests' policies (privileged, restricted,
	// mutating-ranges), applied with kubectl as when migrating a cluster;
	// their RBAC would grant restricted to everyone, so it is left out.
	var docs []string
	for _, doc := range strings.Split(string(readTestdata(t, "psp-v1.24-manifests.yaml")), "\n---\n") {
		if strings.Contains(doc, "\nkind: PodSecurityPolicy\n") {
			docs = append(docs, doc)
		}
	}
	manifests := filepath.Join(e.dir, "v1.24-policies.yaml")
	if err := os.WriteFile(manifests, []byte(strings.Join(docs, "\n---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(e.dir, "admin.conf")
	if err := e.main.WriteKubeconfig(kubeconfig, "e2e-admin", "system:masters"); err != nil {
		t.Fatal(err)
	}
	out := runBinary(t, "kubectl", "--kubeconfig", kubeconfig, "apply", "-f", manifests)
	if strings.Count(out, "created") != 3 {
		t.Fatalf("kubectl apply of the v1.24 policies:\n%s", out)
	}

	if _, err := admin.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "runc"}, Handler: "runc", // mutating-ranges' default
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{e.nsA, e.nsB} {
		if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: pspSA}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	use := func(group string, names ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{"podsecuritypolicies"}, Verbs: []string{"use"}, ResourceNames: names}
	}
	user := func(name string) rbacv1.Subject {
		return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}
	}
	clusterRole := func(name string, rules ...rbacv1.PolicyRule) {
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clusterBinding := func(role string, subjects ...rbacv1.Subject) {
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role + ":" + subjects[0].Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   subjects,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	binding := func(ns, kind, role string, subject rbacv1.Subject) {
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role + ":" + subject.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
			Subjects:   []rbacv1.Subject{subject},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	role := func(ns, name string, rules ...rbacv1.PolicyRule) {
		if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	clusterRole("e2e-psp-pods", rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"pods", "pods/ephemeralcontainers"},
		Verbs: []string{"create", "get", "list", "update", "patch", "delete"},
	})
	clusterBinding("e2e-psp-pods", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: pspUsersGroup})

	policies := pspclient.NewForConfigOrDie(pspConfig(t, e.main)).PolicyV1beta1().PodSecurityPolicies()
	for _, p := range []*policyv1beta1.PodSecurityPolicy{
		pspBaseline(),
		pspMustRunAs("sel-a-mutating", 1000), pspPermissive("sel-b-open"),
		pspMustRunAs("order-2", 2), pspMustRunAs("order-1", 1),
	} {
		if _, err := policies.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating policy %s: %v", p.Name, err)
		}
	}

	role(e.nsA, "psp-restricted", use("policy", "restricted"))
	binding(e.nsA, "Role", "psp-restricted", user(pspAlice))
	clusterRole("psp:restricted", use("policy", "restricted"))
	binding(e.nsEnf, "ClusterRole", "psp:restricted", user(pspAlice))
	clusterRole("psp:baseline", use("policy", "baseline"))
	binding(e.nsA, "ClusterRole", "psp:baseline", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: pspSA, Namespace: e.nsA})
	clusterRole("psp:privileged", use("policy", "privileged"))
	clusterBinding("psp:privileged", user(pspCarol))
	clusterRole("psp:selection", use("policy", "sel-a-mutating", "sel-b-open"))
	clusterBinding("psp:selection", user(pspDave))
	clusterRole("psp:order", use("policy", "order-1", "order-2"))
	binding(e.nsA, "ClusterRole", "psp:order", user(pspErin))
	role(e.nsA, "psp-mutating-ranges", use("extensions", "mutating-ranges"))
	binding(e.nsA, "Role", "psp-mutating-ranges", user(pspFrank))
	clusterRole("psp:zz-sync", use("policy", "zz-sync"))
	clusterBinding("psp:zz-sync", user(pspSync))

	// Created last: once a server's plugin admits a pod with it, its
	// informer has seen every policy before it.
	if _, err := policies.Create(ctx, pspPermissive("zz-sync"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	type grant struct{ user, ns, group, psp string }
	saUser := "system:serviceaccount:" + e.nsA + ":" + pspSA
	grants := []grant{
		{pspAlice, e.nsA, "policy", "restricted"}, {pspAlice, e.nsEnf, "policy", "restricted"},
		{saUser, e.nsA, "policy", "baseline"}, {pspCarol, e.nsB, "policy", "privileged"},
		{pspDave, e.nsA, "policy", "sel-b-open"}, {pspErin, e.nsA, "policy", "order-2"},
		{pspFrank, e.nsA, "extensions", "mutating-ranges"}, {pspSync, e.nsA, "policy", "zz-sync"},
	}
	for _, srv := range []*framework.APIServer{e.main, e.plain, e.off} {
		c := e.client(t, srv, "e2e-admin", "system:masters")
		allowed := func(user, ns, group, verb, resource, name string) func() (bool, error) {
			return func() (bool, error) {
				r, err := c.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
					Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{pspUsersGroup}, ResourceAttributes: &authorizationv1.ResourceAttributes{
						Namespace: ns, Verb: verb, Group: group, Resource: resource, Name: name,
					}},
				}, metav1.CreateOptions{})
				return err == nil && r.Status.Allowed, err
			}
		}
		policyEventually(t, "RBAC for pods", allowed(pspMallory, e.nsB, "", "patch", "pods", ""))
		for _, g := range grants {
			policyEventually(t, "use of "+g.psp+" by "+g.user, allowed(g.user, g.ns, g.group, "use", "podsecuritypolicies", g.psp))
		}
	}
	// Not fatal: without the plugin (hack/e2e-mutation.sh) every case
	// should still run, and fail on its own.
	for name, srv := range map[string]*framework.APIServer{"main": e.main, "plain": e.plain} {
		c := e.user(t, srv, pspSync)
		var last string
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			p, err := c.CoreV1().Pods(e.nsA).Create(ctx, pausePod("sync", ""), pspDryRun)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			last = pspAnnotation + "=" + p.Annotations[pspAnnotation]
			return p.Annotations[pspAnnotation] == "zz-sync", nil
		}); err != nil {
			t.Errorf("%s: the plugin did not admit a pod with zz-sync, the policy created last: %v (last: %s)", name, err, last)
		}
	}
}

func pspConfig(t *testing.T, srv *framework.APIServer) *rest.Config {
	t.Helper()
	cfg, err := srv.Config("e2e-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	cfg.WarningHandler = rest.NoWarnings{} // the API's deprecation warning; TestPodSecurityPolicyAPI checks it
	return cfg
}

// pspCreateCase is a pod created by user in namespace ns ("a", "b" or
// "enforce") through the main server, and again, as a dry run, through the
// server without the plugin.
type pspCreateCase struct {
	name, user, ns, sa string
	pod                func(*corev1.Pod)
	// want is the policy named by kubernetes.io/psp; with it, wantPodSC and
	// wantCtrSC are the pod's and its container's securityContext as JSON
	// ("" expects them as sent: the policy mutated nothing).
	want                 string
	wantPodSC, wantCtrSC string
	check                func(t *testing.T, p *corev1.Pod)
	// denied are substrings of the 403, the first after
	// `pods "<name>" is forbidden: `.
	denied []string
	// admittedByPSP: the plugin admitted the pod (admit-policy audit
	// annotation), and a validating plugin after it denied it.
	admittedByPSP string
	// offDenied is the 403 without the plugin; "" expects the pod admitted
	// as sent.
	offDenied string
}

const (
	pspRestrictedPodSC = `{"fsGroup":1,"supplementalGroups":[1],"seccompProfile":{"type":"RuntimeDefault"}}`
	pspRestrictedCtrSC = `{"runAsNonRoot":true,"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]},"appArmorProfile":{"type":"RuntimeDefault"}}`
	pspRangesPodSC     = `{"fsGroup":1000,"seLinuxOptions":{"level":"s0:c123,c456"}}`
	pspRangesCtrSC     = `{"runAsUser":1000,"allowPrivilegeEscalation":false,"capabilities":{"add":["NET_BIND_SERVICE"],"drop":["NET_RAW"]}}`
)

func pspCtrSC(p *corev1.Pod) *corev1.SecurityContext {
	if p.Spec.Containers[0].SecurityContext == nil {
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{}
	}
	return p.Spec.Containers[0].SecurityContext
}

func pspPodSC(p *corev1.Pod) *corev1.PodSecurityContext {
	if p.Spec.SecurityContext == nil {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	return p.Spec.SecurityContext
}

func pspPrivileged(p *corev1.Pod) { pspCtrSC(p).Privileged = ptr.To(true) }

func pspHostPath(readOnly bool) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "logs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log/app"}}})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "logs", MountPath: "/logs", ReadOnly: readOnly})
	}
}

func pspImageVolume(p *corev1.Pod) {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "tools", VolumeSource: corev1.VolumeSource{
		Image: &corev1.ImageVolumeSource{Reference: pspPauseImage, PullPolicy: corev1.PullIfNotPresent},
	}})
}

func pspSysctl(name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { pspPodSC(p).Sysctls = []corev1.Sysctl{{Name: name, Value: "1024"}} }
}

// pspPinnedForRanges sets what mutating-ranges would default, so that the
// policy judges the pod without changing it.
func pspPinnedForRanges(p *corev1.Pod) {
	sc := pspPodSC(p)
	sc.FSGroup = ptr.To[int64](1000)
	sc.SELinuxOptions = &corev1.SELinuxOptions{Level: "s0:c123,c456"}
	p.Spec.RuntimeClassName = ptr.To("runc")
	p.Spec.Containers[0].SecurityContext = pspPinnedContainerSC()
}

func pspPinnedContainerSC() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsUser:                ptr.To[int64](1000),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}, Drop: []corev1.Capability{"NET_RAW"}},
	}
}

func testPSPCreate(t *testing.T, e *pspEnv) {
	ranges := func(t *testing.T, p *corev1.Pod) {
		if p.Spec.RuntimeClassName == nil || *p.Spec.RuntimeClassName != "runc" {
			t.Errorf("runtimeClassName %v, want mutating-ranges' default runc", p.Spec.RuntimeClassName)
		}
	}
	cases := []pspCreateCase{
		// restricted (v1.24's manifest): every default, and its limits.
		{name: "restricted-defaults", user: pspAlice, ns: "a", want: "restricted", wantPodSC: pspRestrictedPodSC, wantCtrSC: pspRestrictedCtrSC},
		{name: "restricted-privileged", user: pspAlice, ns: "a", pod: pspPrivileged,
			denied: []string{pspCannotAdmit, "Privileged containers are not allowed"}},
		{name: "restricted-seccomp-field", user: pspAlice, ns: "a",
			pod: func(p *corev1.Pod) {
				pspPodSC(p).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
			},
			denied: []string{pspCannotAdmit, "unconfined is not an allowed seccomp profile"}},
		// Nodes ignore the seccomp annotation since v1.25: the profile it
		// names is written into the field, which they apply.
		{name: "restricted-seccomp-annotation", user: pspAlice, ns: "a", want: "restricted", wantPodSC: pspRestrictedPodSC, wantCtrSC: pspRestrictedCtrSC,
			pod: func(p *corev1.Pod) {
				p.Annotations = map[string]string{"seccomp.security.alpha.kubernetes.io/pod": "docker/default"}
			}},
		{name: "restricted-apparmor-field", user: pspAlice, ns: "a",
			pod: func(p *corev1.Pod) {
				pspCtrSC(p).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
			},
			denied: []string{pspCannotAdmit, "unconfined is not an allowed profile"}},
		{name: "restricted-localhost-seccomp-field", user: pspAlice, ns: "a",
			pod: func(p *corev1.Pod) {
				pspPodSC(p).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("e2e.json")}
			},
			denied: []string{pspCannotAdmit, "localhost/e2e.json is not an allowed seccomp profile"}},
		{name: "restricted-image-volume", user: pspAlice, ns: "a", pod: pspImageVolume,
			denied: []string{pspCannotAdmit, "image volumes are not allowed to be used"}},
		// Grants: a RoleBinding counts in its namespace only; nobody else's.
		{name: "rolebinding-other-namespace", user: pspAlice, ns: "b", denied: []string{pspNoneUsable}},
		{name: "no-grant", user: pspMallory, ns: "a", denied: []string{pspNoneUsable}},
		// The pod's service account's grant counts for any requester.
		{name: "sa-rolebinding", user: pspBob, ns: "a", sa: pspSA, want: "baseline",
			wantPodSC: `{"seccompProfile":{"type":"RuntimeDefault"}}`, wantCtrSC: `{"appArmorProfile":{"type":"RuntimeDefault"}}`},
		{name: "sa-other-namespace", user: pspBob, ns: "b", sa: pspSA, denied: []string{pspNoneUsable}},
		{name: "sa-without-grant", user: pspBob, ns: "a", denied: []string{pspNoneUsable}},
		// Windows pods get none of the Linux-only defaults.
		{name: "sa-windows", user: pspBob, ns: "a", sa: pspSA, want: "baseline",
			pod: func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} }},
		{name: "sa-privileged", user: pspBob, ns: "a", sa: pspSA, pod: pspPrivileged,
			denied: []string{pspCannotAdmit, "Privileged containers are not allowed"}},
		// A ClusterRoleBinding counts everywhere; privileged changes nothing.
		{name: "clusterrolebinding-privileged", user: pspCarol, ns: "b", want: "privileged",
			pod: func(p *corev1.Pod) {
				p.Spec.HostNetwork, p.Spec.HostPID = true, true
				pspPrivileged(p)
			}},
		{name: "image-volume-under-wildcard", user: pspCarol, ns: "b", want: "privileged", pod: pspImageVolume},
		// mutating-ranges (v1.24's manifest), granted by a Role in API group extensions.
		{name: "extensions-role-defaults", user: pspFrank, ns: "a", want: "mutating-ranges", wantPodSC: pspRangesPodSC, wantCtrSC: pspRangesCtrSC, check: ranges},
		{name: "ranges-user", user: pspFrank, ns: "a", pod: func(p *corev1.Pod) { pspCtrSC(p).RunAsUser = ptr.To[int64](5) },
			denied: []string{pspCannotAdmit, "must be in the ranges"}},
		{name: "ranges-capability", user: pspFrank, ns: "a",
			pod: func(p *corev1.Pod) {
				pspCtrSC(p).Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}
			},
			denied: []string{pspCannotAdmit, "capability may not be added"}},
		{name: "ranges-allowed-capability", user: pspFrank, ns: "a", want: "mutating-ranges", wantPodSC: pspRangesPodSC,
			pod: func(p *corev1.Pod) {
				pspCtrSC(p).Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"CHOWN"}}
			},
			wantCtrSC: `{"runAsUser":1000,"allowPrivilegeEscalation":false,"capabilities":{"add":["CHOWN","NET_BIND_SERVICE"],"drop":["NET_RAW"]}}`},
		{name: "ranges-hostpath-rw", user: pspFrank, ns: "a", pod: pspHostPath(false),
			denied: []string{pspCannotAdmit, "must be read-only"}},
		{name: "ranges-hostpath-ro", user: pspFrank, ns: "a", pod: pspHostPath(true), want: "mutating-ranges",
			wantPodSC: pspRangesPodSC, wantCtrSC: pspRangesCtrSC, check: ranges},
		{name: "ranges-sysctl-slashes", user: pspFrank, ns: "a", pod: pspSysctl("net/core/somaxconn"), want: "mutating-ranges",
			wantPodSC: `{"fsGroup":1000,"seLinuxOptions":{"level":"s0:c123,c456"},"sysctls":[{"name":"net/core/somaxconn","value":"1024"}]}`, wantCtrSC: pspRangesCtrSC},
		{name: "ranges-sysctl-forbidden", user: pspFrank, ns: "a", pod: pspSysctl("kernel.msgmax"),
			denied: []string{pspCannotAdmit, `sysctl "kernel.msgmax" is not allowed`}},
		// Selection: a policy that admits the pod unchanged beats one that
		// would change it, whatever their names; otherwise name order.
		{name: "selection-unchanged-first", user: pspDave, ns: "a", want: "sel-b-open"},
		{name: "selection-name-order", user: pspDave, ns: "a", want: "sel-a-mutating",
			pod: func(p *corev1.Pod) { pspCtrSC(p).RunAsUser = ptr.To[int64](1000) }},
		{name: "selection-first-mutating", user: pspErin, ns: "a", want: "order-1", wantPodSC: `{}`, wantCtrSC: `{"runAsUser":1}`},
		{name: "selection-annotation-overwritten", user: pspErin, ns: "a", want: "order-1", wantPodSC: `{}`, wantCtrSC: `{"runAsUser":1}`,
			pod: func(p *corev1.Pod) { p.Annotations = map[string]string{pspAnnotation: "order-2"} }},
		// PodSecurity enforces restricted in namespace enforce. It validates
		// the pod as PodSecurityPolicy mutated it, and still refuses what
		// a policy admits unchanged.
		{name: "podsecurity-satisfied-by-mutation", user: pspAlice, ns: "enforce", want: "restricted",
			wantPodSC: pspRestrictedPodSC, wantCtrSC: pspRestrictedCtrSC, offDenied: pspViolatesPSA},
		{name: "podsecurity-still-enforces", user: pspCarol, ns: "enforce", denied: []string{pspViolatesPSA},
			admittedByPSP: "privileged", offDenied: pspViolatesPSA},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e.runCreateCase(t, tc)
		})
	}
}

func (e *pspEnv) namespace(key string) string {
	return map[string]string{"a": e.nsA, "b": e.nsB, "enforce": e.nsEnf}[key]
}

func (e *pspEnv) runCreateCase(t *testing.T, tc pspCreateCase) {
	ctx := context.Background()
	ns := e.namespace(tc.ns)
	sent := pausePod(tc.name, tc.sa)
	if tc.pod != nil {
		tc.pod(sent)
	}
	got, err := e.user(t, e.main, tc.user).CoreV1().Pods(ns).Create(ctx, sent.DeepCopy(), metav1.CreateOptions{})
	if len(tc.denied) > 0 {
		pspExpectDenied(t, "create", err, tc.name, tc.denied...)
	} else if err != nil {
		t.Errorf("create: %v, want admitted by %s", err, tc.want)
	} else {
		if psp := got.Annotations[pspAnnotation]; psp != tc.want {
			t.Errorf("%s: %q, want %q", pspAnnotation, psp, tc.want)
		}
		pspExpectSC(t, "pod", got.Spec.SecurityContext, sent.Spec.SecurityContext, tc.wantPodSC)
		pspExpectSC(t, "container", got.Spec.Containers[0].SecurityContext, sent.Spec.Containers[0].SecurityContext, tc.wantCtrSC)
		pspNoLegacyAnnotations(t, sent, got)
		if tc.check != nil {
			tc.check(t, got)
		}
	}

	event := policyAuditEvent(t, e.audit, "create", "pods", ns, tc.name)
	wantAdmit, wantValidate := tc.want, tc.want
	if len(tc.denied) > 0 {
		wantAdmit, wantValidate = tc.admittedByPSP, ""
	}
	for key, want := range map[string]string{pspAdmitAudit: wantAdmit, pspValidateAudit: wantValidate} {
		if got, ok := event.Annotations[key]; got != want || ok != (want != "") {
			t.Errorf("audit annotation %s = %q (present: %v), want %q", key, got, ok, want)
		}
	}

	// Another name: a dry run fails on the one just stored.
	offPod := sent.DeepCopy()
	offPod.Name += "-off"
	off, err := e.user(t, e.off, tc.user).CoreV1().Pods(ns).Create(ctx, offPod, pspDryRun)
	if tc.offDenied != "" {
		pspExpectDenied(t, "create without the plugin", err, offPod.Name, tc.offDenied)
		return
	}
	if err != nil {
		t.Fatalf("create without the plugin: %v, want admitted", err)
	}
	if psp, want := off.Annotations[pspAnnotation], sent.Annotations[pspAnnotation]; psp != want {
		t.Errorf("without the plugin: %s: %q, want %q as sent", pspAnnotation, psp, want)
	}
	pspExpectSC(t, "without the plugin: pod", off.Spec.SecurityContext, sent.Spec.SecurityContext, "")
	pspExpectSC(t, "without the plugin: container", off.Spec.Containers[0].SecurityContext, sent.Spec.Containers[0].SecurityContext, "")
}

// pspExpectDenied checks that err is a 403 for pod name whose message
// contains every one of want, the first right after `is forbidden: `.
func pspExpectDenied(t *testing.T, what string, err error, name string, want ...string) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: %v, want 403 %q", what, err, want)
		return
	}
	want = append([]string{`pods "` + name + `" is forbidden: ` + want[0]}, want[1:]...)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %v, want it to contain %q", what, err, w)
		}
	}
}

// pspExpectSC compares a stored securityContext with want (JSON), or with
// what was sent when want is empty; nil and empty are the same.
func pspExpectSC(t *testing.T, what string, got, sent any, want string) {
	t.Helper()
	normal := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m == nil {
			m = map[string]any{}
		}
		return mustJSON(m)
	}
	if want == "" {
		want = normal(sent)
	} else {
		var m map[string]any
		if err := json.Unmarshal([]byte(want), &m); err != nil {
			t.Fatal(err)
		}
		want = normal(m)
	}
	if g := normal(got); g != want {
		t.Errorf("%s securityContext:\n got %s\nwant %s", what, g, want)
	}
}

// pspNoLegacyAnnotations: seccomp and AppArmor defaults go into fields,
// which kubelets read, not into the annotations v1.24 wrote.
func pspNoLegacyAnnotations(t *testing.T, sent, p *corev1.Pod) {
	t.Helper()
	for k := range p.Annotations {
		if _, ok := sent.Annotations[k]; ok {
			continue
		}
		if strings.HasPrefix(k, "seccomp.security.alpha.kubernetes.io/") || strings.HasPrefix(k, "container.seccomp.security.alpha.kubernetes.io/") ||
			strings.HasPrefix(k, "container.apparmor.security.beta.kubernetes.io/") {
			t.Errorf("pod has the legacy annotation %s", k)
		}
	}
}

// pspSetImage updates the pod's container to the other pause image, through
// the main server or, as a dry run, another.
func pspSetImage(c kubernetes.Interface, ns, name string, opts metav1.UpdateOptions) error {
	ctx := context.Background()
	p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if p.Spec.Containers[0].Image == pspPauseImage {
		p.Spec.Containers[0].Image = pspOtherPauseImage
	} else {
		p.Spec.Containers[0].Image = pspPauseImage
	}
	_, err = c.CoreV1().Pods(ns).Update(ctx, p, opts)
	return err
}

var pspUpdateDryRun = metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}

// testPSPUpdate: an UPDATE must pass a policy the requester or the pod's
// service account may use, without any change; updates of only the
// garbage collector's fields are not judged.
func testPSPUpdate(t *testing.T, e *pspEnv) {
	ctx := context.Background()
	frank, mallory := e.user(t, e.main, pspFrank), e.user(t, e.main, pspMallory)
	offMallory := e.user(t, e.off, pspMallory)

	// The pod mutating-ranges admitted (see create) still passes it.
	const mutated = "extensions-role-defaults"
	if err := pspSetImage(frank, e.nsA, mutated, metav1.UpdateOptions{}); err != nil {
		t.Errorf("image update of a pod its policy admitted: %v", err)
	}
	event := policyAuditEvent(t, e.audit, "update", "pods", e.nsA, mutated)
	if got := event.Annotations[pspValidateAudit]; got != "mutating-ranges" {
		t.Errorf("update: audit annotation %s = %q, want mutating-ranges", pspValidateAudit, got)
	}
	if got, ok := event.Annotations[pspAdmitAudit]; ok {
		t.Errorf("update: audit annotation %s = %q; Admit judges creates only", pspAdmitAudit, got)
	}
	if p, err := frank.CoreV1().Pods(e.nsA).Get(ctx, mutated, metav1.GetOptions{}); err != nil || p.Annotations[pspAnnotation] != "mutating-ranges" {
		t.Errorf("after the update: %v, %s: %q", err, pspAnnotation, p.Annotations[pspAnnotation])
	}

	// A host-network pod that mutating-ranges would not change: frank's
	// update fails on the policy's errors.
	const pinned = "pinned-host-network"
	p := pausePod(pinned, "")
	pspPinnedForRanges(p)
	p.Spec.HostNetwork = true
	if created, err := e.user(t, e.main, pspCarol).CoreV1().Pods(e.nsA).Create(ctx, p, metav1.CreateOptions{}); err != nil || created.Annotations[pspAnnotation] != "privileged" {
		t.Fatalf("carol's host-network pod: %v, want admitted by privileged", err)
	}
	pspExpectDenied(t, "frank's image update of a host-network pod", pspSetImage(frank, e.nsA, pinned, metav1.UpdateOptions{}), pinned,
		pspCannotValidate, "spec.securityContext.hostNetwork", "Host network is not allowed to be used")

	// Only finalizers change: not judged. The image: judged, and mallory
	// may use no policy.
	got, err := mallory.CoreV1().Pods(e.nsA).Get(ctx, pinned, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Finalizers = append(got.Finalizers, "e2e.turnstile.dev/keep")
	if _, err := mallory.CoreV1().Pods(e.nsA).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Errorf("finalizer-only update: %v, want admitted unjudged", err)
	}
	pspExpectDenied(t, "mallory's image update", pspSetImage(mallory, e.nsA, pinned, metav1.UpdateOptions{}), pinned, pspNoneToValidate)

	for _, name := range []string{mutated, pinned} {
		if err := pspSetImage(offMallory, e.nsA, name, pspUpdateDryRun); err != nil {
			t.Errorf("mallory's image update of %s without the plugin: %v, want admitted", name, err)
		}
	}
}

// pspAddEphemeral adds an ephemeral container through
// pods/ephemeralcontainers, as kubectl debug does.
func pspAddEphemeral(c kubernetes.Interface, ns, pod, name string, sc *corev1.SecurityContext, opts metav1.UpdateOptions) error {
	ctx := context.Background()
	p, err := c.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return err
	}
	p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: name, Image: "registry.k8s.io/e2e-test-images/busybox:1.37.0-1", SecurityContext: sc,
	}})
	_, err = c.CoreV1().Pods(ns).UpdateEphemeralContainers(ctx, pod, p, opts)
	return err
}

// testPSPEphemeralContainers: pods/ephemeralcontainers, which v1.24 did
// not police, is judged like an UPDATE: the pod with its new container must
// pass a policy unchanged.
func testPSPEphemeralContainers(t *testing.T, e *pspEnv) {
	ctx := context.Background()
	const pod = "extensions-role-defaults"
	frank, offFrank := e.user(t, e.main, pspFrank), e.user(t, e.off, pspFrank)
	withCap := pspPinnedContainerSC()
	withCap.Capabilities.Add = append(withCap.Capabilities.Add, "SYS_ADMIN")

	// mutating-ranges would accept debug-unset with its defaults, so it
	// reports no error; but nothing is defaulted here.
	pspExpectDenied(t, "ephemeral container the policy would have to change", pspAddEphemeral(frank, e.nsA, pod, "debug-unset", nil, metav1.UpdateOptions{}), pod, pspNoneToValidate)
	pspExpectDenied(t, "ephemeral container adding SYS_ADMIN", pspAddEphemeral(frank, e.nsA, pod, "debug-sys-admin", withCap, metav1.UpdateOptions{}), pod,
		pspCannotValidate, "spec.ephemeralContainers[0].securityContext.capabilities.add", "capability may not be added")
	if err := pspAddEphemeral(frank, e.nsA, pod, "debug-pinned", pspPinnedContainerSC(), metav1.UpdateOptions{}); err != nil {
		t.Errorf("ephemeral container the policy admits unchanged: %v", err)
	}
	p, err := frank.CoreV1().Pods(e.nsA).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.Spec.EphemeralContainers); n != 1 || p.Spec.EphemeralContainers[0].Name != "debug-pinned" {
		t.Errorf("ephemeral containers %+v, want debug-pinned only", p.Spec.EphemeralContainers)
	} else {
		pspExpectSC(t, "ephemeral container", p.Spec.EphemeralContainers[0].SecurityContext, pspPinnedContainerSC(), "")
	}

	for name, sc := range map[string]*corev1.SecurityContext{"debug-unset": nil, "debug-sys-admin": withCap} {
		if err := pspAddEphemeral(offFrank, e.nsA, pod, name, sc, pspUpdateDryRun); err != nil {
			t.Errorf("ephemeral container %s without the plugin: %v, want admitted", name, err)
		}
	}
}

// testPSPPodSecurityFirst: PodSecurity runs before PodSecurityPolicy. A
// privileged ephemeral container that both refuse is refused with
// PodSecurity's message; PodSecurityPolicy alone refuses it where
// PodSecurity enforces nothing.
func testPSPPodSecurityFirst(t *testing.T, e *pspEnv) {
	privileged := &corev1.SecurityContext{Privileged: ptr.To(true)}
	alice, offAlice := e.user(t, e.main, pspAlice), e.user(t, e.off, pspAlice)
	const enforced, plain = "podsecurity-satisfied-by-mutation", "restricted-defaults"

	err := pspAddEphemeral(alice, e.nsEnf, enforced, "debug", privileged, metav1.UpdateOptions{})
	pspExpectDenied(t, "privileged ephemeral container in namespace enforce", err, enforced, pspViolatesPSA)
	if err != nil && strings.Contains(err.Error(), "PodSecurityPolicy") {
		t.Errorf("the refusal comes from PodSecurityPolicy, which runs after PodSecurity: %v", err)
	}
	pspExpectDenied(t, "privileged ephemeral container in namespace a", pspAddEphemeral(alice, e.nsA, plain, "debug", privileged, metav1.UpdateOptions{}), plain,
		pspCannotValidate, "spec.ephemeralContainers[0].securityContext.privileged", "Privileged containers are not allowed")

	pspExpectDenied(t, "without the plugin, in namespace enforce", pspAddEphemeral(offAlice, e.nsEnf, enforced, "debug", privileged, pspUpdateDryRun), enforced, pspViolatesPSA)
	if err := pspAddEphemeral(offAlice, e.nsA, plain, "debug", privileged, pspUpdateDryRun); err != nil {
		t.Errorf("without the plugin, in namespace a: %v, want admitted", err)
	}
}

// createDeployments makes two Deployments in namespace a, early so that
// kube-controller-manager works while the other cases run: granted runs as
// psp-sa, whose grant of baseline admits its pods; denied runs as default,
// which may use no policy (nor may the controller).
func (e *pspEnv) createDeployments(t *testing.T) []string {
	t.Helper()
	admin := e.client(t, e.main, "e2e-admin", "system:masters")
	names := []string{"granted", "denied"}
	for i, sa := range []string{pspSA, "default"} {
		labels := map[string]string{"app": names[i]}
		if _, err := admin.AppsV1().Deployments(e.nsA).Create(context.Background(), &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: names[i]},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       pausePod("", sa).Spec,
				},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// testPSPDeployments: the ReplicaSet controller's pods, created through the
// plain server, are admitted by what their service account may use.
func testPSPDeployments(t *testing.T, e *pspEnv, kcm *process.Process, names []string) {
	ctx := context.Background()
	c := e.client(t, e.plain, "e2e-admin", "system:masters")
	alive := func() error {
		select {
		case <-kcm.Done():
			return fmt.Errorf("kube-controller-manager exited: %v\n%s", kcm.Err(), kcm.Tail(20))
		default:
			return nil
		}
	}
	var pod corev1.Pod
	policyEventually(t, "a pod of Deployment "+names[0], func() (bool, error) {
		pods, err := c.CoreV1().Pods(e.nsA).List(ctx, metav1.ListOptions{LabelSelector: "app=" + names[0]})
		if err != nil || len(pods.Items) == 0 {
			return false, errors.Join(err, alive())
		}
		pod = pods.Items[0]
		return true, nil
	})
	if got := pod.Annotations[pspAnnotation]; got != "baseline" {
		t.Errorf("%s: %s = %q, want baseline (granted to service account %s)", pod.Name, pspAnnotation, got, pspSA)
	}
	pspExpectSC(t, pod.Name+" pod", pod.Spec.SecurityContext, nil, `{"seccompProfile":{"type":"RuntimeDefault"}}`)
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].Kind != "ReplicaSet" {
		t.Errorf("%s: owners %+v, want its ReplicaSet", pod.Name, pod.OwnerReferences)
	}

	var message string
	policyEventually(t, "the ReplicaFailure of Deployment "+names[1], func() (bool, error) {
		rss, err := c.AppsV1().ReplicaSets(e.nsA).List(ctx, metav1.ListOptions{LabelSelector: "app=" + names[1]})
		if err != nil || len(rss.Items) == 0 {
			return false, errors.Join(err, alive())
		}
		for _, cond := range rss.Items[0].Status.Conditions {
			if cond.Type == appsv1.ReplicaSetReplicaFailure && cond.Status == corev1.ConditionTrue {
				message = cond.Message
				return true, nil
			}
		}
		return false, alive()
	})
	if !strings.Contains(message, pspNoneUsable) {
		t.Errorf("ReplicaFailure: %q, want %q", message, pspNoneUsable)
	}
	if pods, err := c.CoreV1().Pods(e.nsA).List(ctx, metav1.ListOptions{LabelSelector: "app=" + names[1]}); err != nil || len(pods.Items) != 0 {
		t.Errorf("Deployment %s has pods: %v %d", names[1], err, len(pods.Items))
	}
}

// testPSPServedByPlugin: the plain server, with the plugin and no
// --runtime-config, serves the API and the policies stored through main.
func testPSPServedByPlugin(t *testing.T, e *pspEnv) {
	c := e.client(t, e.plain, "e2e-admin", "system:masters")
	var list metav1.APIResourceList
	getJSON(t, c, "/apis/policy/v1beta1", &list)
	if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "podsecuritypolicies" }) {
		t.Errorf("/apis/policy/v1beta1 lacks podsecuritypolicies: %+v", list.APIResources)
	}
	policies, err := pspclient.NewForConfigOrDie(pspConfig(t, e.plain)).PolicyV1beta1().PodSecurityPolicies().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range policies.Items {
		names = append(names, p.Name)
	}
	for _, want := range []string{"privileged", "restricted", "mutating-ranges", "baseline", "zz-sync"} {
		if !slices.Contains(names, want) {
			t.Errorf("policies %v lack %s", names, want)
		}
	}
}
