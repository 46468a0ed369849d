// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/template"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	kubeadmapiv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/copycerts"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"

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

// EtcdDataDir is where the node's /var/lib/etcd lives on the host: a
// stacked etcd member's data (member/snap and member/wal).
func (n *Node) EtcdDataDir() string { return filepath.Join(n.dir(), kubeadmPaths["/var/lib/etcd"]) }

// KubeletDir is where the node's /var/lib/kubelet lives on the host (the
// kubelet's pod logs among it, in pod-logs).
func (n *Node) KubeletDir() string { return filepath.Join(n.dir(), kubeadmPaths["/var/lib/kubelet"]) }

// StartKubeadm prepares the node for `kubeadm init` or `kubeadm join`:
// its network namespace and guard, cgroup root, mount namespace, and
// containerd with images (the node images and the control plane's)
// imported. Call KubeadmInit or KubeadmJoin next.
func (n *Node) StartKubeadm(ctx context.Context) error {
	return n.startRuntime(ctx, true)
}

// addMountNS creates the node's mount namespace and binds kubeadm's paths
// in it. A mount namespace is kept by binding it to a file, which must lie
// on a private mount: the run's directory, bound onto itself once for all
// of its nodes (a second bind would hide the files the first nodes'
// namespaces are bound to).
func (n *Node) addMountNS() error {
	run := n.cluster.runDir()
	for _, p := range kubeadmPaths {
		if err := os.MkdirAll(filepath.Join(n.dir(), p), 0o700); err != nil {
			return err
		}
	}
	var steps [][]string
	if !slices.Contains(mountsUnder([]string{run}), run) {
		steps = append(steps, []string{"mount", "--bind", run, run}, []string{"mount", "--make-private", run})
	}
	steps = append(steps,
		[]string{"touch", n.mountNS()},
		[]string{"unshare", "--mount=" + n.mountNS(), "--propagation", "private", "true"},
	)
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

// A kubeadm node's configuration has three parts. The node's own settings
// (its address and name, its containerd, never pulling, no taint: the
// test's pods run on control-plane nodes too) are the same for init and
// join. The cluster's (version, ranges, admission plugins, the control
// plane's endpoint) are init's, and kubeadm keeps them in its kubeadm-config
// ConfigMap for the nodes that join and for upgrades. The kubelet's
// settings that a node of this machine needs are cluster-wide (kubeadm's
// kubelet-config ConfigMap), except the two that must differ between
// nodes sharing a host, its cgroup root and resolv.conf, which a kubeadm
// patch of the node's own sets (writePatches), so that init, join and
// every upgrade write them again.
var kubeadmConfig = template.Must(template.New("kubeadm").Funcs(template.FuncMap{"evictionHard": evictionHard}).Parse(`{{define "registration"}}nodeRegistration:
  name: {{.Name}}
  criSocket: unix://{{.Socket}}
  imagePullPolicy: {{.PullPolicy}}
{{if not .ControlPlaneTaint}}  taints: []
{{end}}  ignorePreflightErrors: [all]
  kubeletExtraArgs:
  - name: node-ip
    value: {{.IP}}
patches:
  directory: {{.Patches}}
{{end}}{{define "init"}}apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
{{with .Join}}bootstrapTokens:
- token: {{.Token}}
  ttl: 2h
certificateKey: {{.CertificateKey}}
{{end}}localAPIEndpoint:
  advertiseAddress: {{.IP}}
  bindPort: 6443
{{template "registration" .}}skipPhases: [{{if not .Addons}}addon/kube-proxy, {{end}}addon/coredns]
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: {{.Version}}
{{with .ImageRepository}}imageRepository: {{.}}
{{end}}{{with .Endpoint}}controlPlaneEndpoint: {{.}}
{{end}}networking:
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
failCgroupV1: false
failSwapOn: false
podLogsDir: /var/lib/kubelet/pod-logs
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
{{range $k, $v := evictionHard}}  {{$k}}: {{$v}}
{{end}}{{if .Addons}}---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
{{end}}{{end}}{{define "join"}}apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: {{.Endpoint}}
    token: {{.Join.Token}}
    caCertHashes: [{{.CACertHash}}]
{{if .ControlPlane}}controlPlane:
  localAPIEndpoint:
    advertiseAddress: {{.IP}}
    bindPort: 6443
  certificateKey: {{.Join.CertificateKey}}
{{end}}{{template "registration" .}}{{end}}`))

// InitOptions is what `kubeadm init` makes.
type InitOptions struct {
	// Version is the ClusterConfiguration's kubernetesVersion.
	Version string
	// APIServerImage replaces the kube-apiserver image kubeadm names, by a
	// kubeadm patch (docs/kubeadm.md, 2b); empty keeps kubeadm's,
	// upstream's.
	APIServerImage string
	// AdmissionPlugins is the apiserver's --enable-admission-plugins.
	AdmissionPlugins []string
	// ControlPlaneEndpoint is the load balancer's host:port in front of a
	// control plane of several nodes (kubeadm's --control-plane-endpoint);
	// empty: the node's own address, for a control plane of one.
	ControlPlaneEndpoint string
	// Join, when set, is the bootstrap token init creates and the key
	// under which it uploads the control plane's certificates (kubeadm's
	// --upload-certs), for the nodes that join.
	Join *JoinSecrets
	// ImageRepository is the ClusterConfiguration's imageRepository, from
	// which kubeadm names every image (empty: kubeadm's, registry.k8s.io):
	// an air-gapped cluster's is the air-gap bundle's.
	ImageRepository string
	// Addons runs kubeadm's kube-proxy and CoreDNS addons, which need
	// their images (the air-gap bundle has them); without, init skips
	// both. kube-proxy runs in iptables mode without conntrack sysctls, as
	// the nodes' own (kubeProxyConfig), and CoreDNS's Corefile forwards
	// nothing, as DeployDNS's: its phase runs after init, once that
	// Corefile is in place.
	Addons bool
	// ControlPlaneTaint keeps kubeadm's control-plane taint on the node,
	// as on a real host, where the node is otherwise untainted (the test's
	// pods run on control-plane nodes too).
	ControlPlaneTaint bool
	// Patches is a directory of more kubeadm patches, as a user's
	// InitConfiguration names in patches.directory; they are copied beside
	// the node's own, and win over them.
	Patches string
	// PullIfNotPresent is kubeadm's default pull policy, where a node
	// otherwise never pulls: kubeadm's preflight and the kubelet pull
	// what the node lacks, which with Config.Offline the registry logs.
	PullIfNotPresent bool
}

// JoinSecrets are what a node needs besides the endpoint to join a
// cluster: a bootstrap token, and for a control-plane node the key that
// decrypts the certificates init uploaded.
type JoinSecrets struct {
	Token, CertificateKey string
}

// NewJoinSecrets makes a bootstrap token and a certificate key, as
// `kubeadm token generate` and `kubeadm certs certificate-key` do.
func NewJoinSecrets() (*JoinSecrets, error) {
	token, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return nil, err
	}
	key, err := copycerts.CreateCertificateKey()
	if err != nil {
		return nil, err
	}
	return &JoinSecrets{Token: token, CertificateKey: key}, nil
}

// JoinOptions is what `kubeadm join` needs.
type JoinOptions struct {
	// Endpoint is the control plane's endpoint, host:port.
	Endpoint string
	Secrets  JoinSecrets
	// CACertHash pins the cluster's CA (Node.CACertHash of the first node).
	CACertHash string
	// ControlPlane joins the node as a control-plane node (stacked etcd
	// member, apiserver, controller-manager, scheduler), with
	// APIServerImage as its kube-apiserver as for InitOptions.
	ControlPlane   bool
	APIServerImage string
	// PullIfNotPresent is kubeadm's default pull policy, as for
	// InitOptions.
	PullIfNotPresent bool
	// Patches is a directory of more kubeadm patches (kubeadm join's
	// --patches), as for InitOptions.
	Patches string
}

// kubeadmValues are the template's values for the node; pullIfNotPresent
// is the caller's option of that name.
func (n *Node) kubeadmValues(pullIfNotPresent bool) map[string]any {
	return map[string]any{"IP": n.IP.String(), "Name": n.Name, "Socket": n.Socket(), "Patches": n.PatchesDir(), "PullPolicy": pullPolicy(pullIfNotPresent)}
}

// pullPolicy is kubeadm's imagePullPolicy for the options'
// PullIfNotPresent: Never unless it is set, so that a node pulls nothing
// its images do not hold.
func pullPolicy(ifNotPresent bool) string {
	if ifNotPresent {
		return "IfNotPresent"
	}
	return "Never"
}

func (n *Node) initValues(opts InitOptions) map[string]any {
	values := n.kubeadmValues(opts.PullIfNotPresent)
	values["Version"], values["Endpoint"], values["Join"] = opts.Version, opts.ControlPlaneEndpoint, opts.Join
	values["Pods"], values["Services"] = n.cluster.cfg.Layout.Pods.String(), n.cluster.cfg.Layout.Services.String()
	values["AdmissionPlugins"] = strings.Join(opts.AdmissionPlugins, ",")
	values["ImageRepository"], values["Addons"] = opts.ImageRepository, opts.Addons
	values["ControlPlaneTaint"] = opts.ControlPlaneTaint
	return values
}

func (n *Node) joinValues(opts JoinOptions) map[string]any {
	values := n.kubeadmValues(opts.PullIfNotPresent)
	values["Endpoint"], values["Join"], values["CACertHash"], values["ControlPlane"] = opts.Endpoint, opts.Secrets, opts.CACertHash, opts.ControlPlane
	return values
}

// KubeadmInit runs `kubeadm init` on the node, as opts says. The kubelet
// is started once kubeadm has written its configuration, as systemd would
// start it; kube-proxy and CoreDNS are left out unless opts.Addons (the
// node images have no kube-proxy: the air-gap bundle has). It returns
// kubeadm's output.
func (n *Node) KubeadmInit(ctx context.Context, opts InitOptions) (string, error) {
	config, err := n.writeKubeadmConfig("init", n.initValues(opts), opts.APIServerImage)
	if err != nil {
		return "", err
	}
	if err := n.copyPatches(opts.Patches); err != nil {
		return "", err
	}
	args := []string{"init", "--config=" + config, "--v=1"}
	if opts.Join != nil {
		args = append(args, "--upload-certs")
	}
	out, err := n.kubeadmStartingKubelet(ctx, args...)
	if err != nil || !opts.Addons {
		return out, err
	}
	more, err := n.kubeadmCoreDNS(ctx, config)
	return out + more, err
}

// kubeadmCoreDNS runs kubeadm init's CoreDNS phase with config, once the
// Corefile that forwards nothing is in place (kubeadm keeps a Corefile
// that is not its default): kubeadm's own forwards to the node's
// resolv.conf, the cluster's DNS, which CoreDNS's loop plugin finds and
// stops on.
func (n *Node) kubeadmCoreDNS(ctx context.Context, config string) (string, error) {
	admin, err := clientcmd.BuildConfigFromFlags("", filepath.Join(n.KubeadmDir(), "admin.conf"))
	if err != nil {
		return "", err
	}
	client, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return "", err
	}
	if err := applyCorefile(ctx, client, kubeadmapiv1.DefaultServiceDNSDomain); err != nil {
		return "", err
	}
	out, err := n.kubeadm(ctx, "init", "phase", "addon", "coredns", "--config="+config, "--v=1").CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubeadm init phase addon coredns: %w", err)
	}
	return string(out), nil
}

// KubeadmJoin runs `kubeadm join` on the node, as a worker or, with
// opts.ControlPlane, as a control-plane node, starting its kubelet as
// KubeadmInit does. It returns kubeadm's output.
func (n *Node) KubeadmJoin(ctx context.Context, opts JoinOptions) (string, error) {
	config, err := n.writeKubeadmConfig("join", n.joinValues(opts), opts.APIServerImage)
	if err != nil {
		return "", err
	}
	if err := n.copyPatches(opts.Patches); err != nil {
		return "", err
	}
	return n.kubeadmStartingKubelet(ctx, "join", "--config="+config, "--v=1")
}

// Kubeadm runs a kubeadm command that needs nothing of the node's own
// settings (`kubeadm token create`, `kubeadm init phase upload-certs`)
// inside the node, with its /etc/kubernetes, and returns its standard
// output and standard error apart: what a command prints for a script to
// read is on the first.
func (n *Node) Kubeadm(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	cmd := n.kubeadm(ctx, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), errOut.String(), fmt.Errorf("kubeadm %s: %w", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), nil
}

// writeKubeadmConfig writes the node's patches and resolv.conf and the
// configuration kubeadm's command reads, and returns its path. kubeadm's
// own inputs stay out of /etc/kubernetes, where `kubeadm reset` is checked
// to leave nothing.
func (n *Node) writeKubeadmConfig(command string, values map[string]any, apiserverImage string) (string, error) {
	var cfg bytes.Buffer
	if err := kubeadmConfig.ExecuteTemplate(&cfg, command, values); err != nil {
		return "", err
	}
	if err := n.writePatches(apiserverImage); err != nil {
		return "", err
	}
	config := filepath.Join(n.dir(), "kubeadm-"+command+".yaml")
	files := map[string]string{
		config:         cfg.String(),
		n.resolvConf(): "nameserver " + n.cluster.cfg.Layout.DNS().String() + "\n",
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return "", err
		}
	}
	return config, nil
}

// resolvConf is the node's pods' resolv.conf for dnsPolicy Default: the
// cluster DNS only, never the host's resolver.
func (n *Node) resolvConf() string { return filepath.Join(n.dir(), "resolv.conf") }

// kubeadmStartingKubelet runs kubeadm with args and starts the kubelet
// once kubeadm has written the kubelet's configuration and flags (kubeadm
// then waits for it, as it would for the kubelet systemd restarts). It
// returns kubeadm's output.
func (n *Node) kubeadmStartingKubelet(ctx context.Context, args ...string) (string, error) {
	kubeadm := n.kubeadm(ctx, args...)
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
				return out.String(), fmt.Errorf("kubeadm %s: %w", args[0], err)
			}
			if !kubeletStarted {
				return out.String(), fmt.Errorf("kubeadm %s ended without writing %s", args[0], n.kubeadmFlagsFile())
			}
			return out.String(), nil
		case <-time.After(250 * time.Millisecond):
		}
		if kubeletStarted || !n.kubeletConfigWritten() {
			continue
		}
		if err := n.startKubeadmKubelet(); err != nil {
			return out.String(), err
		}
		kubeletStarted = true
	}
}

// kubeletConfigWritten reports whether kubeadm has written both files the
// kubelet starts from (it writes the flags first).
func (n *Node) kubeletConfigWritten() bool {
	for _, f := range []string{n.kubeadmFlagsFile(), filepath.Join(filepath.Dir(n.kubeadmFlagsFile()), "config.yaml")} {
		if _, err := os.Stat(f); err != nil {
			return false
		}
	}
	return true
}

// kubeadm is the command of the node's kubeadm (UseBin), inside the node,
// with its directory first on the PATH: kubeadm's preflight asks the
// kubelet on the PATH for its version, as it finds it on a host.
func (n *Node) kubeadm(ctx context.Context, args ...string) *exec.Cmd {
	bin := n.bin()
	command := append(n.enter(), filepath.Join(bin, "kubeadm"))
	cmd := exec.CommandContext(ctx, command[0], append(command[1:], args...)...)
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return cmd
}

// PatchesDir holds the kubeadm patches of the node (kubeadm's --patches):
// its kube-apiserver image and its kubelet's cgroup root and resolv.conf.
// A test may add its own for the node's next kubeadm command.
func (n *Node) PatchesDir() string { return filepath.Join(n.dir(), "patches") }

// writePatches writes the node's patches: the kubelet's settings of its
// own, and one that runs apiserverImage as the kube-apiserver (removed when
// apiserverImage is empty).
func (n *Node) writePatches(apiserverImage string) error {
	if err := os.MkdirAll(n.PatchesDir(), 0o700); err != nil {
		return err
	}
	kubelet := fmt.Sprintf("cgroupRoot: %s\nresolvConf: %s\n", n.CgroupRoot(), n.resolvConf())
	if err := os.WriteFile(filepath.Join(n.PatchesDir(), "kubeletconfiguration+strategic.yaml"), []byte(kubelet), 0o600); err != nil {
		return err
	}
	patch := filepath.Join(n.PatchesDir(), "kube-apiserver+strategic.yaml")
	if apiserverImage == "" {
		if err := os.Remove(patch); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	return os.WriteFile(patch, []byte(fmt.Sprintf("spec:\n  containers:\n  - name: kube-apiserver\n    image: %s\n", apiserverImage)), 0o600)
}

// copyPatches copies a user's patches directory (none if dir is empty)
// into the node's, after writePatches: a user's patch for the apiserver
// takes the place of the node's.
func (n *Node) copyPatches(dir string) error {
	if dir == "" {
		return nil
	}
	if err := copyFiles(dir, n.PatchesDir()); err != nil {
		return fmt.Errorf("the patches of %s: %w", dir, err)
	}
	return nil
}

// copyFiles copies the regular files of dir (not its subdirectories) into
// to.
func copyFiles(dir, to string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// CACertHash is the hash of the cluster CA's public key that `kubeadm
// join` pins (--discovery-token-ca-cert-hash), read from the node's PKI.
func (n *Node) CACertHash() (string, error) {
	path := filepath.Join(n.KubeadmDir(), "pki", "ca.crt")
	certs, err := certutil.CertsFromFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the cluster CA: %w", err)
	}
	return pubkeypin.Hash(certs[0]), nil
}

// kubeadmUpgradeConfig is the configuration of `kubeadm upgrade apply`
// (the target version) and of `kubeadm upgrade node` on the other nodes:
// the node's patches (so that the apiserver's image can change with the
// version, and the kubelet keeps its own settings), images never pulled
// (PullIfNotPresent: pulled when missing, kubeadm's default),
// and how long kubeadm waits for each new static pod before it rolls the
// node back. Three preflight errors are ignored (init ignores all of its
// checks instead): SystemVerification, because this machine kind has
// cgroup v1, which kubeadm refuses unless told, even with the kubelet's
// FailCgroupV1 false; and the two CoreDNS migration checks, which fail,
// finding no CoreDNS version, when the CoreDNS addon was never installed
// (kubeadm v1.37 runs them even when the ClusterConfiguration says
// dns.disabled).
var kubeadmUpgradeConfig = template.Must(template.New("kubeadm-upgrade.yaml").Parse(`apiVersion: kubeadm.k8s.io/v1beta4
kind: UpgradeConfiguration
apply:
  kubernetesVersion: {{.Version}}
  imagePullPolicy: {{.PullPolicy}}
  ignorePreflightErrors: [SystemVerification, CoreDNSUnsupportedPlugins, CoreDNSMigration]
  patches:
    directory: {{.Patches}}
node:
  imagePullPolicy: {{.PullPolicy}}
  ignorePreflightErrors: [SystemVerification, CoreDNSUnsupportedPlugins, CoreDNSMigration]
  patches:
    directory: {{.Patches}}
{{- if .Reconfigure}}
  etcdUpgrade: false
  certificateRenewal: false
{{- end}}
{{with .Timeout}}timeouts:
  upgradeManifests: {{.}}
{{end}}`))

// UpgradeOptions is what an upgrade of a node's control plane needs.
type UpgradeOptions struct {
	// Version is `kubeadm upgrade apply`'s target; `kubeadm upgrade node`
	// takes the version `apply` wrote into the kubeadm-config ConfigMap.
	Version string
	// APIServerImage is the new kube-apiserver image (empty: kubeadm's
	// own, upstream's).
	APIServerImage string
	// Timeout is how long kubeadm waits for each new static pod before it
	// rolls the node back (zero: kubeadm's default, 5 minutes).
	Timeout time.Duration
	// PullIfNotPresent is kubeadm's default pull policy, as for
	// InitOptions: its preflight pulls what the node lacks.
	PullIfNotPresent bool
	// Patches is a directory of more kubeadm patches, as a user's
	// --patches (InitOptions.Patches); a patch of it for the apiserver
	// takes the place of APIServerImage's.
	Patches string
}

// KubeadmUpgradeApply runs `kubeadm upgrade apply` on the node with the
// node's kubeadm (UseBin). The cluster's configuration is the one kubeadm
// keeps in the kubeadm-config ConfigMap. It returns kubeadm's output.
func (n *Node) KubeadmUpgradeApply(ctx context.Context, opts UpgradeOptions) (string, error) {
	return n.kubeadmUpgrade(ctx, opts, false, "apply", "--yes")
}

// KubeadmUpgradeNode runs `kubeadm upgrade node` on the node with the
// node's kubeadm, as every node but the first does after `kubeadm upgrade
// apply` (a worker's only renews its kubelet's configuration). It returns
// kubeadm's output.
func (n *Node) KubeadmUpgradeNode(ctx context.Context, opts UpgradeOptions) (string, error) {
	return n.kubeadmUpgrade(ctx, opts, false, "node")
}

// KubeadmReconfigure writes the node's control-plane static pod manifests
// again from the ClusterConfiguration in the kubeadm-config ConfigMap and
// the node's patches, as kubeadm's guide to reconfiguring a cluster says
// after an edit of that ConfigMap, with the node's kubeadm: `kubeadm
// upgrade node phase control-plane`, neither etcd nor the certificates
// touched. kubeadm writes only the manifests that change and waits for the
// kubelet to run each (rolling the node back as an upgrade does when one
// does not come up). It returns kubeadm's output.
func (n *Node) KubeadmReconfigure(ctx context.Context, opts UpgradeOptions) (string, error) {
	return n.kubeadmUpgrade(ctx, opts, true, "node", "phase", "control-plane")
}

func (n *Node) upgradeConfig(opts UpgradeOptions, reconfigure bool) ([]byte, error) {
	var timeout string
	if opts.Timeout > 0 {
		timeout = opts.Timeout.String()
	}
	var cfg bytes.Buffer
	err := kubeadmUpgradeConfig.Execute(&cfg, map[string]any{"Version": opts.Version, "Patches": n.PatchesDir(), "Timeout": timeout, "Reconfigure": reconfigure, "PullPolicy": pullPolicy(opts.PullIfNotPresent)})
	return cfg.Bytes(), err
}

// kubeadmUpgrade runs `kubeadm upgrade <command...>` with the node's
// UpgradeConfiguration (reconfigure: etcd and the certificates left as
// they are) and patches.
func (n *Node) kubeadmUpgrade(ctx context.Context, opts UpgradeOptions, reconfigure bool, command ...string) (string, error) {
	cfg, err := n.upgradeConfig(opts, reconfigure)
	if err != nil {
		return "", err
	}
	config := filepath.Join(n.dir(), "kubeadm-upgrade.yaml")
	if err := os.WriteFile(config, cfg, 0o600); err != nil {
		return "", err
	}
	if err := n.writePatches(opts.APIServerImage); err != nil {
		return "", err
	}
	if err := n.copyPatches(opts.Patches); err != nil {
		return "", err
	}
	out, err := n.kubeadm(ctx, append(append([]string{"upgrade"}, command...), "--config="+config, "--v=1")...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubeadm upgrade %s: %w", strings.Join(command, " "), err)
	}
	return string(out), nil
}

// KubeadmCertsRenewAll runs `kubeadm certs renew all` on the node with the
// node's kubeadm (UseBin), as kubeadm's certificate management guide says
// for the yearly renewal. kubeadm reads the cluster's configuration from
// its kubeadm-config ConfigMap through the node's admin.conf, renews every
// certificate it made under /etc/kubernetes/pki and the kubeconfig files'
// client certificates, and leaves the static pods running: the caller
// restarts them. It returns kubeadm's output.
func (n *Node) KubeadmCertsRenewAll(ctx context.Context) (string, error) {
	out, errOut, err := n.Kubeadm(ctx, "certs", "renew", "all", "--v=1")
	return out + errOut, err
}

// RestartKubelet stops the node's kubelet and starts the node's (UseBin)
// with kubeadm's flags, as `systemctl restart kubelet` after a package
// upgrade. Running containers are left as they are.
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
	_, err = n.startProcess("kubelet", filepath.Join(n.bin(), "kubelet"), append([]string{
		"--config=/var/lib/kubelet/config.yaml",
		"--kubeconfig=/etc/kubernetes/kubelet.conf",
		"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
	}, args...)...)
	return err
}

// stopKubelet stops the node's running kubelet, and forgets it: a kubelet
// stopped on purpose is no process that exited (Node.poll).
func (n *Node) stopKubelet() error {
	var errs []error
	n.procs = slices.DeleteFunc(n.procs, func(p *process.Process) bool {
		if !strings.HasSuffix(p.Name, " kubelet") {
			return false
		}
		if err := p.Stop(syscall.SIGTERM, 30*time.Second); err != nil && !process.EndedBy(err, syscall.SIGTERM) {
			errs = append(errs, fmt.Errorf("stopping the kubelet: %w", err))
		}
		return true
	})
	return errors.Join(errs...)
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
