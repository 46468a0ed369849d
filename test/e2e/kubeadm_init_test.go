// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeadmapiv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/internal/localnode"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// `kubeadm init` for real, as docs/tasks/kubeadm-single-node.md tells a
// user, every block of it run as written: the pinned kubeadm on a node of
// its own, the real kubelet running the control plane as static pods, our
// image from `make image`, which the page imports, as the kube-apiserver,
// locally built images for the rest. Then, before the page's undo: the
// node is Ready, a Deployment's pods run and take an exec, the apiserver's
// DenyExecOnPrivileged refuses an exec and an attach into a privileged pod
// and lets one into the host-network etcd static pod through; the page's
// `kubeadm reset` removes what kubeadm made, and the host is as it was.
// `make test-node` runs it as root.
func TestKubeadmInitForReal(t *testing.T) {
	images, apiserverTar := os.Getenv("TURNSTILE_NODE_IMAGES"), os.Getenv("TURNSTILE_APISERVER_IMAGE")
	if images == "" || apiserverTar == "" || os.Geteuid() != 0 {
		t.Skip("needs root, TURNSTILE_NODE_IMAGES (with the control-plane images) and TURNSTILE_APISERVER_IMAGE (make image); `make test-node` runs it")
	}
	kubeadm, err := framework.Binary("kubeadm")
	if err != nil {
		t.Fatal(err)
	}
	apiserverImage := imageName(t, apiserverTar)
	// Not the apiserver's image: the page imports it.
	h := prepareKubeadmHost(t, localnode.Config{Bin: filepath.Dir(kubeadm), Images: kubeadmHostImages(images, []string{images})})
	n := h.node
	page := "../../docs/tasks/kubeadm-single-node.md"
	r := runTaskPage(t, page, 0, taskOptions{
		replace: map[string]string{
			"/etc/kubernetes/admin.conf": filepath.Join(n.KubeadmDir(), "admin.conf"),
			"ctr -n k8s.io":              "ctr --address " + n.Socket() + " -n k8s.io",
		},
		// A HOME of the test's own for the page's ~/.kube, and the go
		// command's caches where they were, for the page's make.
		env: append(goCaches(t), "PATH="+serveKubeadm(t, h, localnode.InitOptions{ControlPlaneTaint: true})+string(os.PathListSeparator)+filepath.Dir(kubeadm)+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+t.TempDir()),
		beforeUndo: func(r *taskRun) {
			if len(r.outputs) != 5 {
				t.Fatalf("%d blocks of %s ran before its undo, want 5", len(r.outputs), page)
			}
			if out := r.outputs[3]; !strings.Contains(out, apiserverImage) {
				t.Errorf("the page's apiserver pod runs another image than %s:\n%s", apiserverImage, out)
			}
			if out, want := r.outputs[4], `pods "privileged" is forbidden: cannot exec into or attach to a privileged container`; !strings.Contains(out, want) {
				t.Errorf("the page's exec into a privileged pod was not refused with %q:\n%s", want, out)
			}
			checkKubeadmNode(t, h, apiserverImage)
		},
	})
	h.wantPageUndone(t, r, 6)
}

// goCaches is GOCACHE, GOMODCACHE and GOPATH as the go command has them
// now, for a command the test runs with another HOME, from which the go
// command would otherwise take new, empty ones.
func goCaches(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	values := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(values) != 3 {
		t.Fatalf("go env GOCACHE GOMODCACHE GOPATH: %q", out)
	}
	return []string{"GOCACHE=" + values[0], "GOMODCACHE=" + values[1], "GOPATH=" + values[2]}
}

// checkKubeadmNode checks the single-node cluster beyond what the page
// shows: the control plane's static pods, a Deployment, and
// DenyExecOnPrivileged against an attach and against the etcd pod.
func checkKubeadmNode(t *testing.T, h *kubeadmHost, apiserverImage string) {
	t.Helper()
	ctx, client, n := t.Context(), h.client, h.node
	t.Run("the control plane runs as static pods, the apiserver ours", func(t *testing.T) {
		h.waitStaticPods(t, h.node.Name, map[string]string{"kube-apiserver": apiserverImage})
		v, err := client.Discovery().ServerVersion()
		if err != nil || !strings.Contains(v.GitVersion, "+turnstile.") {
			t.Errorf("/version: %+v, %v; want Turnstile's", v, err)
		}
		if out := h.must(t, "get", "nodes"); !strings.Contains(out, n.Name) || !strings.Contains(out, " Ready ") {
			t.Errorf("kubectl get nodes:\n%s", out)
		}
	})

	t.Run("a Deployment's pods run", func(t *testing.T) {
		h.must(t, "create", "deployment", "web", "--image="+oci.AgnhostImage, "--replicas=2", "--", "/agnhost", "netexec", "--http-port=8080")
		h.must(t, "wait", "--for=condition=Available", "deployment/web", "--timeout=3m")
		if out := h.must(t, "exec", "deploy/web", "--", "hostname"); !strings.HasPrefix(out, "web-") {
			t.Errorf("exec hostname: %q", out)
		}
	})

	t.Run("DenyExecOnPrivileged against real pods", func(t *testing.T) {
		createPrivilegedPod(ctx, t, &h.kubeadmClient, "kube-public")
		wantExecRefused(t, &h.kubeadmClient, "kube-public")
		// Unlike DenyEscalatingExec, it lets an exec into a host-network
		// pod through: the etcd static pod answers.
		etcdVersion := strings.TrimPrefix(moduleVersion(t, "go.etcd.io/etcd/server/v3"), "v")
		if out := h.must(t, "-n", "kube-system", "exec", "etcd-"+n.Name, "--", "etcd", "--version"); !strings.Contains(out, "etcd Version: "+etcdVersion) {
			t.Errorf("exec into the etcd static pod: %s", out)
		}
	})
}

// serveKubeadm puts a kubeadm and a systemctl first on a task page's PATH
// that hand each command to the test, which runs it on h's node
// (commandOnNode), with base under the page's configuration. It returns
// the scripts' directory.
func serveKubeadm(t *testing.T, h *kubeadmHost, base localnode.InitOptions) string {
	t.Helper()
	p := pageNode{node: h.node, base: base, connect: h.connect}
	return serveCommands(t, h.node.Name, []string{"kubeadm", "systemctl"}, func(dir string, args []string) (string, int) {
		return commandOnNode(t, p, dir, args)
	})
}

// serveCommands writes a script for each of commands that hands the
// command, its arguments and its working directory to serve, in the test,
// and prints what serve returns as the command's output, exiting with its
// code. The scripts and the test talk through two named pipes. It returns
// the scripts' directory, for the front of a PATH; on names where they
// run, for the test's log.
func serveCommands(t *testing.T, on string, commands []string, serve func(dir string, args []string) (string, int)) string {
	t.Helper()
	dir := t.TempDir()
	request, response := filepath.Join(dir, "request"), filepath.Join(dir, "response")
	for _, p := range []string{request, response} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, command := range commands {
		script := fmt.Sprintf(`#!/usr/bin/env bash
# %s as the test serves it: the test runs the command on its machine.
printf '%%s\0' "$PWD" %s "$@" > %q
{ read -r code; cat; exit "$code"; } < %q
`, command, command, request, response)
		if err := os.WriteFile(filepath.Join(dir, command), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		for {
			data, err := os.ReadFile(request) // until a writer closes it
			if err != nil || len(data) == 0 {
				return // the test's end, below
			}
			args := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
			out, code := serve(args[0], args[1:])
			t.Logf("%s on %s: exit %d\n%s", strings.Join(args[1:], " "), on, code, lastLines(out, 15))
			if err := answer(response, fmt.Sprintf("%d\n%s", code, out)); err != nil {
				t.Errorf("answering %s: %v", strings.Join(args[1:], " "), err)
			}
		}
	}()
	t.Cleanup(func() {
		// An empty request ends the loop, which is waiting for one.
		if f, err := os.OpenFile(request, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-served
	})
	return dir
}

// answer writes to the script's response pipe once the script reads it,
// or gives up after 30 s (the script was stopped).
func answer(pipe, text string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		f, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			f.Fd() // blocking writes from here on
			_, err = f.WriteString(text)
			return errors.Join(err, f.Close())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nobody reads %s: %w", pipe, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pageNode is a node whose kubeadm and systemctl a task page runs.
type pageNode struct {
	node *localnode.Node
	// base is the node's InitOptions, under the page's configuration.
	base localnode.InitOptions
	// connect waits for the node's pod network once kubeadm has made the
	// cluster or joined the node, or its kubelet has restarted.
	connect func(context.Context) error
}

// commandOnNode runs one command of a task page on p's node, run in dir,
// and returns its output and exit code:
//   - `kubeadm init --config FILE [--upload-certs]`, the page's
//     configuration carried onto the node's own and base
//     (kubeadmPageInit); with --upload-certs, under a token and a key that
//     the test makes as kubeadm would;
//   - `kubeadm join ENDPOINT --token T --discovery-token-ca-cert-hash H
//     [--control-plane --certificate-key K] [--patches DIR]`;
//   - `kubeadm upgrade apply VERSION --patches DIR --yes` with the node's
//     kubeadm (the caller's UseBin);
//   - `kubeadm reset -f`;
//   - `kubeadm token create ...` and `kubeadm init phase upload-certs
//     ...` as they are, with a --config of the node's own settings
//     (kubeadmNodeSettings);
//   - `systemctl restart kubelet`, which starts the node's kubelet
//     (UseBin's) again.
func commandOnNode(t *testing.T, p pageNode, dir string, args []string) (string, int) {
	ctx, n := t.Context(), p.node
	fail := func(err error, out string) (string, int) { return out + err.Error() + "\n", 1 }
	abs := func(path string) string {
		if filepath.IsAbs(path) || path == "" {
			return path
		}
		return filepath.Join(dir, path)
	}
	connected := func(out string, err error) (string, int) {
		if err != nil {
			return fail(err, out)
		}
		if err := p.connect(ctx); err != nil {
			return fail(fmt.Errorf("the node's pod network: %w", err), out)
		}
		return out, 0
	}
	done := func(out string, err error) (string, int) {
		if err != nil {
			return fail(err, out)
		}
		return out, 0
	}
	switch {
	case len(args) >= 4 && args[0] == "kubeadm" && args[1] == "init" && args[2] == "--config" && (len(args) == 4 || len(args) == 5 && args[4] == "--upload-certs"):
		opts, err := kubeadmPageInit(abs(args[3]), p.base)
		if err != nil {
			return fail(err, "")
		}
		if len(args) == 5 {
			if opts.Join, err = localnode.NewJoinSecrets(); err != nil {
				return fail(err, "")
			}
		}
		return connected(n.KubeadmInit(ctx, opts))
	case len(args) >= 3 && args[0] == "kubeadm" && args[1] == "join":
		opts, err := kubeadmPageJoin(args[2:])
		if err != nil {
			return fail(err, "")
		}
		opts.Patches = abs(opts.Patches)
		return connected(n.KubeadmJoin(ctx, opts))
	case len(args) == 7 && args[0] == "kubeadm" && args[1] == "upgrade" && args[2] == "apply" && args[4] == "--patches" && args[6] == "--yes":
		return done(n.KubeadmUpgradeApply(ctx, localnode.UpgradeOptions{Version: args[3], Patches: abs(args[5])}))
	case len(args) == 3 && args[0] == "kubeadm" && args[1] == "reset" && (args[2] == "-f" || args[2] == "--force"):
		return done(n.KubeadmReset(ctx))
	case len(args) >= 3 && args[0] == "kubeadm" && (args[1] == "token" && args[2] == "create" || len(args) >= 4 && args[1] == "init" && args[2] == "phase" && args[3] == "upload-certs"):
		settings, err := kubeadmNodeSettings(n, p.base.Version)
		if err != nil {
			return fail(err, "")
		}
		defer os.Remove(settings)
		out, errOut, err := n.Kubeadm(ctx, append(args[1:], "--config="+settings)...)
		t.Logf("%s: its standard error:\n%s", strings.Join(args, " "), errOut)
		return done(out, err)
	case len(args) == 3 && args[0] == "systemctl" && args[1] == "restart" && args[2] == "kubelet":
		if err := n.RestartKubelet(); err != nil {
			return fail(err, "")
		}
		return connected("", nil)
	}
	return fmt.Sprintf("%s: the test runs only kubeadm init, join, upgrade apply, reset, token create, init phase upload-certs and systemctl restart kubelet on its node (commandOnNode)\n", strings.Join(args, " ")), 1
}

// kubeadmNodeSettings writes a kubeadm configuration of n's own settings
// alone, its address, name and containerd, and the Kubernetes version
// (the base InitOptions'), for the commands that would otherwise take them from the host
// and the internet: kubeadm's default InitConfiguration advertises the
// address of the interface of the default route, which a real node has
// and a node here, with no way off the machine, does not; its default
// version is dl.k8s.io's newest.
func kubeadmNodeSettings(n *localnode.Node, version string) (string, error) {
	if version == "" {
		return "", errors.New("the test gave the node no Kubernetes version (InitOptions.Version) for kubeadm's settings")
	}
	f, err := os.CreateTemp("", "kubeadm-node-*.yaml")
	if err != nil {
		return "", err
	}
	_, err = fmt.Fprintf(f, `apiVersion: %[1]s
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: %[2]s
nodeRegistration:
  name: %[3]s
  criSocket: unix://%[4]s
---
apiVersion: %[1]s
kind: ClusterConfiguration
kubernetesVersion: %[5]s
`, kubeadmapiv1.SchemeGroupVersion, n.IP, n.Name, n.Socket(), version)
	return f.Name(), errors.Join(err, f.Close())
}

// kubeadmPageJoin reads the arguments of a page's `kubeadm join` after
// "join", as `kubeadm token create --print-join-command` prints them,
// with --patches. Any other flag is an error, so that the page cannot say
// what the test does not run.
func kubeadmPageJoin(args []string) (localnode.JoinOptions, error) {
	var opts localnode.JoinOptions
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return opts, fmt.Errorf("kubeadm join %s: the endpoint first, as kubeadm token create prints it", strings.Join(args, " "))
	}
	opts.Endpoint = args[0]
	fs := flag.NewFlagSet("kubeadm join", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&opts.Secrets.Token, "token", "", "")
	fs.StringVar(&opts.CACertHash, "discovery-token-ca-cert-hash", "", "")
	fs.BoolVar(&opts.ControlPlane, "control-plane", false, "")
	fs.StringVar(&opts.Secrets.CertificateKey, "certificate-key", "", "")
	fs.StringVar(&opts.Patches, "patches", "", "")
	if err := fs.Parse(args[1:]); err != nil {
		return opts, fmt.Errorf("kubeadm join: %w (the test runs --token, --discovery-token-ca-cert-hash, --control-plane, --certificate-key and --patches)", err)
	}
	if fs.NArg() > 0 || opts.Secrets.Token == "" || opts.CACertHash == "" || opts.ControlPlane != (opts.Secrets.CertificateKey != "") {
		return opts, fmt.Errorf("kubeadm join %s: want an endpoint, --token and --discovery-token-ca-cert-hash, and --certificate-key with --control-plane only", strings.Join(args, " "))
	}
	return opts, nil
}

// kubeadmPageInit carries a page's kubeadm configuration onto opts, the
// node's: the version, the image repository, the control plane's endpoint,
// the apiserver's admission plugins and the patches directory. Anything else the page sets is an
// error, so that the page cannot say what the test does not run.
func kubeadmPageInit(path string, opts localnode.InitOptions) (localnode.InitOptions, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return localnode.InitOptions{}, err
	}
	var init kubeadmapiv1.InitConfiguration
	var cluster kubeadmapiv1.ClusterConfiguration
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var kind metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &kind); err != nil {
			return localnode.InitOptions{}, fmt.Errorf("%s: %w", path, err)
		}
		var into any
		switch kind {
		case metav1.TypeMeta{APIVersion: kubeadmapiv1.SchemeGroupVersion.String(), Kind: "InitConfiguration"}:
			into = &init
		case metav1.TypeMeta{APIVersion: kubeadmapiv1.SchemeGroupVersion.String(), Kind: "ClusterConfiguration"}:
			into = &cluster
		default:
			return localnode.InitOptions{}, fmt.Errorf("%s: a %s %s, where the test carries an InitConfiguration and a ClusterConfiguration of %s onto its node", path, kind.APIVersion, kind.Kind, kubeadmapiv1.SchemeGroupVersion)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			return localnode.InitOptions{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	opts.Version, opts.ImageRepository, opts.ControlPlaneEndpoint = cluster.KubernetesVersion, cluster.ImageRepository, cluster.ControlPlaneEndpoint
	if init.Patches != nil {
		opts.Patches = init.Patches.Directory
	}
	var args []kubeadmapiv1.Arg
	for _, a := range cluster.APIServer.ExtraArgs {
		if a.Name == "enable-admission-plugins" {
			opts.AdmissionPlugins = strings.Split(a.Value, ",")
			continue
		}
		args = append(args, a)
	}
	init.TypeMeta, init.Patches = metav1.TypeMeta{}, nil
	cluster.TypeMeta, cluster.KubernetesVersion, cluster.ImageRepository, cluster.ControlPlaneEndpoint, cluster.APIServer.ExtraArgs = metav1.TypeMeta{}, "", "", "", args
	if !reflect.DeepEqual(init, kubeadmapiv1.InitConfiguration{}) || !reflect.DeepEqual(cluster, kubeadmapiv1.ClusterConfiguration{}) {
		return localnode.InitOptions{}, fmt.Errorf("%s sets more than the test carries onto its node (kubernetesVersion, imageRepository, controlPlaneEndpoint, the apiserver's enable-admission-plugins, patches.directory): %+v %+v", path, init, cluster)
	}
	return opts, nil
}

// createPrivilegedPod creates the pod "privileged" in namespace, a
// privileged busybox that sleeps, and waits for it to run.
func createPrivilegedPod(ctx context.Context, t *testing.T, h *kubeadmClient, namespace string) {
	t.Helper()
	privileged := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "privileged"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: oci.BusyBoxImage, Command: []string{"sleep", "3600"}, Stdin: true,
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
		}}},
	}
	if _, err := h.client.CoreV1().Pods(namespace).Create(ctx, privileged, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.must(t, "-n", namespace, "wait", "--for=condition=Ready", "pod/privileged", "--timeout=2m")
}

// wantExecRefused checks that DenyExecOnPrivileged refuses an exec and an
// attach into the pod "privileged" in namespace.
func wantExecRefused(t *testing.T, h *kubeadmClient, namespace string) {
	t.Helper()
	want := `pods "privileged" is forbidden: cannot exec into or attach to a privileged container`
	for _, args := range [][]string{{"exec", "privileged", "--", "true"}, {"attach", "privileged", "-i=false"}} {
		// An attach that is let through waits for the container's output
		// for as long as it runs: a minute is the refusal's time and more.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		out, err := exec.CommandContext(ctx, h.kubectl, append([]string{"--kubeconfig", h.admin, "-n", namespace}, args...)...).CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("kubectl %s: %v\n%s\nwant the refusal %q", strings.Join(args, " "), err, out, want)
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
