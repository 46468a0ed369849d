// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package localnode runs real Kubernetes worker nodes on this machine for
// the local control plane (`make run NODES=n`): each node is a network
// namespace on a bridge of our own, holding Debian's containerd, the
// kubelet and kube-proxy built from go.mod, with every image imported from
// locally built tarballs, so that nothing is ever pulled. A guard keeps all
// of the nodes' and pods' traffic on this machine, and Stop (or the next
// run, after a killed one) removes everything it added: processes,
// containers, mounts, namespaces, routes, rules and cgroups.
package localnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	nodephase "k8s.io/kubernetes/cmd/kubeadm/app/phases/bootstraptoken/node"
)

const (
	// netnsPrefix starts the names of everything a run creates, followed
	// by the run's ID (the supervisor's PID): namespaces, cgroups, the
	// host's guard table, and the run's directory under runRoot.
	netnsPrefix = "turnstile-local-"
	// runRoot holds, for each run, the record a later run needs to remove
	// what a killed run left, and the nodes' containerd runtime state.
	runRoot = "/run/turnstile-local"
	// netnsDir is where `ip netns` keeps the named network namespaces.
	netnsDir = "/run/netns"
)

// Config is what the nodes need from the control plane.
type Config struct {
	// Dir is the local cluster's state directory; the nodes keep theirs
	// under Dir/nodes, their logs under Dir/logs.
	Dir string
	// Bin holds kubelet and kube-proxy, and kubeadm for a kubeadm host
	// (UseBin replaces it).
	Bin string
	// Images are image tarballs to import into every node's containerd,
	// which the nodes' registry also serves (docker-archives, as
	// cmd/nodeimages writes them), unless Offline.
	Images []string
	// Offline has the nodes' registry serve no image: it stands in for
	// the registries all the same and logs every request in
	// logs/registry.log, so that a run that must pull nothing (the air-gap
	// bundle's, an OCI layout archive among Images) shows any pull it makes.
	Offline bool
	// SandboxImage is containerd's pod sandbox image (empty:
	// oci.PauseImage, the kubelet's and kubeadm's default).
	SandboxImage string
	// Containerd, when set, is a directory holding containerd 2.x's
	// containerd, containerd-shim-runc-v2 and ctr (make containerd) for the
	// nodes to run instead of Debian's containerd 1.6.
	Containerd string
	// Nodes is how many nodes to run, named turnstile-node1, 2, ...
	Nodes int
	// Layout is the cluster's addresses.
	Layout Layout
	// Kubeadm is the control plane's kubeadm configuration: its PKI signs
	// the nodes' client certificates and its endpoint is theirs.
	Kubeadm *kubeadmapi.InitConfiguration
	// Progress receives a line for each step.
	Progress func(format string, args ...any)
}

// Cluster is the host's side of a run (bridge and guard) and its nodes.
type Cluster struct {
	cfg   Config
	id    int
	Nodes []*Node
	// created are empty host directories made as mount points.
	created []string
	// registry serves the images to the nodes' containerd.
	registry *registry
	// balancer is haproxy in front of the control plane, when one runs.
	balancer *Balancer
}

// record is what a later run needs to remove this one's leftovers.
type record struct {
	ID     int      `json:"id"`
	Bridge string   `json:"bridge"`
	Table  string   `json:"table"`
	Nodes  []string `json:"nodes"` // netns names: the nodes' and the balancer's
	Roots  []string `json:"roots"` // cgroup roots
	// Mounts holds the directories under which every mount of the run
	// lies: the nodes' state and runtime directories.
	Mounts  []string `json:"mounts"`
	Sockets []string `json:"sockets"`
	// Created are directories the run made on the host (mount points),
	// removed last.
	Created []string `json:"created,omitempty"`
}

// Prepare checks the host, removes what killed runs left behind, and sets
// up the host's side: the run's record, the bridge with the host's address
// (which the apiserver then binds) and the guard, before any node exists.
// maxSocketPath is the longest path a unix socket can have: sun_path's 108
// bytes, one of them the terminating NUL.
const maxSocketPath = 107

func Prepare(cfg Config) (*Cluster, error) {
	if cfg.Nodes < 1 || cfg.Nodes > MaxNodes {
		return nil, fmt.Errorf("NODES=%d: between 1 and %d nodes can run", cfg.Nodes, MaxNodes)
	}
	if err := CheckHost(cfg); err != nil {
		return nil, err
	}
	if cfg.Progress == nil {
		cfg.Progress = func(string, ...any) {}
	}
	RemoveStale()
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "logs"), 0o700); err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, id: os.Getpid()}
	for i := range cfg.Nodes {
		c.Nodes = append(c.Nodes, &Node{Name: fmt.Sprintf("turnstile-node%d", i+1), Index: i, IP: cfg.Layout.NodeIP(i), cluster: c})
	}
	// The kubelet's sockets live under its root directory; the longest of
	// them is pod-resources/ and ten digits. A longer path fails its bind
	// with "invalid argument", and the kubelet exits.
	if long := filepath.Join(c.Nodes[len(c.Nodes)-1].kubeletRoot(), "pod-resources", "0123456789"); len(long) > maxSocketPath {
		return nil, fmt.Errorf("the state directory %s is too deep for the nodes: the kubelet's sockets under it would have paths of %d bytes (%s), and a unix socket's path has at most %d; choose a shorter one",
			cfg.Dir, len(long), long, maxSocketPath)
	}
	// `ip netns add` makes /run/netns, a mount point, where a host has
	// none yet; the run removes it again.
	if _, err := os.Stat(netnsDir); errors.Is(err, os.ErrNotExist) {
		c.created = append(c.created, netnsDir)
	}
	if err := c.writeRecord(); err != nil {
		return nil, err
	}
	if err := addBridge(c.bridge(), cfg.Layout); err != nil {
		return nil, errors.Join(err, c.Remove())
	}
	if err := nft("", hostGuard(c.table(), c.bridge(), cfg.Layout)); err != nil {
		return nil, errors.Join(fmt.Errorf("installing the host's guard: %w", err), c.Remove())
	}
	if err := c.startRegistry(); err != nil {
		return nil, errors.Join(err, c.Remove())
	}
	return c, nil
}

// UseBin has every node run kubeadm and the kubelet from bin from now on
// (Node.UseBin).
func (c *Cluster) UseBin(bin string) error {
	if err := checkBin(bin); err != nil {
		return err
	}
	c.cfg.Bin = bin
	for _, n := range c.Nodes {
		n.binDir = ""
	}
	return nil
}

// UseBin has the node run kubeadm and the kubelet from bin from now on,
// as a package upgrade replaces them on a host: the kubeadm of the node's
// next command, the kubelet of its next (re)start (RestartKubelet). A
// rolling upgrade moves one node at a time.
func (n *Node) UseBin(bin string) error {
	if err := checkBin(bin); err != nil {
		return err
	}
	n.binDir = bin
	return nil
}

func checkBin(bin string) error {
	for _, b := range []string{"kubeadm", "kubelet"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return fmt.Errorf("using the binaries in %s: %w", bin, err)
		}
	}
	return nil
}

func (c *Cluster) bridge() string { return fmt.Sprintf("tsl%d", c.id) }
func (c *Cluster) table() string  { return fmt.Sprintf("%s%d", netnsPrefix, c.id) }
func (c *Cluster) runDir() string { return filepath.Join(runRoot, strconv.Itoa(c.id)) }

func (c *Cluster) progress(format string, args ...any) { c.cfg.Progress(format, args...) }

func (c *Cluster) writeRecord() error {
	r := record{ID: c.id, Bridge: c.bridge(), Table: c.table(), Mounts: []string{c.runDir()}, Created: c.created}
	for _, n := range c.Nodes {
		r.Nodes = append(r.Nodes, n.Netns())
		r.Roots = append(r.Roots, n.CgroupRoot())
		r.Mounts = append(r.Mounts, n.dir())
		r.Sockets = append(r.Sockets, n.Socket())
	}
	if c.balancer != nil {
		r.Nodes = append(r.Nodes, c.balancerNetns())
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.runDir(), 0o700); err != nil {
		return err
	}
	return os.WriteFile(c.runDir()+".json", data, 0o600)
}

// Start starts every node, then waits for each to get its pod range (and
// routes to it) and to be Ready.
func (c *Cluster) Start(ctx context.Context, client kubernetes.Interface) error {
	// kubeadm's bootstrap-token phase lets the apiserver's kubelet client
	// certificate use the kubelets' API: exec, logs, port-forward.
	if err := nodephase.AllowAPIServerToAccessKubeletAPI(client); err != nil {
		return fmt.Errorf("letting the apiserver reach the kubelets: %w", err)
	}
	for _, n := range c.Nodes {
		c.progress("%s: starting containerd, kubelet and kube-proxy on %s", n.Name, n.IP)
		if err := n.start(ctx); err != nil {
			return fmt.Errorf("starting %s: %w", n.Name, err)
		}
	}
	for _, n := range c.Nodes {
		if err := n.waitPodCIDR(ctx, client); err != nil {
			return err
		}
	}
	if err := c.RoutePods(); err != nil {
		return err
	}
	// The Services' range goes to the first node, whose kube-proxy
	// answers for the host (the apiserver reaches webhooks and aggregated
	// APIs through it).
	if err := addRoute("", c.cfg.Layout.Services, c.Nodes[0].IP); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if err := n.waitReady(ctx, client); err != nil {
			return err
		}
		c.progress("%s: Ready, pods in %s", n.Name, n.PodCIDR)
	}
	return nil
}

// RoutePods routes every node's pod range (once it has one) to the node,
// from the host and from every other node: the pods of all nodes reach
// each other as through a CNI plugin's routes.
func (c *Cluster) RoutePods() error {
	for _, n := range c.Nodes {
		if !n.PodCIDR.IsValid() {
			continue
		}
		if err := addRoute("", n.PodCIDR, n.IP); err != nil {
			return err
		}
		for _, other := range c.Nodes {
			if other != n && other.started() {
				if err := addRoute(other.Netns(), n.PodCIDR, n.IP); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Exited delivers the name of the first node process that exits.
func (c *Cluster) Exited() <-chan string {
	exited := make(chan string, 1)
	for _, n := range c.Nodes {
		for _, p := range n.procs {
			go func() {
				<-p.Done()
				select {
				case exited <- fmt.Sprintf("%s (%v; see %s)", p.Name, p.Err(), p.Log):
				default:
				}
			}()
		}
	}
	return exited
}

// RegistryLog is the log of the registry the nodes pull from: a line for
// each request, so that an Offline cluster's is empty while nothing pulls.
func (c *Cluster) RegistryLog() string {
	return filepath.Join(c.cfg.Dir, "logs", "registry.log")
}

// startRegistry serves the images on the host's bridge address, with its
// log in the cluster's logs.
func (c *Cluster) startRegistry() error {
	logFile, err := os.Create(c.RegistryLog())
	if err != nil {
		return err
	}
	tarballs := c.cfg.Images
	if c.cfg.Offline {
		tarballs = nil
	}
	r, err := newRegistry(tarballs, logFile)
	if err != nil {
		return errors.Join(fmt.Errorf("the nodes' image registry: %w", err), logFile.Close())
	}
	if err := r.serve(c.cfg.Layout.Host()); err != nil {
		return errors.Join(err, r.close())
	}
	c.registry = r
	c.progress("registry: serving the nodes' images as %s on %s", strings.Join(r.hosts, ", "), r.addr)
	return nil
}

// Stop stops every node's processes and pods and the registry; Remove then
// removes the rest.
func (c *Cluster) Stop() error {
	var errs []error
	for _, n := range c.Nodes {
		if err := n.stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.registry != nil {
		errs = append(errs, c.registry.close())
	}
	errs = append(errs, c.balancer.Stop())
	return errors.Join(errs...)
}

// Remove removes everything the run added to the host. It is safe to call
// twice, and after Stop failed.
func (c *Cluster) Remove() error {
	data, err := os.ReadFile(c.runDir() + ".json")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("reading %s.json: %w", c.runDir(), err)
	}
	return removeRun(r)
}

// RemoveStale removes what runs whose supervisor is gone left behind.
func RemoveStale() {
	entries, _ := os.ReadDir(runRoot)
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(id)
		if err != nil || processAlive(pid) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(runRoot, e.Name()))
		if err != nil {
			continue
		}
		var r record
		if json.Unmarshal(data, &r) == nil {
			_ = removeRun(r)
		}
	}
}

func processAlive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

func sleep() { time.Sleep(100 * time.Millisecond) }
