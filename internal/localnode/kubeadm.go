package localnode

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/template"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/turnstile-k8s/turnstile/internal/process"
)

// A kubeadm host is a node on which `kubeadm init` runs for real, with the
// kubelet running the control plane as static pods. kubeadm writes to fixed
// paths (/etc/kubernetes, /var/lib/kubelet, /var/lib/etcd) and its static
// pods mount them by those paths, so the host's network namespace is joined
// by a mount namespace of its own in which those paths are the node's
// directories: kubeadm, the kubelet, containerd and runc all see the same
// files, and the host's own paths are never written. Mounts made in it
// (volumes, root filesystems) vanish with it.

// kubeadmPaths are the host paths kubeadm and its static pods use, each
// bound to <node dir>/<name>.
var kubeadmPaths = map[string]string{
	"/etc/kubernetes":  "etc-kubernetes",
	"/var/lib/kubelet": "var-lib-kubelet",
	"/var/lib/etcd":    "var-lib-etcd",
}

// mountNS is the file that holds the node's mount namespace.
func (n *Node) mountNS() string { return filepath.Join(n.cluster.runDir(), n.Name+".mnt") }

// KubeadmDir is where the node's /etc/kubernetes lives on the host:
// kubeadm's admin.conf is KubeadmDir()/admin.conf.
func (n *Node) KubeadmDir() string { return filepath.Join(n.dir(), kubeadmPaths["/etc/kubernetes"]) }

// StartKubeadmHost prepares the cluster's first node for `kubeadm init`:
// its network namespace and guard, cgroup root, mount namespace, and
// containerd with images (the node images and the control plane's)
// imported. Call KubeadmInit next.
func (c *Cluster) StartKubeadmHost(ctx context.Context) (*Node, error) {
	n := c.Nodes[0]
	return n, n.startRuntime(ctx, true)
}

// addMountNS creates the node's mount namespace and binds kubeadm's paths
// in it. A mount namespace is kept by binding it to a file, which must lie
// on a private mount: the run's directory, bound onto itself.
func (n *Node) addMountNS() error {
	run := n.cluster.runDir()
	for _, p := range kubeadmPaths {
		if err := os.MkdirAll(filepath.Join(n.dir(), p), 0o700); err != nil {
			return err
		}
	}
	steps := [][]string{
		{"mount", "--bind", run, run},
		{"mount", "--make-private", run},
		{"touch", n.mountNS()},
		{"unshare", "--mount=" + n.mountNS(), "--propagation", "private", "true"},
	}
	for host, p := range kubeadmPaths {
		// The mount point must exist on the host; an empty directory
		// made for it is removed with the run.
		if _, err := os.Stat(host); os.IsNotExist(err) {
			if err := os.MkdirAll(host, 0o755); err != nil {
				return err
			}
			n.cluster.created = append(n.cluster.created, host)
		}
		steps = append(steps, []string{"nsenter", "--mount=" + n.mountNS(), "--", "mount", "--bind", filepath.Join(n.dir(), p), host})
	}
	if err := n.cluster.writeRecord(); err != nil {
		return err
	}
	return runAll(steps)
}

// kubeadmConfig is `kubeadm init`'s configuration for the node: kubeadm's
// defaults, with the node's address, the layout's ranges, the node's
// containerd, no taint (the test's pods run on it), images never pulled,
// and the kubelet settings a node of this machine needs (see kubeletConfig).
var kubeadmConfig = template.Must(template.New("kubeadm.yaml").Parse(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: {{.IP}}
  bindPort: 6443
nodeRegistration:
  name: {{.Name}}
  criSocket: unix://{{.Socket}}
  imagePullPolicy: Never
  taints: []
  ignorePreflightErrors: [all]
  kubeletExtraArgs:
  - name: node-ip
    value: {{.IP}}
patches:
  directory: {{.Patches}}
skipPhases: [addon/kube-proxy, addon/coredns]
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: {{.Version}}
networking:
  podSubnet: {{.Pods}}
  serviceSubnet: {{.Services}}
apiServer:
  extraArgs:
  - name: enable-admission-plugins
    value: {{.AdmissionPlugins}}
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: {{.CgroupRoot}}
failCgroupV1: false
failSwapOn: false
resolvConf: {{.ResolvConf}}
podLogsDir: /var/lib/kubelet/pod-logs
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 5%
  imagefs.available: 5%
`))

// KubeadmInit runs `kubeadm init` on the node for kubernetesVersion, with
// admissionPlugins as --enable-admission-plugins, and apiserverImage
// patched into the kube-apiserver's static pod (docs/kubeadm.md, 2b); an
// empty apiserverImage keeps the image kubeadm names, upstream's. The
// kubelet is started once kubeadm has written its configuration, as
// systemd would start it; kube-proxy and CoreDNS are left out (their
// addons need a kube-proxy image, which is not built). It returns
// kubeadm's output.
func (n *Node) KubeadmInit(ctx context.Context, kubernetesVersion, apiserverImage string, admissionPlugins []string) (string, error) {
	c := n.cluster
	var cfg bytes.Buffer
	if err := kubeadmConfig.Execute(&cfg, map[string]string{
		"IP": n.IP.String(), "Name": n.Name, "Socket": n.Socket(), "Version": kubernetesVersion,
		"Pods": c.cfg.Layout.Pods.String(), "Services": c.cfg.Layout.Services.String(), "CgroupRoot": n.CgroupRoot(),
		"ResolvConf": filepath.Join(n.dir(), "resolv.conf"), "Patches": n.patchesDir(),
		"AdmissionPlugins": strings.Join(admissionPlugins, ","),
	}); err != nil {
		return "", err
	}
	// kubeadm's own inputs stay out of /etc/kubernetes, where `kubeadm
	// reset` is checked to leave nothing.
	config := filepath.Join(n.dir(), "kubeadm.yaml")
	if err := n.writePatches(apiserverImage); err != nil {
		return "", err
	}
	files := map[string]string{
		config:                                cfg.String(),
		filepath.Join(n.dir(), "resolv.conf"): "nameserver " + c.cfg.Layout.DNS().String() + "\n",
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return "", err
		}
	}
	kubeadm := n.kubeadm(ctx, "init", "--config="+config, "--v=1")
	var out bytes.Buffer
	kubeadm.Stdout, kubeadm.Stderr = &out, &out
	if err := kubeadm.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- kubeadm.Wait() }()
	kubeletStarted := false
	for {
		select {
		case err := <-done:
			if err != nil {
				return out.String(), fmt.Errorf("kubeadm init: %w", err)
			}
			if !kubeletStarted {
				return out.String(), fmt.Errorf("kubeadm init ended without writing %s", n.kubeadmFlagsFile())
			}
			return out.String(), nil
		case <-time.After(250 * time.Millisecond):
		}
		if kubeletStarted {
			continue
		}
		if _, err := os.Stat(n.kubeadmFlagsFile()); err != nil {
			continue
		}
		if err := n.startKubeadmKubelet(); err != nil {
			return out.String(), err
		}
		kubeletStarted = true
	}
}

// kubeadm is the command of the kubeadm in the cluster's Bin, inside the
// node, with Bin first on the PATH: kubeadm's preflight asks the kubelet
// on the PATH for its version, as it finds it on a host.
func (n *Node) kubeadm(ctx context.Context, args ...string) *exec.Cmd {
	bin := n.cluster.cfg.Bin
	command := append(n.enter(), filepath.Join(bin, "kubeadm"))
	cmd := exec.CommandContext(ctx, command[0], append(command[1:], args...)...)
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return cmd
}

// patchesDir holds the kubeadm patches of the node's control plane.
func (n *Node) patchesDir() string { return filepath.Join(n.dir(), "patches") }

// writePatches writes the patch that runs apiserverImage as the
// kube-apiserver, or removes it when apiserverImage is empty.
func (n *Node) writePatches(apiserverImage string) error {
	if err := os.MkdirAll(n.patchesDir(), 0o700); err != nil {
		return err
	}
	patch := filepath.Join(n.patchesDir(), "kube-apiserver+strategic.yaml")
	if apiserverImage == "" {
		if err := os.Remove(patch); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	return os.WriteFile(patch, []byte(fmt.Sprintf("spec:\n  containers:\n  - name: kube-apiserver\n    image: %s\n", apiserverImage)), 0o600)
}

// kubeadmUpgradeConfig is `kubeadm upgrade apply`'s configuration: the
// target version, the patches init used (so that the apiserver's image
// can change with the version), and images never pulled. Three preflight
// errors are ignored (init ignores all of its checks instead):
// SystemVerification, because this machine kind has cgroup v1, which
// kubeadm refuses unless told, even with the kubelet's FailCgroupV1 false;
// and the two CoreDNS migration checks, which fail, finding no CoreDNS
// version, when the CoreDNS addon was never installed (kubeadm v1.37 runs
// them even when the ClusterConfiguration says dns.disabled).
var kubeadmUpgradeConfig = template.Must(template.New("kubeadm-upgrade.yaml").Parse(`apiVersion: kubeadm.k8s.io/v1beta4
kind: UpgradeConfiguration
apply:
  kubernetesVersion: {{.Version}}
  imagePullPolicy: Never
  ignorePreflightErrors: [SystemVerification, CoreDNSUnsupportedPlugins, CoreDNSMigration]
  patches:
    directory: {{.Patches}}
`))

// KubeadmUpgradeApply runs `kubeadm upgrade apply` on the node with the
// kubeadm in the cluster's Bin (UseBin), to kubernetesVersion, with
// apiserverImage as the new kube-apiserver image (empty: kubeadm's own).
// The cluster's configuration is the one kubeadm keeps in the
// kubeadm-config ConfigMap. It returns kubeadm's output.
func (n *Node) KubeadmUpgradeApply(ctx context.Context, kubernetesVersion, apiserverImage string) (string, error) {
	var cfg bytes.Buffer
	if err := kubeadmUpgradeConfig.Execute(&cfg, map[string]string{"Version": kubernetesVersion, "Patches": n.patchesDir()}); err != nil {
		return "", err
	}
	config := filepath.Join(n.dir(), "kubeadm-upgrade.yaml")
	if err := os.WriteFile(config, cfg.Bytes(), 0o600); err != nil {
		return "", err
	}
	if err := n.writePatches(apiserverImage); err != nil {
		return "", err
	}
	out, err := n.kubeadm(ctx, "upgrade", "apply", "--config="+config, "--yes", "--v=1").CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubeadm upgrade apply: %w", err)
	}
	return string(out), nil
}

// RestartKubelet stops the node's kubelet and starts the one in the
// cluster's Bin with kubeadm's flags, as `systemctl restart kubelet`
// after a package upgrade. Running containers are left as they are.
func (n *Node) RestartKubelet() error {
	if err := n.stopKubelet(); err != nil {
		return err
	}
	return n.startKubeadmKubelet()
}

// kubeadmFlagsFile is where kubeadm writes the kubelet's flags.
func (n *Node) kubeadmFlagsFile() string {
	return filepath.Join(n.dir(), kubeadmPaths["/var/lib/kubelet"], "kubeadm-flags.env")
}

// startKubeadmKubelet starts the kubelet with kubeadm's configuration and
// flags, as kubeadm's systemd drop-in does.
func (n *Node) startKubeadmKubelet() error {
	env, err := os.ReadFile(n.kubeadmFlagsFile())
	if err != nil {
		return err
	}
	args, err := kubeadmFlags(string(env))
	if err != nil {
		return err
	}
	_, err = n.startProcess("kubelet", filepath.Join(n.cluster.cfg.Bin, "kubelet"), append([]string{
		"--config=/var/lib/kubelet/config.yaml",
		"--kubeconfig=/etc/kubernetes/kubelet.conf",
		"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
	}, args...)...)
	return err
}

// stopKubelet stops the node's running kubelet.
func (n *Node) stopKubelet() error {
	for _, p := range n.procs {
		if strings.HasSuffix(p.Name, " kubelet") {
			if err := p.Stop(syscall.SIGTERM, 30*time.Second); err != nil && !process.EndedBy(err, syscall.SIGTERM) {
				return fmt.Errorf("stopping the kubelet: %w", err)
			}
		}
	}
	return nil
}

// kubeadmFlags reads KUBELET_KUBEADM_ARGS from kubeadm's
// kubeadm-flags.env, as kubeadm's systemd drop-in does.
func kubeadmFlags(env string) ([]string, error) {
	for _, line := range strings.Split(env, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "KUBELET_KUBEADM_ARGS="); ok {
			return strings.Fields(strings.Trim(v, `"`)), nil
		}
	}
	return nil, fmt.Errorf("kubeadm-flags.env has no KUBELET_KUBEADM_ARGS:\n%s", env)
}

// KubeadmReset stops the kubelet and runs `kubeadm reset`, which removes
// the static pods' containers and what kubeadm wrote, the backups `kubeadm
// upgrade` keeps in /etc/kubernetes/tmp among them (--cleanup-tmp-dir).
func (n *Node) KubeadmReset(ctx context.Context) (string, error) {
	if err := n.stopKubelet(); err != nil {
		return "", err
	}
	out, err := n.kubeadm(ctx, "reset", "--force", "--cleanup-tmp-dir", "--cri-socket=unix://"+n.Socket(), "--v=1").CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubeadm reset: %w", err)
	}
	return string(out), nil
}

// WaitNetwork waits for the node's pod range, writes its CNI
// configuration, routes the range from the host, and waits for the node to
// be Ready.
func (n *Node) WaitNetwork(ctx context.Context, client kubernetes.Interface) error {
	if err := n.waitPodCIDR(ctx, client); err != nil {
		return err
	}
	if err := addRoute("", n.PodCIDR, n.IP); err != nil {
		return err
	}
	return n.waitReady(ctx, client)
}

// KubeadmState lists the files left in the node's kubeadm paths, for a
// test of `kubeadm reset` (which empties /etc/kubernetes/manifests and
// /etc/kubernetes/pki but keeps the directories).
func (n *Node) KubeadmState() []string {
	var left []string
	for host, p := range kubeadmPaths {
		root := filepath.Join(n.dir(), p)
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(root, path)
				left = append(left, filepath.Join(host, rel))
			}
			return nil
		})
	}
	return left
}
