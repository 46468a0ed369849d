// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"golang.org/x/sys/unix"

	"github.com/turnstile-k8s/turnstile/internal/localnode"
	"github.com/turnstile-k8s/turnstile/internal/process"
	"github.com/turnstile-k8s/turnstile/pkg/authorization/nodesproxy"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// The README's flow, as a user follows it: `make run` as themselves,
// objects created, Ctrl-C; `sudo make run NODES=1`, on other ports with
// other plugins: the objects are there and a pod of theirs runs; Ctrl-C;
// `make run` as themselves again: still there. One CA, one set of
// service-account keys, one etcd, throughout; each Ctrl-C ends the run
// with exit 0 and says what it stopped. `make test-node` runs it as root.
func TestLocalUpKeepsState(t *testing.T) {
	images := os.Getenv("TURNSTILE_NODE_IMAGES")
	if images == "" || os.Geteuid() != 0 {
		t.Skip("needs root and TURNSTILE_NODE_IMAGES (the image tarballs); `make test-node` runs it")
	}
	rootBin, err := framework.Binary("local-up")
	if err != nil {
		t.Fatal(err)
	}
	rootBin = filepath.Dir(rootBin)
	user, dir, userBin, adm := usersCheckout(t, rootBin)

	asUser := func(args ...string) *localUp {
		return launchLocalUp(t, localUpRun{dir: dir, bin: userBin, as: user}, append([]string{"-admission-config", adm}, args...)...)
	}
	first := asUser("-admission-plugins", "PodNodeSelector")
	ca := fingerprints(t, dir)
	first.mustKubectl(t, "create", "namespace", "kept")
	first.mustKubectl(t, "-n", "kept", "create", "configmap", "settings", "--from-literal=colour=blue")
	first.mustKubectl(t, "-n", "kept", "create", "deployment", "web", "--image="+agnhost, "--", "/agnhost", "netexec", "--http-port=8080")
	uids := objectUIDs(t, first)
	checkServiceCIDR(t, first)
	checkStopped(t, first, "kube-scheduler", "kube-controller-manager", "kube-apiserver")

	second := launchLocalUp(t, localUpRun{dir: dir, bin: rootBin},
		"-images", images, "-nodes", "1", "-admission-plugins", "DenyEscalatingExec,AlwaysPullImages")
	if got := objectUIDs(t, second); got != uids {
		t.Errorf("with a node, the objects are %s, want %s (the ones made without nodes)", got, uids)
	}
	second.mustKubectl(t, "-n", "kept", "wait", "--for=condition=Available", "deployment/web", "--timeout=3m")
	pod := strings.TrimSpace(second.mustKubectl(t, "-n", "kept", "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}"))
	if out := second.mustKubectl(t, "-n", "kept", "exec", pod, "--", "hostname"); strings.TrimSpace(out) != pod {
		t.Errorf("kubectl exec hostname in the kept Deployment's pod = %q, want %q", out, pod)
	}
	// The Services' range is the state's too: the kubernetes Service made
	// without nodes answers a pod by its name, through CoreDNS's Service,
	// which was allocated from the same range.
	if out, err := second.kubectl("-n", "kept", "exec", pod, "--", "/agnhost", "connect", "--timeout=10s", "kubernetes.default:443"); err != nil {
		t.Errorf("the kept pod cannot reach kubernetes.default:443: %v\n%s", err, out)
	}
	checkServiceCIDR(t, second)
	if got := fingerprints(t, dir); got != ca {
		t.Errorf("with a node, the CA and keys are %s, want %s", got, ca)
	}
	checkStopped(t, second, "the 1 node(s)", "kube-scheduler", "kube-controller-manager", "kube-apiserver")
	if left := localnode.Leftovers(second.cmd.Process.Pid, dir); len(left) > 0 {
		t.Errorf("Ctrl-C left behind:\n  %s", strings.Join(left, "\n  "))
	}
	checkOwner(t, dir, user.Uid)

	third := asUser()
	if got := objectUIDs(t, third); got != uids {
		t.Errorf("without nodes again, the objects are %s, want %s", got, uids)
	}
	if got := fingerprints(t, dir); got != ca {
		t.Errorf("without nodes again, the CA and keys are %s, want %s", got, ca)
	}
	checkStopped(t, third, "kube-apiserver")
}

// usersCheckout is what a user who is not root has: a state directory of
// their own, and the binaries and the example AdmissionConfiguration where
// they can read them (hard links: the repository may lie under a directory
// they cannot enter, like /root). The user is nobody.
func usersCheckout(t *testing.T, bin string) (user *syscall.Credential, dir, userBin, admissionConfig string) {
	t.Helper()
	user = &syscall.Credential{Uid: 65534, Gid: 65534}
	home, err := os.MkdirTemp("", "turnstile-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	dir, userBin = filepath.Join(home, "local"), filepath.Join(home, "bin")
	for _, d := range []string{dir, userBin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, int(user.Uid), int(user.Gid)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"local-up", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"} {
		if err := linkOrCopy(filepath.Join(bin, name), filepath.Join(userBin, name)); err != nil {
			t.Fatal(err)
		}
	}
	// The AdmissionConfiguration names the plugins' files beside it.
	examples, err := filepath.Abs("../../examples/admission")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(examples, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example AdmissionConfiguration in %s: %v", examples, err)
	}
	for _, f := range files {
		if err := linkOrCopy(f, filepath.Join(home, filepath.Base(f))); err != nil {
			t.Fatal(err)
		}
	}
	return user, dir, userBin, filepath.Join(home, "admission-config.yaml")
}

func linkOrCopy(from, to string) error {
	if os.Link(from, to) == nil {
		return nil
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// fingerprints is the SHA-256 of the state's CAs and service-account key.
func fingerprints(t *testing.T, dir string) string {
	t.Helper()
	var sums []string
	for _, f := range []string{"ca.crt", "front-proxy-ca.crt", "sa.pub"} {
		data, err := os.ReadFile(filepath.Join(dir, "pki", f))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		sums = append(sums, f+" "+hex.EncodeToString(sum[:8]))
	}
	return strings.Join(sums, ", ")
}

// objectUIDs names the test's objects with their UIDs: the same UIDs are
// the same objects, not ones made again.
func objectUIDs(t *testing.T, lu *localUp) string {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", lu.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c := kubernetes.NewForConfigOrDie(config)
	ctx := t.Context()
	ns, err := c.CoreV1().Namespaces().Get(ctx, "kept", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm, err := c.CoreV1().ConfigMaps("kept").Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.AppsV1().Deployments("kept").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("namespace %s, configmap %s (colour=%s), deployment %s", ns.UID, cm.UID, cm.Data["colour"], d.UID)
}

// checkServiceCIDR fails t when the apiserver's Services range is not the
// one its default ServiceCIDR, kept in etcd from the state's first run, has
// (the apiserver never changes that object; it warns).
func checkServiceCIDR(t *testing.T, lu *localUp) {
	t.Helper()
	cidrs := lu.mustKubectl(t, "get", "servicecidr", "kubernetes", "-o", "jsonpath={.spec.cidrs}")
	ip := lu.mustKubectl(t, "-n", "default", "get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIP}")
	events := lu.mustKubectl(t, "get", "events", "-A", "--field-selector", "reason=KubernetesDefaultServiceCIDRInconsistent", "-o", "name")
	if strings.TrimSpace(events) != "" {
		t.Errorf("the apiserver's Services range differs from the state's default ServiceCIDR %s (kubernetes Service at %s): %s", cidrs, ip, events)
	}
}

// checkStopped is Ctrl-C: local-up must exit 0 and name each part it
// stopped, then say that the state is kept.
func checkStopped(t *testing.T, lu *localUp, parts ...string) {
	t.Helper()
	rest := lu.interrupt(t)
	for _, part := range parts {
		if !strings.Contains(rest, "Stopped "+part) {
			t.Errorf("after Ctrl-C, local-up did not say it stopped %s:\n%s", part, rest)
		}
	}
	if !strings.Contains(rest, "The state in "+lu.dir+" is kept for the next run") {
		t.Errorf("after Ctrl-C, local-up did not say the state is kept:\n%s", rest)
	}
}

// checkOwner fails t for every file of the state, but the nodes' own,
// that does not belong to uid: a run as root hands the user's state back.
func checkOwner(t *testing.T, dir string, uid uint32) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path == filepath.Join(dir, "nodes") {
			return filepath.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if owner := info.Sys().(*syscall.Stat_t).Uid; owner != uid {
			t.Errorf("%s belongs to uid %d after the run as root, not to the state's owner %d", path, owner, uid)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A state a newer Kubernetes minor made is refused before anything
// starts: the message names both versions and the reset, and no process
// runs, no port is taken, no file is written.
func TestLocalUpRefusesDowngrade(t *testing.T) {
	binary, err := framework.Binary("local-up")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	version := releaseOf(t, filepath.Join(filepath.Dir(binary), "kube-apiserver"))
	var major, minor int
	if _, err := fmt.Sscanf(version, "v%d.%d.", &major, &minor); err != nil {
		t.Fatalf("kube-apiserver --version: %q: %v", version, err)
	}
	newer := fmt.Sprintf("v%d.%d.0", major, minor+1)
	if err := os.WriteFile(filepath.Join(dir, "kubernetes-version"), []byte(newer+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "-dir", dir, "-bin", filepath.Dir(binary), "-admission-config", "", "-port", "1",
		"-clean-command", "`make clean-local`").CombinedOutput()
	if err == nil {
		t.Fatalf("local-up ran on a state of %s:\n%s", newer, out)
	}
	for _, want := range []string{"made by Kubernetes " + newer, "this kube-apiserver is " + version,
		fmt.Sprintf("downgrade (v%d.%d to v%d.%d)", major, minor+1, major, minor), "Nothing was started", "`make clean-local` resets the state"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal lacks %q:\n%s", want, out)
		}
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "kubernetes-version local-up.lock logs" {
		t.Errorf("the refused run left %v in the state, want only the version it found, the lock and logs/", names)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "kubernetes-version")); strings.TrimSpace(string(data)) != newer {
		t.Errorf("the refused run changed the state's version to %q", data)
	}
}

// releaseOf is what the Kubernetes binary at path says its release is
// (v1.37.2+turnstile.1 for ours).
func releaseOf(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", path, err)
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "Kubernetes ")
}

// `make run` on one state across Kubernetes lines, with the real binaries
// of both: the older line's local-up makes the state and objects; main's
// runs it, says it is an upgrade of one minor, and keeps every object; the
// older line's is then refused, naming both versions, before anything
// starts. `make test-upgrade` runs it with the older line built.
func TestLocalUpAcrossLines(t *testing.T) {
	oldBin := os.Getenv("TURNSTILE_UPGRADE_FROM_BIN")
	if oldBin == "" {
		t.Skip("needs TURNSTILE_UPGRADE_FROM_BIN (an older line's binaries); `make test-upgrade` runs it")
	}
	binary, err := framework.Binary("local-up")
	if err != nil {
		t.Fatal(err)
	}
	newBin := filepath.Dir(binary)
	oldVersion, newVersion := releaseOf(t, filepath.Join(oldBin, "kube-apiserver")), releaseOf(t, filepath.Join(newBin, "kube-apiserver"))
	dir := t.TempDir()

	old := launchLocalUp(t, localUpRun{dir: dir, bin: oldBin})
	old.mustKubectl(t, "create", "namespace", "kept")
	old.mustKubectl(t, "-n", "kept", "create", "configmap", "settings", "--from-literal=colour=blue")
	old.mustKubectl(t, "-n", "kept", "create", "deployment", "web", "--image="+agnhost)
	uids := objectUIDs(t, old)
	checkStopped(t, old, "kube-apiserver")

	upgraded := launchLocalUp(t, localUpRun{dir: dir, bin: newBin})
	if want := "was made by Kubernetes " + oldVersion + "; this is " + newVersion + ": an upgrade of one minor"; !strings.Contains(upgraded.output, want) {
		t.Errorf("main's local-up did not say %q:\n%s", want, upgraded.output)
	}
	if got := objectUIDs(t, upgraded); got != uids {
		t.Errorf("after the upgrade, the objects are %s, want %s", got, uids)
	}
	if got := upgraded.mustKubectl(t, "version", "-o", "json"); !strings.Contains(got, `"gitVersion": "`+newVersion+`"`) {
		t.Errorf("after the upgrade, the server is not %s:\n%s", newVersion, got)
	}
	checkStopped(t, upgraded, "kube-apiserver")

	out, err := exec.Command(filepath.Join(oldBin, "local-up"), "-dir", dir, "-bin", oldBin, "-admission-config", "", "-port", "1").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "made by Kubernetes "+newVersion+", and this kube-apiserver is "+oldVersion+": that is a downgrade") {
		t.Errorf("the older line's local-up on the upgraded state (%v):\n%s", err, out)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "kubernetes-version")); strings.TrimSpace(string(data)) != newVersion {
		t.Errorf("after the refused downgrade the state says %q, want %s", data, newVersion)
	}
}

// Ctrl-C typed in the terminal of `make run`, once it is ready: the run
// ends with exit 0, saying what it stopped, with no `make: ***` line.
// The terminal is a real pseudo-terminal with make in its foreground, so
// the keystroke reaches whatever the terminal's line discipline signals,
// as it does for a user. The run passes a kube-apiserver flag through
// APISERVER_ARGS, which the apiserver then applies: with
// --nodes-proxy-get-requires-create, get on nodes/proxy alone is denied
// (TestAdversarialNodesProxyGetRequiresCreate shows the kubelet refusing
// the same grant's WebSocket exec on a node local-up starts with the flag).
func TestMakeRunCtrlC(t *testing.T) {
	ports := freePorts(t, 3)
	dir := t.TempDir()
	cmd := exec.Command("make", "--no-print-directory", "-C", "../..", "run", "LOCAL_DIR="+dir,
		"PORT="+ports[0], "CONTROLLER_MANAGER_PORT="+ports[1], "SCHEDULER_PORT="+ports[2],
		"APISERVER_ARGS="+nodesproxy.Flag+"=true")
	terminal, out, exited := onTerminal(t, cmd)
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			_, _ = exec.Command(filepath.Join("..", "..", "_output", "bin", "local-up"), "-dir", dir, "-clean").CombinedOutput()
		}
	})
	ready := time.After(5 * time.Minute)
	for !strings.Contains(out.String(), "Ctrl-C stops it") {
		select {
		case err := <-exited:
			t.Fatalf("make run ended before it was ready (%v):\n%s", err, out.String())
		case <-ready:
			t.Fatalf("make run not ready in 5 minutes:\n%s", out.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	// A monitor with get on nodes/proxy alone: the flag denies it.
	config, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	admin := kubernetes.NewForConfigOrDie(config)
	ctx := context.Background()
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-monitor"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-monitor"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "e2e-monitor"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "e2e-monitor"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	review := func() (*authorizationv1.SubjectAccessReview, error) {
		return admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "e2e-monitor", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "proxy"}}}, metav1.CreateOptions{})
	}
	policyEventually(t, "RBAC to see the monitor's grant", func() (bool, error) {
		sar, err := review()
		return err == nil && (sar.Status.Allowed || sar.Status.Reason != ""), err
	})
	if sar, err := review(); err != nil || sar.Status.Allowed || !strings.Contains(sar.Status.Reason, nodesproxy.Reason) {
		t.Errorf("get on nodes/proxy alone under make run APISERVER_ARGS=%s=true: %+v, %v; want denied by the flag", nodesproxy.Flag, sar, err)
	}
	if _, err := terminal.Write([]byte{0x03}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil || strings.Contains(out.String(), "make: ***") || !strings.Contains(out.String(), "Stopped kube-apiserver") {
			t.Errorf("make run after Ctrl-C: %v\n%s", err, out.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("make run still running 3 minutes after Ctrl-C:\n%s", out.String())
	}
}

// onTerminal starts cmd as the foreground job of a pseudo-terminal of its
// own (a session with the terminal as its controlling one, as a login shell
// has), so that Ctrl-C typed into the terminal reaches the job as it does a
// user's. It returns the terminal's side, the job's output as it comes and
// the job's end. A cleanup registered after it runs before the terminal
// closes, which would hang the job up instead of stopping it.
func onTerminal(t *testing.T, cmd *exec.Cmd) (terminal *os.File, out *syncBuffer, exited chan error) {
	t.Helper()
	terminal, tty := openPTY(t)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	out, exited = &syncBuffer{}, make(chan error, 1)
	go func() { _, _ = io.Copy(out, terminal) }()
	go func() { exited <- cmd.Wait() }()
	return terminal, out, exited
}

// openPTY opens a pseudo-terminal: the terminal's side, which the test
// types into and reads, and the side a program runs on.
func openPTY(t *testing.T) (terminal, tty *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	terminal = os.NewFile(uintptr(fd), "/dev/ptmx")
	t.Cleanup(func() { terminal.Close() })
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("naming the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return terminal, tty
}

// Ctrl-C while local-up is still starting is a normal end too: exit 0,
// what started is stopped, and nothing is left running.
func TestLocalUpInterruptedWhileStarting(t *testing.T) {
	binary, err := framework.Binary("local-up")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ports := freePorts(t, 3)
	cmd := exec.Command(binary, "-dir", dir, "-bin", filepath.Dir(binary), "-admission-config", "",
		"-port", ports[0], "-controller-manager-port", ports[1], "-scheduler-port", ports[2])
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The apiserver is started right after the kubeconfigs are written,
	// and takes seconds to be ready.
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(out.String(), `[kubeconfig] Writing "scheduler.conf"`) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("local-up wrote no kubeconfigs in a minute:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("local-up interrupted while starting: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "Interrupted before the cluster was ready") {
		t.Errorf("local-up did not say it was interrupted while starting:\n%s", out.String())
	}
	if left := process.Matching("--embedded-etcd-data-dir=" + filepath.Join(dir, "etcd")); len(left) > 0 {
		t.Errorf("kube-apiserver still runs after the interrupted start: pids %v", left)
	}
}

// syncBuffer is a bytes.Buffer that a process writes and a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
