// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	kubeconfigphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/kubeconfig"

	"github.com/turnstile-k8s/turnstile/internal/process"
)

// Node is one worker node: a network namespace on the cluster's bridge
// holding the node's containerd, kubelet and kube-proxy. The processes
// share the host's mount and PID namespaces (the kubelet and containerd
// must see the same mounts), each node with its own state under
// <dir>/nodes/<name>, its own cgroup root and its own sockets.
type Node struct {
	Name  string
	Index int
	IP    netip.Addr
	// PodCIDR is what kube-controller-manager gave the node.
	PodCIDR netip.Prefix

	cluster *Cluster
	// bin, when set, replaces the cluster's Bin for this node (UseBin).
	binDir string
	procs  []*process.Process // in start order
	// mountNSReady says the node's processes join its mount namespace
	// (a kubeadm host's) as well as its network namespace.
	mountNSReady bool
}

// Netns is the node's network namespace.
func (n *Node) Netns() string { return fmt.Sprintf("%s%d-%s", netnsPrefix, n.cluster.id, n.Name) }

// bin is the directory of the node's kubelet, kube-proxy and kubeadm.
func (n *Node) bin() string {
	if n.binDir != "" {
		return n.binDir
	}
	return n.cluster.cfg.Bin
}

// started reports whether the node's processes run.
func (n *Node) started() bool { return len(n.procs) > 0 }

func (n *Node) veth() string        { return fmt.Sprintf("%s%d", vethPrefix(n.cluster.bridge()), n.Index) }
func (n *Node) dir() string         { return filepath.Join(n.cluster.cfg.Dir, "nodes", n.Name) }
func (n *Node) kubeletRoot() string { return filepath.Join(n.dir(), "kubelet") }

// StaticPodPath is the node's static pod directory, kubeadm's
// /etc/kubernetes/manifests: the kubelet runs every pod manifest in it
// without asking the apiserver, and creates a mirror pod for each.
func (n *Node) StaticPodPath() string { return StaticPodPath(n.cluster.cfg.Dir, n.Name) }

// StaticPodPath is where the node named name of a cluster whose state is
// in dir reads static pods from.
func StaticPodPath(dir, name string) string { return filepath.Join(dir, "nodes", name, "manifests") }

// CgroupRoot is the cgroup the node's pods live under.
func (n *Node) CgroupRoot() string { return fmt.Sprintf("/%s%d-%s", netnsPrefix, n.cluster.id, n.Name) }

// Socket is the node's containerd socket. It lives under /run, with the
// rest of containerd's runtime state, because a socket's path must be
// short and the state directory may be deep.
func (n *Node) Socket() string { return filepath.Join(n.containerdState(), "containerd.sock") }

func (n *Node) containerdRoot() string       { return filepath.Join(n.dir(), "containerd") }
func (n *Node) containerdState() string      { return filepath.Join(n.cluster.runDir(), n.Name) }
func (n *Node) containerdConfigFile() string { return filepath.Join(n.dir(), "containerd.toml") }
func (n *Node) hostsDir() string             { return filepath.Join(n.dir(), "certs.d") }
func (n *Node) cniConfDir() string           { return filepath.Join(n.dir(), "cni", "net.d") }
func (n *Node) log(component string) string {
	return filepath.Join(n.cluster.cfg.Dir, "logs", n.Name+"-"+component+".log")
}

// enter is the command prefix that runs a program in the node's network
// namespace only. nsenter execs the program, so the process started is the
// program itself; `ip netns exec` would also give it a mount namespace of
// its own, where containerd's mounts would be invisible to the kubelet.
func (n *Node) enter() []string {
	if n.mountNSReady {
		return []string{"nsenter", "--net=/run/netns/" + n.Netns(), "--mount=" + n.mountNS(), "--"}
	}
	return []string{"nsenter", "--net=/run/netns/" + n.Netns(), "--"}
}

// start brings the node's processes up: its runtime, kubelet, kube-proxy.
func (n *Node) start(ctx context.Context) error {
	if err := n.startRuntime(ctx, false); err != nil {
		return err
	}
	if err := n.writeKubeletFiles(); err != nil {
		return err
	}
	if _, err := n.startProcess("kubelet", filepath.Join(n.bin(), "kubelet"),
		"--config="+filepath.Join(n.dir(), "kubelet.yaml"),
		"--kubeconfig="+filepath.Join(n.dir(), kubeadmconstants.KubeletKubeConfigFileName),
		"--hostname-override="+n.Name,
		"--node-ip="+n.IP.String(),
		"--root-dir="+n.kubeletRoot(),
		"--v=2",
	); err != nil {
		return err
	}
	if err := n.writeKubeProxyFiles(); err != nil {
		return err
	}
	_, err := n.startProcess("kube-proxy", filepath.Join(n.bin(), "kube-proxy"),
		"--config="+filepath.Join(n.dir(), "kube-proxy.yaml"), "--v=2")
	return err
}

// startRuntime brings up what every node has before its kubelet: network,
// guard, cgroup root, (for a kubeadm host) its mount namespace, and
// containerd with the images imported.
func (n *Node) startRuntime(ctx context.Context, mountNS bool) error {
	c := n.cluster
	if err := addNetns(n.Netns(), n.veth(), c.bridge(), n.IP, c.cfg.Layout); err != nil {
		return err
	}
	if err := nft(n.Netns(), nodeGuard(c.cfg.Layout)); err != nil {
		return fmt.Errorf("installing %s's guard: %w", n.Name, err)
	}
	if err := createCgroupRoot(n.CgroupRoot()); err != nil {
		return err
	}
	for _, dir := range []string{n.dir(), n.kubeletRoot(), filepath.Join(n.dir(), "pod-logs"), n.StaticPodPath()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	// No pod of an earlier run is left (Stop or RemoveStale removed them),
	// so neither are its addresses: a killed run's reservations would
	// otherwise leak from the pod range, run after run.
	if err := os.RemoveAll(filepath.Join(n.dir(), "cni", "ipam")); err != nil {
		return err
	}
	if mountNS {
		if err := n.addMountNS(); err != nil {
			return err
		}
		n.mountNSReady = true
	}
	if err := n.writeContainerdConfig(); err != nil {
		return err
	}
	binary, args := c.containerdBinary("containerd"), []string{"--config", n.containerdConfigFile()}
	if c.cfg.Containerd != "" {
		// containerd starts its shim from the PATH: ours, not Debian's.
		binary, args = "env", append([]string{"PATH=" + c.cfg.Containerd + ":" + os.Getenv("PATH"), binary}, args...)
	}
	containerd, err := n.startProcess("containerd", binary, args...)
	if err != nil {
		return err
	}
	if err := containerd.WaitUntil(ctx, time.Minute, func(context.Context) error {
		_, err := os.Stat(n.Socket())
		return err
	}); err != nil {
		return err
	}
	c.progress("%s: containerd is up; importing %d images", n.Name, len(c.cfg.Images))
	return n.importImages(ctx, c.cfg.Images)
}

func (n *Node) startProcess(component, binary string, args ...string) (*process.Process, error) {
	command := append(n.enter(), binary)
	p, err := process.Start(n.Name+" "+component, n.log(component), append(command, args...))
	if err != nil {
		return nil, err
	}
	n.procs = append(n.procs, p)
	return p, nil
}

// writeKubeletFiles writes the kubelet's kubeconfig, with a client
// certificate for system:node:<name> from kubeadm's kubeconfig phase, and
// its configuration.
func (n *Node) writeKubeletFiles() error {
	cfg := n.kubeadmConfig()
	if err := kubeconfigphase.CreateKubeConfigFile(kubeadmconstants.KubeletKubeConfigFileName, n.dir(), cfg); err != nil {
		return fmt.Errorf("%s's kubelet.conf: %w", n.Name, err)
	}
	resolv := n.resolvConf()
	// Pods with dnsPolicy Default (CoreDNS among them) get this file: the
	// cluster DNS only, never the host's resolver, which lies outside the
	// cluster's addresses.
	if err := os.WriteFile(resolv, []byte("nameserver "+n.cluster.cfg.Layout.DNS().String()+"\n"), 0o644); err != nil {
		return err
	}
	config, err := kubeletConfig(n, resolv)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(n.dir(), "kubelet.yaml"), config, 0o600)
}

// writeKubeProxyFiles writes kube-proxy's kubeconfig, a client certificate
// for system:kube-proxy (the user the bootstrap RBAC policy binds to
// system:node-proxier), and its configuration.
func (n *Node) writeKubeProxyFiles() error {
	kubeconfig := filepath.Join(n.dir(), "kube-proxy.conf")
	if _, err := os.Stat(kubeconfig); errors.Is(err, os.ErrNotExist) {
		var b bytes.Buffer
		if err := kubeconfigphase.WriteKubeConfigWithClientCert(&b, n.kubeadmConfig(), "system:kube-proxy", nil, time.Time{}); err != nil {
			return fmt.Errorf("%s's kube-proxy.conf: %w", n.Name, err)
		}
		if err := os.WriteFile(kubeconfig, b.Bytes(), 0o600); err != nil {
			return err
		}
	}
	config, err := kubeProxyConfig(n, kubeconfig)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(n.dir(), "kube-proxy.yaml"), config, 0o600)
}

func (n *Node) kubeadmConfig() *kubeadmapi.InitConfiguration {
	cfg := n.cluster.cfg.Kubeadm.DeepCopy()
	cfg.NodeRegistration.Name = n.Name
	return cfg
}

// waitPodCIDR waits for kube-controller-manager to give the node its pod
// range, then writes the CNI configuration for it. The kubelet reports the
// node Ready once containerd sees a CNI configuration, as it would once a
// CNI DaemonSet had written one.
func (n *Node) waitPodCIDR(ctx context.Context, client kubernetes.Interface) error {
	err := n.poll(ctx, 2*time.Minute, func(ctx context.Context) error {
		node, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("node %s has not registered", n.Name)
			}
			return err
		}
		if node.Spec.PodCIDR == "" {
			return fmt.Errorf("node %s has no pod CIDR yet", n.Name)
		}
		n.PodCIDR, err = netip.ParsePrefix(node.Spec.PodCIDR)
		return err
	})
	if err != nil {
		return err
	}
	return n.writeCNIConfig()
}

// waitReady waits for the node's Ready condition.
func (n *Node) waitReady(ctx context.Context, client kubernetes.Interface) error {
	return n.poll(ctx, 2*time.Minute, func(ctx context.Context) error {
		node, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				if c.Status == corev1.ConditionTrue {
					return nil
				}
				return fmt.Errorf("node %s is not Ready: %s: %s", n.Name, c.Reason, c.Message)
			}
		}
		return fmt.Errorf("node %s reports no Ready condition", n.Name)
	})
}

// poll retries check until it passes, one of the node's processes exits,
// ctx ends or timeout passes.
func (n *Node) poll(ctx context.Context, timeout time.Duration, check func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	for {
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := check(attempt)
		cancel()
		if err == nil {
			return nil
		}
		for _, p := range n.procs {
			select {
			case <-p.Done():
				return fmt.Errorf("%s exited (%v):\n%s", p.Name, p.Err(), p.Tail(40))
			default:
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%v (after %s; logs in %s)", err, timeout, filepath.Dir(n.log("kubelet")))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// stop ends the node: kube-proxy and the kubelet, then every pod through
// the CRI, then containerd; whatever is left of it (shims, containers of a
// killed run, mounts, cgroups, the namespace) is removed by removeNode.
func (n *Node) stop() error {
	var errs []error
	procs := slices.Clone(n.procs)
	slices.Reverse(procs)
	for _, p := range procs {
		if strings.HasSuffix(p.Name, " containerd") {
			if err := removePods(n.Socket()); err != nil {
				errs = append(errs, fmt.Errorf("%s: removing pods: %w", n.Name, err))
			}
		}
		if err := p.Stop(syscall.SIGTERM, 30*time.Second); err != nil && !process.EndedBy(err, syscall.SIGTERM) {
			errs = append(errs, fmt.Errorf("%s: %w", p.Name, err))
		}
	}
	n.procs = nil
	return errors.Join(errs...)
}
