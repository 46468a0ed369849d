// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"github.com/turnstile-k8s/turnstile/pkg/admission"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// createNamespace makes a namespace for one test, with the "default"
// ServiceAccount that kube-controller-manager would add (the e2e servers run
// without one), and deletes it afterwards.
func createNamespace(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	return createNamespaceFrom(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}})
}

// createNamespaceFrom is createNamespace for a namespace with a name or
// labels of its own.
func createNamespaceFrom(t *testing.T, c kubernetes.Interface, ns *corev1.Namespace) string {
	t.Helper()
	ctx := context.Background()
	ns, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	if _, err := c.CoreV1().ServiceAccounts(ns.Name).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the default service account: %v", err)
	}
	t.Cleanup(func() {
		_ = c.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

func pausePod(name, serviceAccount string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			ServiceAccountName: serviceAccount,
			Containers:         []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
}

// The default admission chain runs in our binary: a pod is created, mutated
// by ServiceAccount, Priority and DefaultTolerationSeconds, stored in etcd,
// and rejected by ServiceAccount and NamespaceLifecycle when it should be.
func TestCoreObjectsThroughDefaultAdmission(t *testing.T) {
	ctx := context.Background()
	c := adminClient(t)
	ns := createNamespace(t, c)

	if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating service account: %v", err)
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, pausePod("web", "builder"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod: %v", err)
	}

	pod, err := c.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading pod back: %v", err)
	}
	if pod.Spec.ServiceAccountName != "builder" {
		t.Errorf("serviceAccountName = %q, want builder", pod.Spec.ServiceAccountName)
	}
	if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool {
		return strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil
	}) {
		t.Errorf("ServiceAccount admission did not add the projected token volume: %+v", pod.Spec.Volumes)
	}
	if pod.Spec.Priority == nil || *pod.Spec.Priority != 0 {
		t.Errorf("Priority admission did not set priority 0: %v", pod.Spec.Priority)
	}
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		if !slices.ContainsFunc(pod.Spec.Tolerations, func(tol corev1.Toleration) bool {
			return tol.Key == key && tol.TolerationSeconds != nil && *tol.TolerationSeconds == 300
		}) {
			t.Errorf("DefaultTolerationSeconds did not add a 300s toleration for %s: %+v", key, pod.Spec.Tolerations)
		}
	}

	// The pod is in etcd under the server's prefix, in upstream's protobuf envelope.
	ec, err := etcd.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	key := "/shared/pods/" + ns + "/web"
	resp, err := ec.Get(ctx, key)
	if err != nil {
		t.Fatalf("reading %s from etcd: %v", key, err)
	}
	if len(resp.Kvs) != 1 || !bytes.HasPrefix(resp.Kvs[0].Value, []byte("k8s\x00")) || !bytes.Contains(resp.Kvs[0].Value, []byte("builder")) {
		t.Errorf("etcd key %s: got %d values, want one protobuf-encoded pod", key, len(resp.Kvs))
	}

	_, err = c.CoreV1().Pods(ns).Create(ctx, pausePod("ghost", "ghost"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `serviceaccount "ghost" not found`) {
		t.Errorf("pod with a missing service account: got %v, want Forbidden naming the service account", err)
	}
	_, err = c.CoreV1().Pods("no-such-namespace").Create(ctx, pausePod("orphan", ""), metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `namespaces "no-such-namespace" not found`) {
		t.Errorf("pod in a missing namespace: got %v, want NotFound from NamespaceLifecycle", err)
	}
}

func TestVersion(t *testing.T) {
	out := runBinary(t, "kube-apiserver", "--version")
	printed, ok := strings.CutPrefix(strings.TrimSpace(out), "Kubernetes ")
	if !ok {
		t.Fatalf("--version printed %q, want \"Kubernetes v...\"", out)
	}
	v, err := utilversion.ParseSemantic(printed)
	if err != nil {
		t.Fatalf("--version %q is not semver: %v", printed, err)
	}
	kube := moduleVersion(t, "k8s.io/kubernetes")
	if upstream := utilversion.MustParseSemantic(kube); v.Major() != upstream.Major() || v.Minor() != upstream.Minor() ||
		v.Patch() != upstream.Patch() || v.PreRelease() != upstream.PreRelease() ||
		!regexp.MustCompile(`^turnstile\.[1-9][0-9]*$`).MatchString(v.BuildMetadata()) {
		t.Errorf("--version %q, want %s+turnstile.<n>", printed, kube)
	}

	info, err := adminClient(t).Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("GET /version: %v", err)
	}
	if info.GitVersion != printed {
		t.Errorf("/version gitVersion = %q, --version printed %q", info.GitVersion, printed)
	}
	if want := strings.TrimPrefix(strings.Join(strings.SplitN(kube, ".", 3)[:2], "."), "v"); info.Major+"."+info.Minor != want {
		t.Errorf("/version major.minor = %q.%q, want %s", info.Major, info.Minor, want)
	}
	if !regexp.MustCompile(`^([0-9a-f]{40}|unknown)$`).MatchString(info.GitCommit) {
		t.Errorf("/version gitCommit = %q, want a commit hash", info.GitCommit)
	}
	if info.GitTreeState != "clean" && info.GitTreeState != "dirty" {
		t.Errorf("/version gitTreeState = %q, want clean or dirty", info.GitTreeState)
	}
	if built, err := time.Parse(time.RFC3339, info.BuildDate); err != nil || built.Year() < 2025 {
		t.Errorf("/version buildDate = %q, want the build's date", info.BuildDate)
	}
}

// registeredPlugins is every admission plugin name our binary registers.
func registeredPlugins(t *testing.T) []string {
	t.Helper()
	o := kubeoptions.NewAdmissionOptions()
	if err := admission.Apply(o.GenericAdmission); err != nil {
		t.Fatal(err)
	}
	return o.GenericAdmission.Plugins.Registered()
}

// pluginList finds a "<lead> A, B, C." list in help text.
func pluginList(t *testing.T, help, lead string) []string {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(lead) + ` ([A-Za-z, ]+)\.`).FindStringSubmatch(help)
	if m == nil {
		t.Fatalf("help has no %q list", lead)
	}
	return strings.Split(m[1], ", ")
}

func TestHelpListsEveryRegisteredPlugin(t *testing.T) {
	help := runBinary(t, "kube-apiserver", "-h")
	want := registeredPlugins(t)
	for _, flag := range []string{"--enable-admission-plugins", "--disable-admission-plugins", "--admission-control"} {
		i := strings.Index(help, "      "+flag+" ")
		if i < 0 {
			t.Fatalf("-h does not document %s", flag)
		}
		usage, _, _ := strings.Cut(help[i:], "\n      --")
		lead := "Comma-delimited list of admission plugins:"
		if flag == "--admission-control" {
			lead = "Comma-delimited list of:"
		}
		got := pluginList(t, usage, lead)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s help lists %v, want every registered plugin %v", flag, got, want)
		}
	}
}

// Our -h is upstream's, except for the names of the plugins we add and our
// sections of flags.
func TestHelpMatchesUpstream(t *testing.T) {
	ours := runBinary(t, "kube-apiserver", "-h")
	upstream := runBinary(t, "kube-apiserver-upstream", "-h")
	// Our own flags are in sections of their own.
	for _, title := range []string{"Embedded etcd", "Validation", "Turnstile authorization"} {
		section := regexp.MustCompile(`(?ms)^` + title + ` flags:\n.*?\n(^\S[^\n]* flags:$)`)
		if !section.MatchString(ours) {
			t.Fatalf("-h has no %q flags section", title)
		}
		ours = section.ReplaceAllString(ours, "$1")
	}
	upstreamNames := pluginList(t, upstream, "Comma-delimited list of admission plugins:")
	for _, name := range registeredPlugins(t) {
		if !slices.Contains(upstreamNames, name) {
			ours = strings.ReplaceAll(ours, ", "+name+",", ",")
			ours = strings.ReplaceAll(ours, ": "+name+", ", ": ")
		}
	}
	if ours != upstream {
		t.Errorf("-h differs from upstream's beyond the added plugin names:\n%s", lineDiff(ours, upstream))
	}
}

func TestUnknownAdmissionPluginIsRejected(t *testing.T) {
	for flag, want := range map[string]string{
		"--enable-admission-plugins=NoSuchPlugin":  `enable-admission-plugins plugin "NoSuchPlugin" is unknown`,
		"--disable-admission-plugins=NoSuchPlugin": `disable-admission-plugins plugin "NoSuchPlugin" is unknown`,
		"--admission-control=NoSuchPlugin":         `admission-control plugin "NoSuchPlugin" is unknown`,
	} {
		t.Run(flag, func(t *testing.T) {
			expectRefusal(t, []string{flag, "--cert-dir=" + t.TempDir(), "--etcd-servers=" + etcd.URL}, want)
		})
	}
}

// configCheckArgs are the flags our binary needs to get as far as checking
// its admission configuration, followed by args.
func configCheckArgs(t *testing.T, args ...string) []string {
	return append([]string{
		"--etcd-servers=" + etcd.URL, "--cert-dir=" + t.TempDir(),
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file=" + filepath.Join(pki.Dir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(pki.Dir, "sa.key"),
	}, args...)
}

// expectRefusal runs our kube-apiserver with args and checks that it exits
// non-zero and says want.
func expectRefusal(t *testing.T, args []string, want string) {
	t.Helper()
	bin, err := framework.Binary("kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	// klog quotes the error, escaping its inner quotes.
	if err == nil || !strings.Contains(strings.ReplaceAll(string(out), `\"`, `"`), want) {
		t.Errorf("kube-apiserver %v: err=%v, output lacks %q:\n%s", args, err, want, out)
	}
}

func TestKubectlGetNamespaces(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "admin.conf")
	if err := server.WriteKubeconfig(kubeconfig, "e2e-admin", "system:masters"); err != nil {
		t.Fatal(err)
	}
	out := runBinary(t, "kubectl", "--kubeconfig", kubeconfig, "get", "namespaces", "-o", "name")
	for _, ns := range []string{"namespace/default", "namespace/kube-system", "namespace/kube-public", "namespace/kube-node-lease"} {
		if !strings.Contains(out, ns+"\n") {
			t.Errorf("kubectl get ns lacks %s:\n%s", ns, out)
		}
	}
}

// runBinary runs a built binary to completion and returns its stdout.
func runBinary(t *testing.T, name string, args ...string) string {
	t.Helper()
	stdout, stderr, err := execBinary(t, name, args...)
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, stderr)
	}
	return stdout
}

// runBinaryAllowFail is runBinary for commands whose non-zero exit is an
// answer (kubectl auth can-i says "no" with status 1).
func runBinaryAllowFail(t *testing.T, name string, args ...string) string {
	t.Helper()
	stdout, _, _ := execBinary(t, name, args...)
	return stdout
}

func execBinary(t *testing.T, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin, err := framework.Binary(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Env = append(os.Environ(), "COLUMNS=0")
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// lineDiff shows the lines of a that b lacks and the other way round.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for _, l := range al {
		if !slices.Contains(bl, l) {
			out.WriteString("+ ours:     " + l + "\n")
		}
	}
	for _, l := range bl {
		if !slices.Contains(al, l) {
			out.WriteString("- upstream: " + l + "\n")
		}
	}
	return out.String()
}
