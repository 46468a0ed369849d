// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnstile-k8s/turnstile/internal/localnode"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
	"github.com/turnstile-k8s/turnstile/test/ha"
)

// The HA cluster's task page (docs/tasks/kubeadm-ha.md), every block run
// as written on its machine: the balancer and three control-plane nodes,
// each a network namespace on a bridge of the test's own, the nodes with
// their own containerd, kubelet and /etc/kubernetes. haproxy runs the
// page's configuration file (examples/kubeadm-ha/haproxy.cfg) with the
// nodes' addresses in place of the page's; kubeadm runs on its node as
// for the single-node page (commandOnNode). Before the page's undo, the
// test checks beyond the page: haproxy sees every apiserver's /healthz
// answer, each node's mirror pods run and were admitted by the privileged
// policy, and the nodes are three etcd members. After it, nothing of
// kubeadm is left on any node, and the host is as it was.
// `sudo make test-ha-page` runs it.
func TestTaskKubeadmHA(t *testing.T) {
	images, apiserverTar := os.Getenv("TURNSTILE_NODE_IMAGES"), os.Getenv("TURNSTILE_APISERVER_IMAGE")
	if images == "" || apiserverTar == "" || os.Getenv("TURNSTILE_HA_PAGE") == "" || os.Geteuid() != 0 {
		t.Skip("needs root, TURNSTILE_NODE_IMAGES (with the control-plane images), TURNSTILE_APISERVER_IMAGE and TURNSTILE_HA_PAGE; `sudo make test-ha-page` runs it")
	}
	kubeadm, err := framework.Binary("kubeadm")
	if err != nil {
		t.Fatal(err)
	}
	apiserverImage, version := imageName(t, apiserverTar), moduleVersion(t, "k8s.io/kubernetes")
	c := startHAPage(t, filepath.Dir(kubeadm), kubeadmHostImages(images, []string{images}))
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// Each machine's home; node1's holds the repository as ~/turnstile,
	// from which the page runs node1's blocks.
	homes, lbEtc := map[string]string{}, t.TempDir()
	for _, name := range []string{"lb", "node1", "node2", "node3"} {
		homes[name] = t.TempDir()
	}
	if err := os.Symlink(repo, filepath.Join(homes["node1"], "turnstile")); err != nil {
		t.Fatal(err)
	}
	path := string(os.PathListSeparator) + filepath.Dir(kubeadm) + string(os.PathListSeparator) + os.Getenv("PATH")
	machines := map[string]taskMachine{
		"lb": {dir: homes["lb"], env: []string{"HOME=" + homes["lb"], "PATH=" + c.serveBalancer(t, lbEtc) + path},
			replace: map[string]string{"/etc/haproxy": lbEtc}},
	}
	for i, n := range c.cluster.Nodes {
		name := fmt.Sprintf("node%d", i+1)
		// The base version is the pinned one, for kubeadm's token create and
		// upload-certs; the page's init names its own.
		p := pageNode{node: n, base: localnode.InitOptions{Version: version}, connect: c.connect(n)}
		shims := serveCommands(t, n.Name, []string{"kubeadm"}, func(dir string, args []string) (string, int) { return commandOnNode(t, p, dir, args) })
		m := taskMachine{dir: homes[name], env: append(goCaches(t), "HOME="+homes[name], "PATH="+shims+path),
			replace: map[string]string{"/etc/kubernetes": n.KubeadmDir(), "ctr -n k8s.io": "ctr --address " + n.Socket() + " -n k8s.io"}}
		if name == "node1" {
			m.dir = filepath.Join(homes[name], "turnstile")
		}
		machines[name] = m
	}
	runTaskPage(t, "../../docs/tasks/kubeadm-ha.md", 0, taskOptions{
		machines: machines,
		replace:  map[string]string{"scp node1:": "cp " + homes["node1"] + "/", haPageLB: c.cluster.BalancerEndpoint()},
		beforeUndo: func(r *taskRun) {
			if got := strings.Count(r.outputs[len(r.outputs)-1], apiserverImage); got != 3 {
				t.Errorf("the page's apiserver pods: %d run %s, want 3:\n%s", got, apiserverImage, r.outputs[len(r.outputs)-1])
			}
			c.check(t, apiserverImage)
		},
	})
	for _, n := range c.cluster.Nodes {
		if left := n.KubeadmState(); len(left) > 0 {
			t.Errorf("the page's kubeadm reset left on %s: %v", n.Name, left)
		}
	}
	if c.lb == nil {
		t.Error("the page started no haproxy")
	} else if servers, err := c.lb.Servers(); err == nil {
		t.Errorf("haproxy still answers after the page's undo: %v", servers)
	}
}

// haPageLB is the balancer's address on the page, and haPageNodes the
// nodes' in its haproxy.cfg, in the nodes' order.
const haPageLB = "10.0.0.10:6443"

var haPageNodes = []string{"10.0.0.11:6443", "10.0.0.12:6443", "10.0.0.13:6443"}

// haPage is the cluster the HA page makes: the nodes, and the balancer once
// the page has started it.
type haPage struct {
	cluster *localnode.Cluster
	lb      *localnode.Balancer
	client  *kubeadmClient // node1's admin.conf, once kubeadm init made it
}

// startHAPage makes three nodes ready for kubeadm (localnode's
// StartKubeadm) with bin's kubeadm and kubelet and the images
// (prepareKubeadmCluster removes them).
func startHAPage(t *testing.T, bin string, images []string) *haPage {
	t.Helper()
	cluster := prepareKubeadmCluster(t, "ha-page-", localnode.Config{Bin: bin, Images: images, Nodes: 3})
	for _, n := range cluster.Nodes {
		if err := n.StartKubeadm(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	return &haPage{cluster: cluster}
}

// serveBalancer puts a systemctl first on the balancer's PATH that starts
// and stops haproxy in the balancer's namespace: `systemctl restart
// haproxy` runs etc's haproxy.cfg (the page's /etc/haproxy) with the
// nodes' addresses in place of the page's, `systemctl stop haproxy` stops
// it.
func (c *haPage) serveBalancer(t *testing.T, etc string) string {
	return serveCommands(t, "lb", []string{"systemctl"}, func(_ string, args []string) (string, int) {
		switch strings.Join(args, " ") {
		case "systemctl restart haproxy":
			data, err := os.ReadFile(filepath.Join(etc, "haproxy.cfg"))
			if err != nil {
				return err.Error() + "\n", 1
			}
			cfg := string(data)
			for i, n := range c.cluster.Nodes {
				cfg = strings.ReplaceAll(cfg, haPageNodes[i], netip.AddrPortFrom(n.IP, 6443).String())
			}
			// Beside the page's file: t.TempDir may not fail here, off the
			// test's goroutine. StartBalancerFrom refuses a second balancer.
			config := filepath.Join(etc, "haproxy-nodes.cfg")
			if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
				return err.Error() + "\n", 1
			}
			lb, err := c.cluster.StartBalancerFrom(config)
			if err != nil {
				return err.Error() + "\n", 1
			}
			c.lb = lb
			return "", 0
		case "systemctl stop haproxy":
			if err := c.lb.Stop(); err != nil {
				return err.Error() + "\n", 1
			}
			return "", 0
		}
		return fmt.Sprintf("%s: the test runs only systemctl restart haproxy and systemctl stop haproxy on the balancer\n", strings.Join(args, " ")), 1
	})
}

// connect is node n's commandOnNode connect: the cluster's client from
// node1's admin.conf, made the first time, then n's pod network.
func (c *haPage) connect(n *localnode.Node) func(context.Context) error {
	return func(ctx context.Context) error {
		if c.client == nil {
			client, err := newKubeadmClient(filepath.Join(c.cluster.Nodes[0].KubeadmDir(), "admin.conf"))
			if err != nil {
				return err
			}
			c.client = &client
		}
		return n.WaitNetwork(ctx, c.client.client)
	}
}

// check is what the test checks beyond the page, before its undo: every
// apiserver up behind haproxy by its /healthz, each node's mirror pods
// running, the apiserver's ours, admitted by the privileged policy, and
// three etcd members.
func (c *haPage) check(t *testing.T, apiserverImage string) {
	t.Helper()
	if c.client == nil || c.lb == nil {
		t.Fatal("the page made no cluster or no balancer")
	}
	deadline := time.Now().Add(time.Minute)
	for {
		servers, err := c.lb.Servers()
		up := 0
		for _, s := range servers {
			if s.Status == "UP" && s.Check == "L7OK" {
				up++
			}
		}
		if err == nil && up == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy's servers: %v, %v; want node1, node2 and node3 UP by /healthz (L7OK)", servers, err)
		}
		time.Sleep(2 * time.Second)
	}
	for _, n := range c.cluster.Nodes {
		wantMirrorPodsAdmitted(t, c.client, n.Name, map[string]string{"kube-apiserver": apiserverImage})
	}
	if c.client.config.Host != "https://"+c.cluster.BalancerEndpoint() {
		t.Errorf("admin.conf's server is %s, want the balancer's, https://%s", c.client.config.Host, c.cluster.BalancerEndpoint())
	}
	etcd, err := ha.EtcdClient(filepath.Join(c.cluster.Nodes[0].KubeadmDir(), "pki", "etcd"), []string{etcdClientURL(c.cluster.Nodes[0])})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	members, err := etcd.MemberList(t.Context())
	if err != nil || len(members.Members) != 3 {
		t.Errorf("etcd's members: %v, %v; want the three nodes'", members, err)
	}
}
