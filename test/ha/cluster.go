// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package ha runs a highly available control plane on this machine: three
// nodes, each a network namespace with its own address, holding one etcd
// member and one kube-apiserver, exactly as kubeadm's stacked topology lays
// them out (kubeadm writes the PKI and the static pod manifests; the
// processes run the manifests' commands). Two apiservers are Turnstile and
// one is vanilla upstream, with the same flags. The test in this package
// injects faults under a write load and checks that nothing acknowledged is
// lost; `make test-ha` runs it.
package ha

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/turnstile-k8s/turnstile/internal/process"
	"github.com/turnstile-k8s/turnstile/pkg/staticpod"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// Ports inside each node's namespace, kubeadm's defaults. They cannot
// collide with anything on the host: each namespace has its own ports.
const (
	apiserverPort  = 6443
	etcdClientPort = 2379
	etcdPeerPort   = 2380
)

// Binaries the nodes run.
const (
	Turnstile = "kube-apiserver"
	Upstream  = "kube-apiserver-upstream"
)

// Config says what to start.
type Config struct {
	// Dir holds each node's kubeadm root (PKI, manifests, etcd data) and logs.
	Dir string
	// APIServers names the binary of each node's apiserver; its length is
	// the number of nodes.
	APIServers []string
	// TmpfsNode, when not empty, is the node whose etcd data lives on a
	// small tmpfs, so that its disk can be filled.
	TmpfsNode string
	// TmpfsSize is that tmpfs's size, for example "256m".
	TmpfsSize string
	// ExtraArgs go to every apiserver through kubeadm's
	// apiServer.extraArgs, so they are in the manifests.
	ExtraArgs map[string]string
	// Log receives progress lines.
	Log func(format string, args ...any)
}

// Cluster is a running control plane.
type Cluster struct {
	Nodes []*Node
	net   *network
	dir   string
	log   func(format string, args ...any)
	admin *rest.Config // super-admin.conf's credentials, without a host
	etcd  *clientv3.Client
}

// Node is one control-plane node.
type Node struct {
	Name string
	IP   netip.Addr
	// Binary is what its apiserver runs, Turnstile or Upstream.
	Binary string

	c         *Cluster
	root      string
	etcdArgs  []string
	apiArgs   []string
	mu        sync.Mutex
	etcd, api *process.Process
	tmpfs     string // mount point, when the node's etcd data is on tmpfs
}

// Start creates the network and the PKI, starts every etcd member, waits
// for a leader, then starts the apiservers and waits until each is ready.
// On error, what was started is stopped again.
func Start(ctx context.Context, cfg Config) (c *Cluster, err error) {
	c = &Cluster{dir: cfg.Dir, log: cfg.Log}
	defer func() {
		if err != nil {
			_ = c.Stop()
			c = nil
		}
	}()
	if c.net, err = newNetwork(); err != nil {
		return c, err
	}
	for i, bin := range cfg.APIServers {
		n := &Node{Name: fmt.Sprintf("node%d", i+1), IP: c.net.addr(11 + i), Binary: bin, c: c}
		n.root = filepath.Join(cfg.Dir, n.Name)
		c.Nodes = append(c.Nodes, n)
		if err := c.net.addNode(n.Name, i+1, n.IP); err != nil {
			return c, err
		}
	}
	c.log("network: bridge %s at %s, nodes %s", c.net.bridge, c.net.host, c.nodeIPs())
	if err := c.kubeadm(cfg); err != nil {
		return c, err
	}
	for _, n := range c.Nodes {
		if n.Name == cfg.TmpfsNode {
			n.tmpfs = filepath.Join(n.root, "var/lib/etcd")
			if err := os.MkdirAll(n.tmpfs, 0o700); err != nil {
				return c, err
			}
			if err := run("mount", "-t", "tmpfs", "-o", "size="+cfg.TmpfsSize+",mode=0700", c.net.tmpfsSource(), n.tmpfs); err != nil {
				n.tmpfs = ""
				return c, err
			}
		}
	}
	for _, n := range c.Nodes {
		if err := n.StartEtcd(); err != nil {
			return c, err
		}
	}
	if c.etcd, err = c.etcdClient(); err != nil {
		return c, err
	}
	if err := c.WaitEtcdHealthy(ctx, 2*time.Minute); err != nil {
		return c, err
	}
	for _, n := range c.Nodes {
		if err := n.StartAPIServer(ctx, n.Binary); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (c *Cluster) nodeIPs() []string {
	var ips []string
	for _, n := range c.Nodes {
		ips = append(ips, n.IP.String())
	}
	return ips
}

// kubeadmConfig is each node's InitConfiguration and ClusterConfiguration.
// The certificate SANs cover every node, as a kubeadm HA guide sets them.
const kubeadmConfig = `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: %[1]s
  bindPort: %[2]d
nodeRegistration:
  name: %[3]s
  criSocket: unix:///var/run/containerd/containerd.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: %[4]s
controlPlaneEndpoint: %[5]s
apiServer:
  certSANs: [%[6]s]
  extraArgs:%[7]s
etcd:
  local:
    serverCertSANs: [%[6]s]
    peerCertSANs: [%[6]s]
`

// sharedPKI are the files `kubeadm join --control-plane` copies from the
// first control-plane node (kubeadm's certificate upload): the CAs and the
// service-account key. Everything else each node issues for itself.
var sharedPKI = []string{
	"ca.crt", "ca.key", "sa.key", "sa.pub", "front-proxy-ca.crt", "front-proxy-ca.key",
	"etcd/ca.crt", "etcd/ca.key",
}

// kubeadm writes every node's PKI and manifests with the pinned kubeadm, in a
// root of the node's own (kubeadm's --rootfs), and reads the commands back.
func (c *Cluster) kubeadm(cfg Config) error {
	kubeadm, err := framework.Binary("kubeadm")
	if err != nil {
		return err
	}
	version, err := binaryVersion(Turnstile)
	if err != nil {
		return err
	}
	var extra strings.Builder
	keys := make([]string, 0, len(cfg.ExtraArgs))
	for k := range cfg.ExtraArgs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&extra, "\n    - name: %s\n      value: %q", k, cfg.ExtraArgs[k])
	}
	if len(keys) == 0 {
		extra.WriteString(" []")
	}
	sans := strings.Join(c.nodeIPs(), ", ")
	endpoint := fmt.Sprintf("%s:%d", c.Nodes[0].IP, apiserverPort)
	var initialCluster []string
	for _, n := range c.Nodes {
		initialCluster = append(initialCluster, fmt.Sprintf("%s=https://%s:%d", n.Name, n.IP, etcdPeerPort))
	}
	for i, n := range c.Nodes {
		if err := os.MkdirAll(n.root, 0o700); err != nil {
			return err
		}
		config := fmt.Sprintf(kubeadmConfig, n.IP, apiserverPort, n.Name, version, endpoint, sans, extra.String())
		if err := os.WriteFile(filepath.Join(n.root, "kubeadm.yaml"), []byte(config), 0o600); err != nil {
			return err
		}
		if i > 0 {
			for _, f := range sharedPKI {
				if err := copyFile(filepath.Join(c.Nodes[0].root, "etc/kubernetes/pki", f), filepath.Join(n.root, "etc/kubernetes/pki", f)); err != nil {
					return err
				}
			}
		}
		phases := [][]string{{"certs", "all"}, {"control-plane", "apiserver"}, {"etcd", "local"}}
		if i == 0 {
			phases = append(phases, []string{"kubeconfig", "super-admin"})
		}
		for _, p := range phases {
			args := append(append([]string{"init", "phase"}, p...), "--rootfs", n.root, "--config", "/kubeadm.yaml")
			if err := run(kubeadm, args...); err != nil {
				return err
			}
		}
		if n.etcdArgs, err = n.manifestArgs("etcd"); err != nil {
			return err
		}
		// kubeadm writes a one-member cluster and adds members as they
		// join; starting all three at once needs the whole list up front.
		n.etcdArgs = setFlag(n.etcdArgs, "--initial-cluster", strings.Join(initialCluster, ","))
		n.etcdArgs = setFlag(n.etcdArgs, "--initial-cluster-state", "new")
		if n.apiArgs, err = n.manifestArgs("kube-apiserver"); err != nil {
			return err
		}
	}
	admin, err := clientcmd.BuildConfigFromFlags("", filepath.Join(c.Nodes[0].root, "etc/kubernetes/super-admin.conf"))
	if err != nil {
		return err
	}
	admin.Host = ""
	admin.QPS, admin.Burst = 500, 1000
	admin.WarningHandler = rest.NoWarnings{} // the checks read v1 Endpoints, deprecated but what they check
	c.admin = admin
	return nil
}

// manifestArgs reads a static pod manifest's command, with every absolute
// path moved under the node's root.
func (n *Node) manifestArgs(name string) ([]string, error) {
	cmd, err := staticpod.Read(filepath.Join(n.root, "etc/kubernetes/manifests", name+".yaml"))
	if err != nil {
		return nil, err
	}
	args := slices.Clone(cmd.Args)
	for i, arg := range args {
		if flag, value, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(value, "/") {
			args[i] = flag + "=" + filepath.Join(n.root, value)
		}
	}
	return args, nil
}

// setFlag replaces --name=... in args, or appends it.
func setFlag(args []string, name, value string) []string {
	for i, a := range args {
		if strings.HasPrefix(a, name+"=") {
			args[i] = name + "=" + value
			return args
		}
	}
	return append(args, name+"="+value)
}

// APIServerArgs returns the flags the node's apiserver runs with, for the
// check that every node runs the same ones.
func (n *Node) APIServerArgs() []string { return slices.Clone(n.apiArgs) }

func (n *Node) start(name string, args []string) (*process.Process, error) {
	bin, err := framework.Binary(name)
	if err != nil {
		return nil, err
	}
	command := append(append(n.c.net.enter(n.Name), bin), args...)
	return process.StartDisposable(n.Name+"/"+name, filepath.Join(n.root, name+".log"), command)
}

// StartEtcd starts the node's etcd member. It does not wait: a member of a
// new cluster cannot serve until a quorum has started.
func (n *Node) StartEtcd() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	p, err := n.start("etcd", n.etcdArgs)
	if err != nil {
		return err
	}
	n.etcd = p
	return nil
}

// StopEtcd sends sig to the member and waits for it to exit.
func (n *Node) StopEtcd(sig syscall.Signal) {
	n.mu.Lock()
	p := n.etcd
	n.mu.Unlock()
	if p != nil {
		_ = p.Stop(sig, 30*time.Second)
	}
}

// EtcdExited reports whether the node's etcd member has exited, and how.
func (n *Node) EtcdExited() (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-n.etcd.Done():
		return true, n.etcd.Err()
	default:
		return false, nil
	}
}

// StartAPIServer starts the node's apiserver with binary and the
// manifest's flags followed by extra, and waits until its /readyz passes.
func (n *Node) StartAPIServer(ctx context.Context, binary string, extra ...string) error {
	n.mu.Lock()
	p, err := n.start(binary, append(n.APIServerArgs(), extra...))
	if err == nil {
		n.api, n.Binary = p, binary
	}
	n.mu.Unlock()
	if err != nil {
		return err
	}
	client, err := n.Client()
	if err != nil {
		return err
	}
	return p.WaitUntil(ctx, 3*time.Minute, func(ctx context.Context) error {
		_, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	})
}

// StopAPIServer sends sig and waits for the exit. For SIGTERM it fails
// unless the server exits cleanly within a minute.
func (n *Node) StopAPIServer(sig syscall.Signal) error {
	n.mu.Lock()
	p := n.api
	n.mu.Unlock()
	if p == nil {
		return nil
	}
	err := p.Stop(sig, time.Minute)
	if sig == syscall.SIGKILL && process.EndedBy(err, syscall.SIGKILL) {
		return nil
	}
	return err
}

// APIServerRunning reports whether the node's apiserver process is alive.
func (n *Node) APIServerRunning() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.api == nil {
		return false
	}
	select {
	case <-n.api.Done():
		return false
	default:
		return true
	}
}

// URL is the node's apiserver.
func (n *Node) URL() string { return fmt.Sprintf("https://%s:%d", n.IP, apiserverPort) }

// Config is a client config for the node's apiserver alone, as the super
// admin.
func (n *Node) Config() *rest.Config {
	config := rest.CopyConfig(n.c.admin)
	config.Host = n.URL()
	return config
}

// Client is a clientset for the node's apiserver alone.
func (n *Node) Client() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(n.Config())
}

// Cut isolates the node's etcd member and apiserver from the other nodes;
// Heal joins them again.
func (n *Node) Cut() error {
	var others []netip.Addr
	for _, o := range n.c.Nodes {
		if o != n {
			others = append(others, o.IP)
		}
	}
	return n.c.net.cut(n.Name, others)
}

func (n *Node) Heal() error { return n.c.net.heal(n.Name) }

// fillerFile takes what is left of the node's etcd tmpfs.
const fillerFile = "filler"

// FillDisk writes a file that takes every free byte of the node's etcd
// data filesystem.
func (n *Node) FillDisk() (int64, error) {
	if n.tmpfs == "" {
		return 0, fmt.Errorf("%s's etcd data is not on a tmpfs of the test's", n.Name)
	}
	f, err := os.Create(filepath.Join(n.tmpfs, fillerFile))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	written, err := io.Copy(f, zeroReader{})
	if err != nil && !errors.Is(err, syscall.ENOSPC) {
		return written, err
	}
	return written, nil
}

// EtcdLogLine returns the last line of the node's etcd log that contains
// text, or "".
func (n *Node) EtcdLogLine(text string) string {
	data, _ := os.ReadFile(filepath.Join(n.root, "etcd.log"))
	lines := strings.Split(string(data), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], text) {
			return lines[i]
		}
	}
	return ""
}

// FreeDisk removes the filler.
func (n *Node) FreeDisk() error { return os.Remove(filepath.Join(n.tmpfs, fillerFile)) }

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// etcdClient talks to every member with kubeadm's healthcheck-client
// certificate.
func (c *Cluster) etcdClient() (*clientv3.Client, error) {
	var endpoints []string
	for _, n := range c.Nodes {
		endpoints = append(endpoints, n.etcdURL())
	}
	return EtcdClient(filepath.Join(c.Nodes[0].root, "etc/kubernetes/pki/etcd"), endpoints)
}

// EtcdClient talks to the etcd members at endpoints (https URLs) with the
// healthcheck-client certificate of kubeadm's etcd PKI in pki (a node's
// /etc/kubernetes/pki/etcd), as `kubeadm` itself and etcdctl would.
func EtcdClient(pki string, endpoints []string) (*clientv3.Client, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(pki, "healthcheck-client.crt"), filepath.Join(pki, "healthcheck-client.key"))
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		TLS:         &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12},
		Logger:      zap.NewNop(),
	})
}

func (n *Node) etcdURL() string { return fmt.Sprintf("https://%s:%d", n.IP, etcdClientPort) }

// Etcd is a client of the whole etcd cluster.
func (c *Cluster) Etcd() *clientv3.Client { return c.etcd }

// EtcdLeader returns the node whose member leads, asking each member in turn.
func (c *Cluster) EtcdLeader(ctx context.Context) (*Node, error) {
	var lastErr error
	for _, n := range c.Nodes {
		status, err := c.etcd.Status(ctx, n.etcdURL())
		if err != nil {
			lastErr = err
			continue
		}
		for _, m := range c.Nodes {
			s, err := c.etcd.Status(ctx, m.etcdURL())
			if err == nil && s.Header.MemberId == status.Leader {
				return m, nil
			}
		}
		lastErr = fmt.Errorf("no member reports itself as leader %x", status.Leader)
	}
	return nil, fmt.Errorf("finding the etcd leader: %w", lastErr)
}

// WaitEtcdHealthy waits until every member answers, agrees on one leader
// and term, and serves a linearizable read.
func (c *Cluster) WaitEtcdHealthy(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := c.etcdHealthy(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd not healthy after %s: %w", timeout, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (c *Cluster) etcdHealthy(ctx context.Context) error {
	var leader, term uint64
	for _, n := range c.Nodes {
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		status, err := c.etcd.Status(attempt, n.etcdURL())
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		if status.Leader == 0 {
			return fmt.Errorf("%s has no leader", n.Name)
		}
		if leader != 0 && (status.Leader != leader || status.RaftTerm != term) {
			return fmt.Errorf("%s follows %x in term %d, another member %x in term %d", n.Name, status.Leader, status.RaftTerm, leader, term)
		}
		leader, term = status.Leader, status.RaftTerm
		if len(status.Errors) > 0 {
			return fmt.Errorf("%s reports %v", n.Name, status.Errors)
		}
	}
	attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := c.etcd.Get(attempt, "health")
	return err
}

// Stop stops every process (apiservers first), unmounts the tmpfs and
// removes the network. It reports what it could not clean up.
func (c *Cluster) Stop() error {
	var errs []string
	// Every apiserver at once, then every etcd member at once: one node
	// after another, each apiserver waited out its shutdown delay in turn,
	// and the last members, their quorum gone, their election timeouts.
	for _, pick := range []func(*Node) *process.Process{
		func(n *Node) *process.Process { return n.api },
		func(n *Node) *process.Process { return n.etcd },
	} {
		var wg sync.WaitGroup
		for _, n := range c.Nodes {
			n.mu.Lock()
			p := pick(n)
			n.mu.Unlock()
			if p != nil {
				wg.Go(func() { _ = p.Stop(syscall.SIGTERM, 30*time.Second) })
			}
		}
		wg.Wait()
	}
	if c.etcd != nil {
		c.etcd.Close()
	}
	for _, n := range c.Nodes {
		if n.tmpfs != "" {
			if err := syscall.Unmount(n.tmpfs, 0); err != nil {
				errs = append(errs, fmt.Sprintf("unmounting %s: %v", n.tmpfs, err))
			}
		}
	}
	if c.net != nil {
		if err := c.net.remove(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if left := processesUnder(c.dir); len(left) > 0 {
		errs = append(errs, fmt.Sprintf("processes still running with %s on their command line: %v", c.dir, left))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// processesUnder lists the PIDs whose command line mentions dir: every
// process the cluster starts has its root there in its flags.
func processesUnder(dir string) []int { return process.Matching(dir) }

func binaryVersion(name string) (string, error) {
	bin, err := framework.Binary(name)
	if err != nil {
		return "", err
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "Kubernetes "), nil
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}

// History returns every version of the namespace's ConfigMaps that etcd
// stored from revision from up to and including until (EtcdHistory).
func (c *Cluster) History(ctx context.Context, namespace string, from, until int64) ([]Version, error) {
	return EtcdHistory(ctx, c.etcd, namespace, from, until)
}

// EtcdHistory returns every version of the namespace's ConfigMaps that etcd
// stored from revision from up to and including until, from etcd's own
// history (a watch from a past revision replays it).
func EtcdHistory(ctx context.Context, etcd *clientv3.Client, namespace string, from, until int64) ([]Version, error) {
	prefix := "/registry/configmaps/" + namespace + "/"
	if from > until {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), time.Minute)
	defer cancel()
	var out []Version
	for resp := range etcd.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(from)) {
		if err := resp.Err(); err != nil {
			return nil, fmt.Errorf("reading etcd's history of %s from revision %d: %w", prefix, from, err)
		}
		for _, ev := range resp.Events {
			if ev.Type != clientv3.EventTypePut {
				continue
			}
			obj, _, err := storageCodec.Decode(ev.Kv.Value, nil, nil)
			if err != nil {
				return nil, fmt.Errorf("decoding %s at revision %d: %w", ev.Kv.Key, ev.Kv.ModRevision, err)
			}
			cm, ok := obj.(*corev1.ConfigMap)
			if !ok {
				return nil, fmt.Errorf("%s at revision %d holds a %T", ev.Kv.Key, ev.Kv.ModRevision, obj)
			}
			out = append(out, Version{Key: cm.Name, ID: cm.Data[AttemptKey], Rev: ev.Kv.ModRevision})
			if ev.Kv.ModRevision >= until {
				return out, nil
			}
		}
	}
	return nil, fmt.Errorf("etcd's history of %s ended before revision %d: %w", prefix, until, ctx.Err())
}

// storageCodec decodes what the apiserver stores: protobuf for core types.
var storageCodec = scheme.Codecs.UniversalDeserializer()

// Readers are the nodes whose apiserver process runs.
func (c *Cluster) Readers(context.Context) ([]Reader, error) {
	var readers []Reader
	for _, n := range c.Nodes {
		if !n.APIServerRunning() {
			continue
		}
		client, err := n.Client()
		if err != nil {
			return nil, err
		}
		readers = append(readers, Reader{Name: n.Name, Client: client})
	}
	if len(readers) == 0 {
		return nil, fmt.Errorf("no apiserver is running")
	}
	return readers, nil
}

// Converge waits until etcd is healthy, every running apiserver is ready,
// the kubernetes Service's endpoints list exactly the running apiservers,
// and each of them has renewed its identity lease in the last 20 seconds
// (they renew every 10).
func (c *Cluster) Converge(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	if err := c.WaitEtcdHealthy(ctx, timeout); err != nil {
		return err
	}
	for {
		err := c.converged(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not converged after %s: %w", timeout, err)
		}
		time.Sleep(time.Second)
	}
}

func (c *Cluster) converged(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var running []*Node
	want := map[string]bool{}
	for _, n := range c.Nodes {
		if n.APIServerRunning() {
			running = append(running, n)
			want[n.IP.String()] = true
		}
	}
	if len(running) == 0 {
		return fmt.Errorf("no apiserver is running")
	}
	for _, n := range running {
		client, err := n.Client()
		if err != nil {
			return err
		}
		if body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
			return fmt.Errorf("%s /readyz: %v: %s", n.Name, err, body)
		}
	}
	client, err := running[0].Client()
	if err != nil {
		return err
	}
	ep, err := client.CoreV1().Endpoints(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return err
	}
	got := map[string]bool{}
	for _, s := range ep.Subsets {
		for _, a := range s.Addresses {
			got[a.IP] = true
		}
	}
	if !maps.Equal(got, want) {
		return fmt.Errorf("the kubernetes Service's endpoints are %v, the running apiservers %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	leases, err := client.CoordinationV1().Leases(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: "apiserver.kubernetes.io/identity=kube-apiserver"})
	if err != nil {
		return err
	}
	renewed := map[string]time.Time{}
	for _, l := range leases.Items {
		if l.Spec.RenewTime != nil && l.Spec.RenewTime.After(renewed[l.Labels[corev1.LabelHostname]]) {
			renewed[l.Labels[corev1.LabelHostname]] = l.Spec.RenewTime.Time
		}
	}
	for _, n := range running {
		if t, ok := renewed[n.Name]; !ok || time.Since(t) > 20*time.Second {
			return fmt.Errorf("%s's identity lease was last renewed at %v", n.Name, t)
		}
	}
	return nil
}
