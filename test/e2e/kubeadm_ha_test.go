// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/internal/localnode"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
	"github.com/turnstile-k8s/turnstile/test/ha"
	"github.com/turnstile-k8s/turnstile/test/ha/report"
)

// HAKubeadmEnv must be set for TestHAKubeadm to run; `make test-ha-kubeadm`
// sets it, with the older line's binaries (as for make test-upgrade), the
// two lines' releases and the public key of the test's signing key,
// containerd 2 and the report's path; and, to see the run refuse a bundle
// that lacks an image, that image's name.
const (
	HAKubeadmEnv       = "TURNSTILE_HA_KUBEADM"
	haKubeadmReportEnv = "TURNSTILE_HA_KUBEADM_REPORT"
	haContainerdEnv    = "TURNSTILE_CONTAINERD"
	haFromReleaseEnv   = "TURNSTILE_HA_KUBEADM_FROM_RELEASE"
	haToReleaseEnv     = "TURNSTILE_HA_KUBEADM_TO_RELEASE"
	haPublicKeyEnv     = "TURNSTILE_HA_KUBEADM_PUBLIC_KEY"
	haMissingImageEnv  = "TURNSTILE_HA_KUBEADM_MISSING_IMAGE"
)

// haKubeadmEnv is what TestHAKubeadm runs: the two lines' kubeadm and
// kubelet, the air-gap bundles of their releases and the public key whose
// private half signed the bundles' lists, and main's node images (the
// workloads', and upstream's kube-apiserver for the way back).
type haKubeadmEnv struct {
	upgradeLines
	from, to  airGapBundle
	publicKey string
}

// haKubeadmEnvironment is the haKubeadmEnv `make test-ha-kubeadm`
// describes, with HA_MISSING_IMAGE's image left out of the older line's
// bundle; the test is skipped, saying skip, unless it is whole and the
// test runs as root.
func haKubeadmEnvironment(t *testing.T, skip string) haKubeadmEnv {
	t.Helper()
	e := haKubeadmEnv{publicKey: os.Getenv(haPublicKeyEnv)}
	from, to := os.Getenv(haFromReleaseEnv), os.Getenv(haToReleaseEnv)
	e.upgradeLines = readUpgradeLines(t, skip, e.publicKey != "" && from != "" && to != "")
	e.from, e.to = readAirGapBundle(t, from), readAirGapBundle(t, to)
	if missing := os.Getenv(haMissingImageEnv); missing != "" {
		e.from = e.from.without(t, missing)
		t.Logf("%s is left out of the older line's bundle: the run must fail, naming it", missing)
	}
	return e
}

// The production shape, as kubeadm's HA guide builds it and an operator
// upgrades it: three control-plane nodes with stacked etcd behind haproxy
// (localnode's Balancer), made with `kubeadm init --control-plane-endpoint
// --upload-certs` and `kubeadm join --control-plane`, and a worker; the
// older line's Turnstile (v1.36.5) in every kube-apiserver static pod, with
// PodSecurityPolicy enforcing examples/podsecuritypolicy. A write load
// through the balancer, whose every acknowledged write the ledger of
// test/ha checks against etcd's history, and a stream of pod creates that
// PodSecurityPolicy decides, run for the whole test. Under them: a
// control-plane node cut off for 30 s, a node's apiserver manifest removed
// and restored, then the rolling upgrade to main's line (v1.37.2) — `kubeadm
// upgrade apply` on node1, `kubeadm upgrade node` on the others, each node
// drained, its kubelet replaced and restarted, uncordoned, the worker last
// — where the first attempt on node1 and on node2 gives the new apiserver
// an admission configuration it refuses, which kubeadm must roll back by
// itself while the two other nodes serve. Then day two on the upgraded
// cluster: each node's certificates renewed, an etcd snapshot restored to
// every member, and the way back to upstream's apiserver and forward again
// (wayBack). Each step is measured and checked by the ledger; the report goes to _output/ha-kubeadm/report.md
// and report.json.
// `sudo make test-ha-kubeadm` runs it.
func TestHAKubeadm(t *testing.T) {
	skip := fmt.Sprintf("needs root, the older line's binaries, both lines' releases and several minutes; `sudo make test-ha-kubeadm` runs it (%s=1)", HAKubeadmEnv)
	if os.Getenv(HAKubeadmEnv) == "" {
		t.Skip(skip)
	}
	e := haKubeadmEnvironment(t, skip)
	began := time.Now()
	c := startHAKubeadm(t, e, os.Getenv(haContainerdEnv))
	t.Logf("three control-plane nodes and a worker, %s, Ready behind %s after %s", e.fromVersion, c.lb.Endpoint(), time.Since(began).Round(time.Second))
	ctx := t.Context()

	// What must survive the run: the policies, the DaemonSet's pods
	// (drain leaves them, and a kubelet's restart must not restart
	// them), and how alice's pods are decided.
	c.must(t, "create", "namespace", "app")
	c.must(t, "-n", "app", "create", "rolebinding", "alice-edit", "--clusterrole=edit", "--user=alice")
	policies := podSecurityPolicies(t, &c.kubeadmClient)
	keepers := c.createWorkloads(t, "app")
	c.wantNothingLeaves(t, keepers)
	decisions := decideAsAlice(ctx, t, &c.kubeadmClient)
	wantDecisions(t, decisions)

	// The load, for the whole run.
	const ledgerNS, streamNS = "ha-ledger", "psp-stream"
	c.must(t, "create", "namespace", ledgerNS)
	c.must(t, "create", "namespace", streamNS)
	c.must(t, "-n", streamNS, "create", "rolebinding", "alice-edit", "--clusterrole=edit", "--user=alice")
	ledger := &ha.Ledger{}
	var clients []kubernetes.Interface
	for range 4 {
		clients = append(clients, c.loadClient(t, nil))
	}
	load := &ha.Load{Clients: clients, Namespace: ledgerNS, Workers: 4, Pause: 50 * time.Millisecond, Ledger: ledger}
	stream := &podStream{client: c.loadClient(t, &rest.ImpersonationConfig{UserName: "alice", Groups: []string{"system:authenticated"}}), namespace: streamNS}
	loadCtx, stopLoad := context.WithCancel(context.Background())
	var running sync.WaitGroup
	loaded := time.Now()
	running.Go(func() { load.Run(loadCtx) })
	running.Go(func() { stream.run(loadCtx) })
	stop := sync.OnceFunc(func() { stopLoad(); running.Wait() })
	t.Cleanup(stop)

	rep := &report.Report{Title: fmt.Sprintf("%s: three kubeadm control-plane nodes and a worker behind haproxy, %s to %s, air-gapped", t.Name(), e.fromVersion, e.toVersion),
		Command: "sudo make test-ha-kubeadm", Commit: ha.Commit(), Began: began,
		Images: &report.Images{Bundles: []string{e.from.summary(e.fromVersion), e.to.summary(e.toVersion)}}}
	passed := true
	for _, s := range c.steps(e, baseline{load: load, namespace: ledgerNS, stream: stream, decisions: decisions}) {
		if !passed {
			break // the cluster is in no state for the next step
		}
		passed = t.Run(s.name, func(t *testing.T) {
			from := time.Now()
			what := s.run(t)
			took := time.Since(from)
			healed := time.Now()
			if err := c.converge(ctx, 3*time.Minute); err != nil {
				t.Fatal(err)
			}
			converged := time.Since(healed)
			time.Sleep(2 * time.Second) // load on the converged cluster, inside the window
			w, pods := ledger.Window(from, time.Now()), stream.window(from, time.Now())
			step := ha.NewStep(s.name, what, took, w, ha.Checkpoint(ctx, t, c, load, ledgerNS), converged)
			step.Pods, step.Versions = pods, c.versions(ctx, t)
			rep.Steps = append(rep.Steps, step)
			t.Logf("%s in %.0f s: %d writes (%d acknowledged, %d unknown), %d failed requests, errors for %.1f s (longest outage %.1f s), longest stall %.1f s, converged %.1f s after; pod creates %+v; %s",
				s.name, took.Seconds(), w.Writes, w.Acked, w.Unknown, w.Failed, w.ErrorSeconds, w.OutageSeconds, w.StallSeconds, converged.Seconds(), *pods, what)
			for _, v := range step.Versions {
				t.Logf("  %s", v)
			}
			for _, e := range w.FirstErrors {
				t.Logf("  failed: %s", e)
			}
			if w.Acked == 0 {
				t.Errorf("no write was acknowledged during the step: the load is not running")
			}
			if pods.Wrong > 0 {
				t.Errorf("PodSecurityPolicy decided %d pod creates otherwise than before the run: %v", pods.Wrong, stream.wrong(from))
			}
			if s.maxOutage > 0 && w.OutageSeconds > s.maxOutage.Seconds() {
				t.Errorf("requests through the balancer failed for %.1f s in a row, more than %s (%s)", w.OutageSeconds, s.maxOutage, s.outageBound)
			}
		})
	}

	stop()
	t.Run("after the run", func(t *testing.T) {
		lost := ha.Checkpoint(ctx, t, c, load, ledgerNS)
		for _, s := range rep.Steps {
			lost += s.Lost
		}
		rep.Total = ha.NewStep("whole run", "", time.Since(loaded), ledger.Window(loaded, time.Now()), lost, 0)
		rep.Total.Pods = stream.window(loaded, time.Now())
		if lost > 0 {
			t.Errorf("%d ledger errors over the run", lost)
		}
		requests := c.registryRequests(t)
		rep.Images.RegistryRequests = len(requests)
		if len(requests) > 0 {
			t.Errorf("the registry, which stands in for every registry and serves nothing, was asked %d times: a node pulled what the bundles should have held:\n%s",
				len(requests), strings.Join(requests[:min(len(requests), 20)], "\n"))
		}
		if !passed {
			t.Skip("a step failed: the cluster is not upgraded")
		}
		for _, v := range c.versions(ctx, t) {
			if slices.Contains(c.cp, c.node(v.Node)) && !strings.HasPrefix(v.APIServer, e.toVersion+"+turnstile.") {
				t.Errorf("%s's apiserver is %q after the upgrade, want Turnstile's %s", v.Node, v.APIServer, e.toVersion)
			}
			if v.Kubelet != e.toVersion {
				t.Errorf("%s's kubelet is %q after the upgrade, want %s", v.Node, v.Kubelet, e.toVersion)
			}
		}
		if after := podSecurityPolicies(t, &c.kubeadmClient); !reflect.DeepEqual(after, policies) {
			t.Errorf("the policies changed in the upgrade:\nbefore %v\nafter  %v", policies, after)
		}
		wantSamePods(t, keepers, readyPods(t, &c.kubeadmClient, "app", "keeper"))
		c.must(t, "-n", "app", "wait", "--for=condition=Available", "deployment/web", "--timeout=2m")
		if after := decideAsAlice(ctx, t, &c.kubeadmClient); !reflect.DeepEqual(after, decisions) {
			t.Errorf("alice's pods are decided differently after the upgrade:\nbefore %q\nafter  %q", decisions, after)
		}
	})
	ha.WriteReport(t, rep, os.Getenv(haKubeadmReportEnv))
}

// haKubeadm is the running cluster: kubeadmClient is admin.conf, whose
// server is the balancer.
type haKubeadm struct {
	kubeadmClient
	cluster *localnode.Cluster
	lb      *localnode.Balancer
	cp      []*localnode.Node // node1, node2, node3
	worker  *localnode.Node
	etcd    *clientv3.Client
	// The kube-apiserver images of the two lines' bundles.
	fromImage, toImage string
	// bundled holds the nodes that have installed main's bundle.
	bundled map[*localnode.Node]bool
}

// startHAKubeadm makes the cluster with the older line's kubeadm and
// kubelet, air-gapped: no registry serves an image (localnode's registry
// stands in for all of them, serves nothing and logs every request) and
// each node installs the older line's bundle as docs/release.md says,
// which kubeadm names with its imageRepository, pulling only what a node
// lacks (kubeadm's default). Then as kubeadm's HA guide says: haproxy first, `kubeadm init
// --control-plane-endpoint --upload-certs` on node1, the example policies
// (until they exist PodSecurityPolicy admits no pod, the control plane's
// mirror pods among them), `kubeadm join --control-plane` on node2 and
// node3, `kubeadm join` on the worker. Whatever fails, everything is
// removed when the test ends, and the host is checked to be as it was.
func startHAKubeadm(t *testing.T, e haKubeadmEnv, containerd string) *haKubeadm {
	t.Helper()
	// The workloads' images, which an air-gapped operator brings in too.
	var workloads []string
	for _, img := range oci.NodeImages() {
		workloads = append(workloads, filepath.Join(e.toImages, img.Tarball))
	}
	cluster := prepareKubeadmCluster(t, "ha-kubeadm-", localnode.Config{Bin: e.fromBin, Images: workloads, Offline: true, SandboxImage: e.from.pause,
		Containerd: containerd, Nodes: 4})
	c := &haKubeadm{cluster: cluster, cp: cluster.Nodes[:3], worker: cluster.Nodes[3], fromImage: e.from.apiserver, toImage: e.to.apiserver,
		bundled: map[*localnode.Node]bool{}}
	t.Cleanup(func() {
		if c.etcd != nil {
			c.etcd.Close()
		}
	})
	var err error
	if c.lb, err = cluster.StartBalancer(c.cp); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, n := range cluster.Nodes {
		if err := n.StartKubeadm(ctx); err != nil {
			t.Fatal(err)
		}
		t.Log(e.from.install(t, n, e.publicKey))
	}
	secrets, err := localnode.NewJoinSecrets()
	if err != nil {
		t.Fatal(err)
	}
	first := c.cp[0]
	out, err := first.KubeadmInit(ctx, localnode.InitOptions{Version: e.fromVersion, ImageRepository: e.from.repository, PullIfNotPresent: true,
		AdmissionPlugins: []string{"NodeRestriction", "PodSecurityPolicy"}, ControlPlaneEndpoint: c.lb.Endpoint(), Join: secrets})
	if err != nil || !strings.Contains(out, "You can now join any number of control-plane nodes") {
		t.Fatalf("kubeadm init: %v\n%s", err, out)
	}
	t.Logf("kubeadm init on %s:\n%s", first.Name, lastLines(out, 14))
	if c.kubeadmClient, err = newKubeadmClient(filepath.Join(first.KubeadmDir(), "admin.conf")); err != nil {
		t.Fatal(err)
	}
	if c.config.Host != "https://"+c.lb.Endpoint() {
		t.Fatalf("admin.conf's server is %s, want the balancer, https://%s", c.config.Host, c.lb.Endpoint())
	}
	c.must(t, "apply", "-f", "../../examples/podsecuritypolicy/")
	if err := first.WaitNetwork(ctx, c.client); err != nil {
		t.Fatal(err)
	}
	hash, err := first.CACertHash()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range cluster.Nodes[1:] {
		controlPlane := n != c.worker
		out, err := n.KubeadmJoin(ctx, localnode.JoinOptions{Endpoint: c.lb.Endpoint(), Secrets: *secrets, CACertHash: hash,
			ControlPlane: controlPlane, PullIfNotPresent: true})
		if err != nil || !strings.Contains(out, "This node has joined the cluster") {
			t.Fatalf("kubeadm join on %s: %v\n%s", n.Name, err, out)
		}
		t.Logf("kubeadm join%s on %s:\n%s", map[bool]string{true: " --control-plane"}[controlPlane], n.Name, lastLines(out, 6))
		if err := n.WaitNetwork(ctx, c.client); err != nil {
			t.Fatal(err)
		}
	}
	if err := cluster.RoutePods(); err != nil {
		t.Fatal(err)
	}
	var endpoints []string
	for _, n := range c.cp {
		endpoints = append(endpoints, "https://"+net.JoinHostPort(n.IP.String(), "2379"))
	}
	if c.etcd, err = ha.EtcdClient(filepath.Join(first.KubeadmDir(), "pki", "etcd"), endpoints); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.cp {
		wantMirrorPodsAdmitted(t, &c.kubeadmClient, n.Name, map[string]string{"kube-apiserver": c.fromImage})
	}
	if err := c.converge(ctx, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	return c
}

// node is the cluster's node named name.
func (c *haKubeadm) node(name string) *localnode.Node {
	for _, n := range c.cluster.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// direct is admin.conf's configuration for n's own apiserver, not the
// balancer.
func (c *haKubeadm) direct(n *localnode.Node) *rest.Config {
	config := rest.CopyConfig(c.config)
	config.Host = "https://" + net.JoinHostPort(n.IP.String(), "6443")
	config.Timeout = 10 * time.Second
	config.WarningHandler = rest.NoWarnings{}
	return config
}

// loadClient is a client of the load's, through the balancer, on a
// connection of its own (client-go shares one connection among clients of
// the same configuration, and haproxy sends each connection to one
// apiserver): each one is a client of the cluster as a kubelet or a
// controller is. A request still unanswered after 15 s counts as failed,
// with an unknown outcome, rather than blocking its worker.
func (c *haKubeadm) loadClient(t *testing.T, as *rest.ImpersonationConfig) kubernetes.Interface {
	t.Helper()
	config := rest.CopyConfig(c.config)
	config.QPS, config.Burst, config.Timeout = 500, 1000, 15*time.Second
	config.WarningHandler = rest.NoWarnings{}
	config.Dial = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	if as != nil {
		config.Impersonate = *as
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// History reads etcd's history (test/ha's Target).
func (c *haKubeadm) History(ctx context.Context, namespace string, from, until int64) ([]ha.Version, error) {
	return ha.EtcdHistory(ctx, c.etcd, namespace, from, until)
}

// Readers are the control-plane nodes whose apiserver is ready, each read
// directly.
func (c *haKubeadm) Readers(ctx context.Context) ([]ha.Reader, error) {
	var readers []ha.Reader
	for _, n := range c.cp {
		client, err := kubernetes.NewForConfig(c.direct(n))
		if err != nil {
			return nil, err
		}
		if _, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err == nil {
			readers = append(readers, ha.Reader{Name: n.Name, Client: client})
		}
	}
	if len(readers) == 0 {
		return nil, errors.New("no control-plane node's apiserver is ready")
	}
	return readers, nil
}

// converge waits until the cluster is whole again: etcd has three started
// members that agree on a leader, every control-plane node's apiserver is
// ready and haproxy has it up, checked on /healthz, the kubernetes
// Service's endpoints are the three nodes, and every node is Ready.
func (c *haKubeadm) converge(ctx context.Context, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		last = c.converged(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the cluster did not converge in %s: %v", timeout, last)
	}
	return nil
}

func (c *haKubeadm) converged(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	members, err := c.etcd.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("etcd's members: %w", err)
	}
	if len(members.Members) != len(c.cp) {
		return fmt.Errorf("etcd has %d members, want %d", len(members.Members), len(c.cp))
	}
	var leader uint64
	for _, m := range members.Members {
		if m.Name == "" || len(m.ClientURLs) == 0 {
			return fmt.Errorf("etcd member %x has not started", m.ID)
		}
		status, err := c.etcd.Status(ctx, m.ClientURLs[0])
		if err != nil {
			return fmt.Errorf("etcd member %s: %w", m.Name, err)
		}
		if status.Leader == 0 || (leader != 0 && status.Leader != leader) {
			return fmt.Errorf("etcd member %s follows %x, another %x", m.Name, status.Leader, leader)
		}
		leader = status.Leader
	}
	servers, err := c.lb.Servers()
	if err != nil {
		return fmt.Errorf("haproxy's stats: %w", err)
	}
	for _, n := range c.cp {
		client, err := kubernetes.NewForConfig(c.direct(n))
		if err != nil {
			return err
		}
		if body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
			return fmt.Errorf("%s's apiserver /readyz: %v: %s", n.Name, err, body)
		}
		if s := servers[n.Name]; s.Status != "UP" || s.Check != "L7OK" {
			return fmt.Errorf("haproxy has %s %s (last check %s)", n.Name, s.Status, s.Check)
		}
	}
	eps, err := c.client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kubernetes"})
	if err != nil {
		return err
	}
	got := map[string]bool{}
	for _, s := range eps.Items {
		for _, e := range s.Endpoints {
			for _, a := range e.Addresses {
				got[a] = true
			}
		}
	}
	want := map[string]bool{}
	for _, n := range c.cp {
		want[n.IP.String()] = true
	}
	if !maps.Equal(got, want) {
		return fmt.Errorf("the kubernetes Service's endpoints are %v, want the three control-plane nodes", got)
	}
	nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, n := range nodes.Items {
		if !nodeReady(&n) {
			return fmt.Errorf("node %s is not Ready", n.Name)
		}
	}
	if len(nodes.Items) != len(c.cluster.Nodes) {
		return fmt.Errorf("%d nodes, want %d", len(nodes.Items), len(c.cluster.Nodes))
	}
	return nil
}

// versions is what each node runs: its apiserver's /version, asked
// directly, and the etcd image its static pod manifest names (control-plane
// nodes), and its kubelet's version as the node reports it.
func (c *haKubeadm) versions(ctx context.Context, t *testing.T) []report.NodeVersions {
	t.Helper()
	var out []report.NodeVersions
	for _, n := range c.cluster.Nodes {
		v := report.NodeVersions{Node: n.Name}
		node, err := c.client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("node %s: %v", n.Name, err)
		} else {
			v.Kubelet = node.Status.NodeInfo.KubeletVersion
		}
		if n != c.worker {
			client, err := kubernetes.NewForConfig(c.direct(n))
			if err != nil {
				t.Fatal(err)
			}
			if info, err := client.Discovery().ServerVersion(); err != nil {
				v.APIServer = "unavailable (" + err.Error() + ")"
			} else {
				v.APIServer = info.GitVersion
			}
			v.Etcd = manifestImageTag(t, n, "etcd")
		}
		out = append(out, v)
	}
	return out
}

// manifestImageTag is the tag of the image that n's static pod manifest
// of component names.
func manifestImageTag(t *testing.T, n *localnode.Node, component string) string {
	t.Helper()
	image := manifestImage(t, n, component)
	return image[strings.LastIndex(image, ":")+1:]
}

// createWorkloads runs, in namespace, a DaemonSet of agnhost on every node
// (drain leaves its pods, so they must live through the whole run) and a
// Deployment of three with a PodDisruptionBudget (drain moves its pods,
// one at a time), both as user 1000, which the restricted policy admits;
// it returns the DaemonSet's pods.
func (c *haKubeadm) createWorkloads(t *testing.T, namespace string) map[string]*corev1.Pod {
	t.Helper()
	spec := userPod("", nil).Spec
	spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/hostname", Port: intstr.FromInt32(8080)}}}
	template := func(app string) map[string]any {
		return map[string]any{"metadata": map[string]any{"labels": map[string]string{"app": app}}, "spec": spec}
	}
	selector := func(app string) map[string]any { return map[string]any{"matchLabels": map[string]string{"app": app}} }
	objects := []map[string]any{
		{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": map[string]any{"name": "keeper", "namespace": namespace},
			"spec": map[string]any{"selector": selector("keeper"), "template": template("keeper")}},
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": namespace},
			"spec": map[string]any{"replicas": 3, "selector": selector("web"), "template": template("web")}},
		{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": map[string]any{"name": "web", "namespace": namespace},
			"spec": map[string]any{"maxUnavailable": 1, "selector": selector("web")}},
	}
	var manifest []string
	for _, o := range objects {
		data, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		manifest = append(manifest, string(data))
	}
	file := filepath.Join(t.TempDir(), "workloads.yaml")
	if err := os.WriteFile(file, []byte(strings.Join(manifest, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	c.must(t, "apply", "-f", file)
	c.must(t, "-n", namespace, "rollout", "status", "daemonset/keeper", "--timeout=3m")
	c.must(t, "-n", namespace, "wait", "--for=condition=Available", "deployment/web", "--timeout=3m")
	pods := readyPods(t, &c.kubeadmClient, namespace, "keeper")
	if len(pods) != len(c.cluster.Nodes) {
		t.Fatalf("the DaemonSet runs %d pods, want one on each of %d nodes", len(pods), len(c.cluster.Nodes))
	}
	for _, p := range pods {
		if p.Annotations["kubernetes.io/psp"] != "restricted" {
			t.Errorf("%s was admitted by %q, want restricted", p.Name, p.Annotations["kubernetes.io/psp"])
		}
	}
	return pods
}

// wantNothingLeaves checks the guard from a pod on every node:
// 198.51.100.1 (TEST-NET-2) stands for any address outside the machine,
// which no node routes and the guard drops.
func (c *haKubeadm) wantNothingLeaves(t *testing.T, pods map[string]*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		out, err := c.run("-n", p.Namespace, "exec", p.Name, "--", "/agnhost", "connect", "--timeout=3s", "198.51.100.1:80")
		switch {
		case err == nil:
			t.Errorf("a pod on %s reached 198.51.100.1:\n%s", p.Spec.NodeName, out)
		case !strings.Contains(out, "TIMEOUT") && !strings.Contains(out, "network is unreachable"):
			t.Errorf("agnhost connect from a pod on %s did not say how 198.51.100.1 was unreachable: %v\n%s", p.Spec.NodeName, err, out)
		}
	}
}

// haStep is one step of the run: run does it and says what happened.
// maxOutage, when set, bounds the longest stretch of failing requests
// during it, for the reason outageBound gives.
type haStep struct {
	name        string
	run         func(t *testing.T) string
	maxOutage   time.Duration
	outageBound string
}

// etcdHealthcheckTimeout is how long an apiserver's /healthz waits for its
// etcd (--etcd-healthcheck-timeout, 2 s by default): a check of haproxy's
// on a server whose etcd is gone takes that long to fail.
const etcdHealthcheckTimeout = 2 * time.Second

// checkSlack is what the checks add over their waits, all of them together:
// each check's TLS handshake and the apiserver's answer after its etcd
// timeout, and a request that reached the apiserver just before its etcd
// stopped. A clean-clone run measured 14.2 s against the bound without it.
const checkSlack = time.Second

// upgradeTimeout is how long kubeadm waits for each new static pod before
// it rolls a node back (its UpgradeConfiguration's
// timeouts.upgradeManifests; kubeadm's default is 5 minutes, which the
// failed upgrade would wait out whole).
const upgradeTimeout = 150 * time.Second

func (c *haKubeadm) steps(e haKubeadmEnv, b baseline) []haStep {
	node1, node2, node3 := c.cp[0], c.cp[1], c.cp[2]
	// The longest a server whose etcd is gone stays in haproxy's rotation.
	down := localnode.BalancerCheckInterval + localnode.BalancerFall*(localnode.BalancerCheckInterval+etcdHealthcheckTimeout) + checkSlack
	downBound := fmt.Sprintf("haproxy checks a server at most %s after it fails and takes it out, closing its connections, after %d failed checks %s apart, each failing within the apiserver's etcd health-check timeout, %s; plus %s for the checks' handshakes and answers",
		localnode.BalancerCheckInterval, localnode.BalancerFall, localnode.BalancerCheckInterval, etcdHealthcheckTimeout, checkSlack)
	return append([]haStep{
		{name: "steady state", run: func(t *testing.T) string {
			time.Sleep(10 * time.Second)
			return "no fault: the baseline"
		}},
		{name: "node2's network cut for 30 s", run: func(t *testing.T) string {
			return c.cutNetwork(t, node2, 30*time.Second)
		}},
		{name: "node3's apiserver manifest removed and restored", run: func(t *testing.T) string {
			return c.removeManifest(t, node3)
		}},
		{name: "node1: kubeadm upgrade apply fails, rolled back", run: func(t *testing.T) string {
			return c.failedUpgrade(t, e, node1, true)
		}, maxOutage: down, outageBound: downBound},
		{name: "upgrade node1: kubeadm upgrade apply", run: func(t *testing.T) string {
			return c.upgradeNode(t, e, node1, true)
		}},
		{name: "node2: kubeadm upgrade node fails, rolled back", run: func(t *testing.T) string {
			return c.failedUpgrade(t, e, node2, false)
		}, maxOutage: down, outageBound: downBound},
		{name: "upgrade node2: kubeadm upgrade node", run: func(t *testing.T) string {
			return c.upgradeNode(t, e, node2, false)
		}},
		{name: "upgrade node3: kubeadm upgrade node", run: func(t *testing.T) string {
			return c.upgradeNode(t, e, node3, false)
		}},
		{name: "upgrade the worker: kubeadm upgrade node", run: func(t *testing.T) string {
			return c.upgradeNode(t, e, c.worker, false)
		}},
		{name: "node1: kubeadm certs renew all, static pods restarted", run: func(t *testing.T) string {
			return c.renewCertificates(t, node1)
		}},
		{name: "node2: kubeadm certs renew all, static pods restarted", run: func(t *testing.T) string {
			return c.renewCertificates(t, node2)
		}},
		{name: "node3: kubeadm certs renew all, static pods restarted", run: func(t *testing.T) string {
			return c.renewCertificates(t, node3)
		}},
		{name: "etcd snapshot; every member restored from it", run: func(t *testing.T) string {
			return c.restoreEtcd(t, b)
		}},
	}, c.wayBack(e, b)...)
}

// baseline is what the steps need of the run: its load, the load's
// namespace and the pod stream, and how PodSecurityPolicy decided alice's
// pods before the first step, which the backup and restore drill and the
// way back must keep.
type baseline struct {
	load      *ha.Load
	namespace string
	stream    *podStream
	decisions map[string]string
}

// pspState is what the cluster holds of PodSecurityPolicy: the policies
// (UID and spec), the RBAC that grants them and the app's pods'
// kubernetes.io/psp, which a restore and the way back must keep.
type pspState struct{ policies, rbac, annotations map[string]string }

func (c *haKubeadm) pspState(t *testing.T) pspState {
	t.Helper()
	return pspState{podSecurityPolicies(t, &c.kubeadmClient), pspRBAC(t, &c.kubeadmClient), pspAnnotations(t, &c.kubeadmClient, "app")}
}

// wantPSPState checks that the cluster holds want of PodSecurityPolicy
// and decides alice's pods as decisions says, after what.
func (c *haKubeadm) wantPSPState(t *testing.T, want pspState, decisions map[string]string, after string) {
	t.Helper()
	got := c.pspState(t)
	for _, f := range []struct {
		what        string
		got, before map[string]string
	}{
		{"the PodSecurityPolicies", got.policies, want.policies},
		{"the RBAC that grants the PodSecurityPolicies", got.rbac, want.rbac},
		{"the app's pods' kubernetes.io/psp annotations", got.annotations, want.annotations},
	} {
		if !reflect.DeepEqual(f.got, f.before) {
			t.Errorf("%s differ after %s:\nbefore %v\nafter  %v", f.what, after, f.before, f.got)
		}
	}
	if got := decideAsAlice(t.Context(), t, &c.kubeadmClient); !reflect.DeepEqual(got, decisions) {
		t.Errorf("alice's pods are decided differently after %s:\nbefore %q\nafter  %q", after, decisions, got)
	}
}

// etcdBumpRevision is how far etcdutl's restore moves etcd's revision past
// the snapshot's (with --mark-compacted), as etcd's recovery guide
// recommends for a cluster with watchers: every informer then finds its
// revision compacted and lists again, rather than take a restored
// revision for one it has seen.
const etcdBumpRevision = 1_000_000_000

// restoreEtcd is the backup and restore drill of a stacked control plane,
// as etcd's disaster recovery guide and Kubernetes's "Operating etcd
// clusters" say, under the load. Once the ledger has checked every write,
// a snapshot, with the load held; 10 s more of writes; then every
// control-plane static pod stopped (their manifests moved out), every
// member's data restored from the snapshot with etcdutl (the members'
// names and peer URLs as before, a new cluster token), the etcd members
// started, and then the rest. The writes acknowledged after the snapshot
// are rolled back, as a restore means, and counted; the step's checkpoint
// then checks that every write before it is there. The PodSecurityPolicies,
// the RBAC that grants them and the app's pods' kubernetes.io/psp
// annotations must be as at the snapshot, and PodSecurityPolicy must decide
// alice's pods as before.
func (c *haKubeadm) restoreEtcd(t *testing.T, d baseline) string {
	t.Helper()
	ctx := t.Context()
	etcdutl, err := framework.Binary("etcdutl")
	if err != nil {
		t.Fatal(err)
	}
	members, err := c.etcd.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var cluster []string
	peers := map[string]string{}
	for _, m := range members.Members {
		cluster = append(cluster, m.Name+"="+m.PeerURLs[0])
		peers[m.Name] = m.PeerURLs[0]
	}

	if problems := ha.Checkpoint(ctx, t, c, d.load, d.namespace); problems > 0 {
		t.Fatalf("%d ledger errors before the snapshot", problems)
	}
	snapshot := filepath.Join(t.TempDir(), "snapshot.db")
	var before pspState
	d.load.Hold(func() {
		before = c.pspState(t)
		saveSnapshot(ctx, t, c.etcd, snapshot)
	})
	size := fileSize(t, snapshot)
	time.Sleep(10 * time.Second) // writes the restore will take back

	down := time.Now()
	var stopped []*stoppedPods
	for _, n := range c.cp {
		stopped = append(stopped, stopStaticPods(t, n, controlPlanePods...))
	}
	for _, n := range c.cp {
		c.waitServer(t, n, "DOWN", 2*time.Minute)
		c.waitEtcdMember(t, n, false)
	}
	for _, n := range c.cp {
		restored := n.EtcdDataDir() + ".restored"
		cmd := exec.CommandContext(ctx, etcdutl, "snapshot", "restore", snapshot, "--name", n.Name,
			"--initial-cluster", strings.Join(cluster, ","), "--initial-cluster-token", "turnstile-restored",
			"--initial-advertise-peer-urls", peers[n.Name], "--data-dir", restored,
			"--bump-revision", strconv.Itoa(etcdBumpRevision), "--mark-compacted")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("etcdutl snapshot restore for %s: %v\n%s", n.Name, err, out)
		}
		member := filepath.Join(n.EtcdDataDir(), "member")
		if err := os.RemoveAll(member); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(restored, "member"), member); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(restored); err != nil {
			t.Fatal(err)
		}
	}
	for _, pods := range stopped {
		pods.start(t, "etcd")
	}
	for _, n := range c.cp {
		c.waitEtcdMember(t, n, true)
	}
	status, err := c.etcd.Status(ctx, etcdClientURL(c.cp[0]))
	if err != nil {
		t.Fatal(err)
	}
	restoredRev := status.Header.Revision
	snapshotRev := restoredRev - etcdBumpRevision
	rolledBack := d.load.Restored(snapshotRev, restoredRev)
	for _, pods := range stopped {
		pods.start(t)
	}
	for _, n := range c.cp {
		c.waitServer(t, n, "UP", 3*time.Minute)
	}
	downFor := time.Since(down)

	c.wantPSPState(t, before, d.decisions, "the restore")
	return fmt.Sprintf("a %.1f MiB snapshot at revision %d; %d writes acknowledged after it rolled back by the restore, as expected; every apiserver and etcd member down for %.0f s; %d PodSecurityPolicies, %d RBAC objects granting them and %d pods' psp annotations as at the snapshot",
		float64(size)/(1<<20), snapshotRev, rolledBack, downFor.Seconds(), len(before.policies), len(before.rbac), len(before.annotations))
}

// waitEtcdMember waits up to 2 minutes for n's etcd member to answer (up)
// or to stop answering.
func (c *haKubeadm) waitEtcdMember(t *testing.T, n *localnode.Node, up bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		status, err := c.etcd.Status(ctx, etcdClientURL(n))
		return (err == nil && status.Leader != 0) == up, nil
	})
	if err != nil {
		t.Fatalf("%s's etcd member: want up=%v after 2 minutes: %v", n.Name, up, err)
	}
}

// etcdClientURL is n's etcd member's client URL, as kubeadm configures it.
func etcdClientURL(n *localnode.Node) string {
	return "https://" + net.JoinHostPort(n.IP.String(), "2379")
}

// saveSnapshot writes etcd's snapshot to path, as `etcdctl snapshot save`
// does with the same call.
func saveSnapshot(ctx context.Context, t *testing.T, etcd *clientv3.Client, path string) {
	t.Helper()
	r, err := etcd.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, r); err != nil {
		t.Fatal(errors.Join(err, f.Close()))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// pspRBAC is the RBAC that grants PodSecurityPolicies: every ClusterRole
// and Role whose rules name podsecuritypolicies, and every binding to one,
// each by kind, namespace and name, with its UID and its rules or subjects.
func pspRBAC(t *testing.T, h *kubeadmClient) map[string]string {
	t.Helper()
	ctx, rbac := t.Context(), h.client.RbacV1()
	out, granting := map[string]string{}, map[string]bool{}
	names := func(rules []rbacv1.PolicyRule) bool {
		for _, r := range rules {
			if slices.Contains(r.Resources, "podsecuritypolicies") {
				return true
			}
		}
		return false
	}
	roles, err := rbac.ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range roles.Items {
		if names(r.Rules) {
			granting["ClusterRole/"+r.Name] = true
			out["ClusterRole/"+r.Name] = fmt.Sprintf("%s %v", r.UID, r.Rules)
		}
	}
	nsRoles, err := rbac.Roles("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range nsRoles.Items {
		if names(r.Rules) {
			granting["Role/"+r.Name] = true
			out["Role/"+r.Namespace+"/"+r.Name] = fmt.Sprintf("%s %v", r.UID, r.Rules)
		}
	}
	bindings, err := rbac.ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bindings.Items {
		if granting[b.RoleRef.Kind+"/"+b.RoleRef.Name] {
			out["ClusterRoleBinding/"+b.Name] = fmt.Sprintf("%s %v %v", b.UID, b.RoleRef, b.Subjects)
		}
	}
	nsBindings, err := rbac.RoleBindings("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range nsBindings.Items {
		if granting[b.RoleRef.Kind+"/"+b.RoleRef.Name] {
			out["RoleBinding/"+b.Namespace+"/"+b.Name] = fmt.Sprintf("%s %v %v", b.UID, b.RoleRef, b.Subjects)
		}
	}
	if len(out) == 0 {
		t.Fatal("no RBAC grants a PodSecurityPolicy: nothing to compare")
	}
	return out
}

// pspAnnotations is each pod of namespace by name, with its UID and the
// PodSecurityPolicy that admitted it (kubernetes.io/psp).
func pspAnnotations(t *testing.T, h *kubeadmClient, namespace string) map[string]string {
	t.Helper()
	pods, err := h.client.CoreV1().Pods(namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		out[p.Name] = string(p.UID) + " " + p.Annotations["kubernetes.io/psp"]
	}
	if len(out) == 0 {
		t.Fatalf("no pod in %s: nothing to compare", namespace)
	}
	return out
}

// controlPlanePods are the static pods kubeadm writes on a control-plane
// node, each in /etc/kubernetes/manifests/<name>.yaml.
var controlPlanePods = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// stoppedPods are static pods of a node stopped as kubeadm's guides stop
// one: their manifests moved out of /etc/kubernetes/manifests, into
// manifests.aside beside it, until start moves them back.
type stoppedPods struct {
	n     *localnode.Node
	names []string // the pods whose manifests are out
}

func (s *stoppedPods) manifest(pod string) string {
	return filepath.Join(s.n.KubeadmDir(), "manifests", pod+".yaml")
}

func (s *stoppedPods) asideDir() string { return filepath.Join(s.n.KubeadmDir(), "manifests.aside") }

func (s *stoppedPods) aside(pod string) string { return filepath.Join(s.asideDir(), pod+".yaml") }

// stopStaticPods moves the manifests of pods out of n's manifests
// directory; the kubelet then stops them. Whatever is still out when the
// test ends goes back.
func stopStaticPods(t *testing.T, n *localnode.Node, pods ...string) *stoppedPods {
	t.Helper()
	s := &stoppedPods{n: n}
	if err := os.MkdirAll(s.asideDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pod := range s.names {
			_ = os.Rename(s.aside(pod), s.manifest(pod))
		}
		_ = os.Remove(s.asideDir())
	})
	for _, pod := range pods {
		if err := os.Rename(s.manifest(pod), s.aside(pod)); err != nil {
			t.Fatal(err)
		}
		s.names = append(s.names, pod)
	}
	return s
}

// start moves the manifests of pods (with none, of every pod still out)
// back; the kubelet then starts them again.
func (s *stoppedPods) start(t *testing.T, pods ...string) {
	t.Helper()
	if len(pods) == 0 {
		pods = slices.Clone(s.names)
	}
	for _, pod := range pods {
		if err := os.Rename(s.aside(pod), s.manifest(pod)); err != nil {
			t.Fatal(err)
		}
		s.names = slices.DeleteFunc(s.names, func(name string) bool { return name == pod })
	}
	if len(s.names) == 0 {
		if err := os.Remove(s.asideDir()); err != nil {
			t.Fatal(err)
		}
	}
}

// renewCertificates renews n's certificates as kubeadm's certificate
// management guide says, under the load: `kubeadm certs renew all`, then
// every control-plane static pod restarted, since not every component
// reloads its certificates: its manifest moved out of
// /etc/kubernetes/manifests until the kubelet has stopped the pod, and
// back. The node's apiserver must then serve a renewed certificate, and
// its etcd member and apiserver come back (the step's convergence checks
// both, and the ledger every write).
func (c *haKubeadm) renewCertificates(t *testing.T, n *localnode.Node) string {
	t.Helper()
	ctx := t.Context()
	before := c.servingCert(t, n)
	began := time.Now()
	out, err := n.KubeadmCertsRenewAll(ctx)
	const done = "Done renewing certificates. You must restart the kube-apiserver, kube-controller-manager, kube-scheduler and etcd, so that they can use the new certificates."
	if err != nil || !strings.Contains(out, done) {
		t.Fatalf("kubeadm certs renew all on %s: %v, want %q in its output:\n%s", n.Name, err, done, out)
	}
	renewed := time.Since(began)
	t.Logf("kubeadm certs renew all on %s in %.1f s:\n%s", n.Name, renewed.Seconds(), lastLines(out, 12))
	// The apiserver reloads its serving certificate when the file changes;
	// the other components and etcd do not, hence the restart.
	loaded := "not yet loaded"
	if c.servingCert(t, n).SerialNumber.Cmp(before.SerialNumber) != 0 {
		loaded = "already loaded"
	}

	pods := stopStaticPods(t, n, controlPlanePods...)
	stopped := c.waitServer(t, n, "DOWN", 2*time.Minute)
	c.waitEtcdMember(t, n, false)
	pods.start(t)
	back := time.Now()
	c.waitServer(t, n, "UP", 3*time.Minute)
	c.waitStaticPods(t, n.Name, nil)
	after := c.servingCert(t, n)
	if after.SerialNumber.Cmp(before.SerialNumber) == 0 || after.NotAfter.Before(before.NotAfter) {
		t.Errorf("%s's apiserver serves serial %s until %s after the renewal and restart; before, serial %s until %s: want a new one, valid as long or longer",
			n.Name, after.SerialNumber, after.NotAfter, before.SerialNumber, before.NotAfter)
	}
	return fmt.Sprintf("%s: kubeadm certs renew all in %.1f s (the apiserver had %s its new certificate); the four manifests moved out, haproxy marked the apiserver down %s and its etcd member stopped; moved back: up again after %.1f s, serving a certificate valid until %s (was %s)",
		n.Name, renewed.Seconds(), loaded, stopped, time.Since(back).Seconds(), after.NotAfter.UTC().Format(time.DateOnly), before.NotAfter.UTC().Format(time.DateOnly))
}

// servingCert is the certificate n's apiserver serves, verified against the
// cluster's CA as admin.conf trusts it.
func (c *haKubeadm) servingCert(t *testing.T, n *localnode.Node) *x509.Certificate {
	t.Helper()
	config, err := rest.TLSConfigFor(c.direct(n))
	if err != nil {
		t.Fatal(err)
	}
	dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: config}
	conn, err := dialer.DialContext(t.Context(), "tcp", net.JoinHostPort(n.IP.String(), "6443"))
	if err != nil {
		t.Fatalf("%s's apiserver: %v", n.Name, err)
	}
	defer conn.Close()
	return conn.(*tls.Conn).ConnectionState().PeerCertificates[0]
}

// cutNetwork cuts n off for d and says how the rest of the cluster saw it.
func (c *haKubeadm) cutNetwork(t *testing.T, n *localnode.Node, d time.Duration) string {
	t.Helper()
	if err := n.Cut(); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	healed := false
	defer func() {
		if !healed {
			_ = n.Heal()
		}
	}()
	out := c.waitServer(t, n, "DOWN", d)
	var members []string
	for _, m := range c.cp {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		if _, err := c.etcd.Status(ctx, "https://"+net.JoinHostPort(m.IP.String(), "2379")); err == nil {
			members = append(members, m.Name)
		}
		cancel()
	}
	time.Sleep(time.Until(cut.Add(d)))
	if err := n.Heal(); err != nil {
		t.Fatal(err)
	}
	healed = true
	if slices.Contains(members, n.Name) {
		t.Errorf("%s's etcd member answered while the node was cut off", n.Name)
	}
	return fmt.Sprintf("%s cut off for %s: haproxy marked it down %s, etcd answered on %s only", n.Name, d, out, strings.Join(members, " and "))
}

// waitServer waits up to timeout for haproxy to say status of n's
// apiserver, and says how long that took.
func (c *haKubeadm) waitServer(t *testing.T, n *localnode.Node, status string, timeout time.Duration) string {
	t.Helper()
	began := time.Now()
	var last localnode.ServerState
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		servers, err := c.lb.Servers()
		if err != nil {
			return false, nil
		}
		last = servers[n.Name]
		return last.Status == status, nil
	})
	if err != nil {
		t.Fatalf("haproxy did not mark %s %s within %s (it says %+v)", n.Name, status, timeout, last)
	}
	return fmt.Sprintf("after %.1f s", time.Since(began).Seconds())
}

// removeManifest moves n's kube-apiserver manifest out of the static pod
// directory until the kubelet has stopped the apiserver and haproxy has
// taken it out, then moves it back, as an operator editing it elsewhere
// does, and waits for the apiserver to serve again.
func (c *haKubeadm) removeManifest(t *testing.T, n *localnode.Node) string {
	t.Helper()
	pods := stopStaticPods(t, n, "kube-apiserver")
	stopped := c.waitServer(t, n, "DOWN", 2*time.Minute)
	pods.start(t)
	back := time.Now()
	c.waitServer(t, n, "UP", 3*time.Minute)
	return fmt.Sprintf("%s's kube-apiserver.yaml moved out: the kubelet stopped it and haproxy marked it down %s; moved back: up again after %.1f s",
		n.Name, stopped, time.Since(back).Seconds())
}

// upgradeNode upgrades n as kubeadm's upgrade guide says: `kubeadm upgrade
// apply` (first) or `kubeadm upgrade node` with the new kubeadm, then
// drain, the new kubelet, uncordon.
func (c *haKubeadm) upgradeNode(t *testing.T, e haKubeadmEnv, n *localnode.Node, first bool) string {
	t.Helper()
	ctx := t.Context()
	bundle := c.installBundle(t, e, n)
	if err := n.UseBin(e.toBin); err != nil {
		t.Fatal(err)
	}
	opts := localnode.UpgradeOptions{Version: e.toVersion, Timeout: upgradeTimeout, PullIfNotPresent: true}
	began := time.Now()
	command := "kubeadm upgrade node"
	want := []string{"[upgrade/kubelet-config] The kubelet configuration for this node was successfully upgraded!"}
	var out string
	var err error
	switch {
	case first:
		command, want = "kubeadm upgrade apply", []string{fmt.Sprintf("[upgrade] SUCCESS! A control plane node of your cluster was upgraded to %q.", e.toVersion)}
		out, err = n.KubeadmUpgradeApply(ctx, opts)
	case n != c.worker:
		want = append(want, "[upgrade/control-plane] The control plane instance for this node was successfully upgraded!")
		fallthrough
	default:
		out, err = n.KubeadmUpgradeNode(ctx, opts)
	}
	for _, w := range want {
		if err != nil || !strings.Contains(out, w) {
			t.Fatalf("%s on %s: %v, want %q in its output:\n%s", command, n.Name, err, w, out)
		}
	}
	upgraded := time.Since(began)
	t.Logf("%s on %s in %.0f s:\n%s", command, n.Name, upgraded.Seconds(), lastLines(out, 6))
	drained := time.Now()
	c.must(t, "drain", n.Name, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=5m")
	drainTook := time.Since(drained)
	if err := n.RestartKubelet(); err != nil {
		t.Fatal(err)
	}
	kubelet := ""
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		node, err := c.client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		kubelet = node.Status.NodeInfo.KubeletVersion
		return kubelet == e.toVersion && nodeReady(node), nil
	})
	if err != nil {
		t.Fatalf("%s's kubelet is %q, not Ready as %s, 2 minutes after its restart", n.Name, kubelet, e.toVersion)
	}
	c.must(t, "uncordon", n.Name)
	if n != c.worker {
		wantMirrorPodsAdmitted(t, &c.kubeadmClient, n.Name, map[string]string{"kube-apiserver": c.toImage})
	}
	return fmt.Sprintf("%s%s on %s took %.0f s, drain %.0f s; kubelet %s restarted, node uncordoned", bundle, command, n.Name, upgraded.Seconds(), drainTook.Seconds(), e.toVersion)
}

// installBundle installs main's bundle on n before n's first upgrade, as
// an operator loads the next release's images before upgrading a node;
// it says so the first time, and nothing after.
func (c *haKubeadm) installBundle(t *testing.T, e haKubeadmEnv, n *localnode.Node) string {
	t.Helper()
	if c.bundled[n] {
		return ""
	}
	did := e.to.install(t, n, e.publicKey)
	c.bundled[n] = true
	return did + "; "
}

// registryRequests are the lines of the registry's log: each a request a
// node's containerd made for an image it lacked.
func (c *haKubeadm) registryRequests(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(c.cluster.RegistryLog())
	if err != nil {
		t.Fatal(err)
	}
	var requests []string
	for _, line := range strings.Split(string(data), "\n") {
		if line != "" {
			requests = append(requests, line)
		}
	}
	return requests
}

// badAdmissionConfig is an admission configuration Turnstile refuses: a
// misspelt field of PodSecurityPolicy's configuration, which the strict
// loader names and stops on.
const badAdmissionConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurityPolicy
  configuration:
    apiVersion: podsecuritypolicy.admission.turnstile.dev/v1alpha1
    kind: PodSecurityPolicyConfiguration
    mdoe: enforce
`

// refusedUpgrade runs kubeadm (upgrade, given n's UpgradeOptions) on n
// with a patch that gives the new apiserver that admission configuration
// (in /etc/kubernetes/pki, which kubeadm mounts into it): the new
// apiserver exits at once, again and again. It returns kubeadm's output
// and error, how long it ran, and the error the new apiserver printed. The
// patch is removed again, for the corrected upgrade.
func (c *haKubeadm) refusedUpgrade(t *testing.T, n *localnode.Node, upgrade func(context.Context, localnode.UpgradeOptions) (string, error), opts localnode.UpgradeOptions) (out string, err error, took time.Duration, refusal string) {
	t.Helper()
	ctx := t.Context()
	config := filepath.Join(n.KubeadmDir(), "pki", "turnstile-bad-admission.yaml")
	patch := filepath.Join(n.PatchesDir(), "kube-apiserver+json.json")
	files := map[string]string{
		config: badAdmissionConfig,
		patch:  `[{"op": "add", "path": "/spec/containers/0/command/-", "value": "--admission-control-config-file=/etc/kubernetes/pki/turnstile-bad-admission.yaml"}]`,
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for path := range files {
			if err := os.Remove(path); err != nil {
				t.Error(err)
			}
		}
	}()
	// The new apiserver's containers come and go (and their logs with
	// them once kubeadm rolls back): watch them for the refusal while
	// kubeadm runs.
	refused := make(chan string, 1)
	watchCtx, stopWatching := context.WithCancel(ctx)
	go func() {
		line := ""
		for line == "" && watchCtx.Err() == nil {
			line = containerLogLine(n, "kube-apiserver", "mdoe")
			time.Sleep(500 * time.Millisecond)
		}
		refused <- line
	}()
	began := time.Now()
	out, err = upgrade(ctx, opts)
	took = time.Since(began)
	stopWatching()
	refusal = <-refused
	if refusal == "" {
		t.Errorf("no kube-apiserver container log of %s names the misspelt field", n.Name)
	}
	return out, err, took, refusal
}

// failedUpgrade is `kubeadm upgrade apply` (first) or `kubeadm upgrade
// node` on n with the new apiserver refusing its configuration. Every
// control-plane node's kubelet talks to its own apiserver (kubeadm init
// and join write its kubeconfig so), so the mirror pod never shows the new
// manifest: kubeadm
// waits out its timeout, moves the old manifests back but etcd's, and
// fails. The node must then serve its old version again; until its kubelet
// reaches it, the node is NotReady, and kubeadm's preflight refuses to
// run again (the step's convergence waits for it).
func (c *haKubeadm) failedUpgrade(t *testing.T, e haKubeadmEnv, n *localnode.Node, first bool) string {
	t.Helper()
	bundle := c.installBundle(t, e, n)
	if err := n.UseBin(e.toBin); err != nil {
		t.Fatal(err)
	}
	command, upgrade := "kubeadm upgrade node", n.KubeadmUpgradeNode
	if first {
		command, upgrade = "kubeadm upgrade apply", n.KubeadmUpgradeApply
	}
	out, err, took, refusal := c.refusedUpgrade(t, n, upgrade, localnode.UpgradeOptions{Version: e.toVersion, Timeout: upgradeTimeout, PullIfNotPresent: true})
	const rolledBack = "couldn't upgrade control plane. kubeadm has tried to recover everything into the earlier state"
	if err == nil || !strings.Contains(out, rolledBack) {
		t.Fatalf("%s with an admission configuration the new apiserver refuses: %v, want kubeadm's rollback (%q)\n%s", command, err, rolledBack, out)
	}
	t.Logf("%s on %s failed after %.0f s, as it should:\n%s", command, n.Name, took.Seconds(), lastLines(out, 4))
	if got := manifestImage(t, n, "kube-apiserver"); got != c.fromImage {
		t.Errorf("%s's kube-apiserver manifest runs %s after the rollback, want the old %s", n.Name, got, c.fromImage)
	}
	c.waitServer(t, n, "UP", 3*time.Minute)
	client, err := kubernetes.NewForConfig(c.direct(n))
	if err != nil {
		t.Fatal(err)
	}
	v, err := client.Discovery().ServerVersion()
	if err != nil || !strings.HasPrefix(v.GitVersion, e.fromVersion+"+turnstile.") {
		t.Fatalf("%s's apiserver after the rollback: %+v, %v; want the old Turnstile %s", n.Name, v, err, e.fromVersion)
	}
	return fmt.Sprintf("%s%s failed after %.0f s and rolled the apiserver back; the new apiserver said %q; %s serves %s again, with etcd %s",
		bundle, command, took.Seconds(), refusal, n.Name, v.GitVersion, manifestImageTag(t, n, "etcd"))
}

// manifestImage is the image n's static pod manifest of component names.
func manifestImage(t *testing.T, n *localnode.Node, component string) string {
	t.Helper()
	return staticPod(t, n, component).Spec.Containers[0].Image
}

// staticPod is n's static pod manifest of component.
func staticPod(t *testing.T, n *localnode.Node, component string) *corev1.Pod {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(n.KubeadmDir(), "manifests", component+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.Unmarshal(data, &pod); err != nil || len(pod.Spec.Containers) == 0 {
		t.Fatalf("%s's %s manifest: %v", n.Name, component, err)
	}
	return &pod
}

// containerLogLine is the last line holding text in the logs the kubelet
// of n keeps of component's containers (its podLogsDir), from the error a
// component's command line prints (klog's err="..."), or "".
func containerLogLine(n *localnode.Node, component, text string) string {
	logs, _ := filepath.Glob(filepath.Join(n.KubeletDir(), "pod-logs", "kube-system_"+component+"-"+n.Name+"_*", component, "*.log"))
	found := ""
	for _, log := range logs {
		data, err := os.ReadFile(log)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, text) {
				_, found, _ = strings.Cut(line, "err=")
				if unquoted, err := strconv.Unquote(found); err == nil {
					found = unquoted
				}
			}
		}
	}
	return found
}

// podStream creates pods as a user, one every 200 ms, alternately plain
// ones, which the restricted policy admits, and privileged ones, which
// PodSecurityPolicy refuses; each admitted pod, which no node may run
// (its node selector matches none), is deleted at once. Each create's
// decision is recorded with its time, and checked against what the
// servers were expected to do when it was sent (expect).
type podStream struct {
	client    kubernetes.Interface
	namespace string

	mu      sync.Mutex
	creates []podCreate
	policy  streamPolicy
}

// streamPolicy is what the servers do with the stream's pods.
type streamPolicy int

const (
	// enforced: PodSecurityPolicy enforces on every server.
	enforced streamPolicy = iota
	// notEnforced: on no server (audit, off, or upstream's apiserver):
	// every pod admitted as sent, with no kubernetes.io/psp.
	notEnforced
	// changing: some servers enforce and some do not, while a step moves
	// them one at a time; either decision is right.
	changing
)

// expect sets what the servers do with the pods sent from now on.
func (s *podStream) expect(p streamPolicy) {
	s.mu.Lock()
	s.policy = p
	s.mu.Unlock()
}

// right says whether a decision is one the servers may make under p: the
// pod admitted with the policy that admitted it in psp, or refused by
// PodSecurityPolicy.
func (p streamPolicy) right(privileged, admitted bool, psp string) bool {
	enforcedRight := admitted != privileged && (!admitted || psp == "restricted")
	notEnforcedRight := admitted && psp == ""
	switch p {
	case enforced:
		return enforcedRight
	case notEnforced:
		return notEnforcedRight
	default:
		return enforcedRight || notEnforcedRight
	}
}

type podCreate struct {
	when, done time.Time
	// outcome is expected, wrong or failed (no decision).
	outcome string
	what    string
}

func (s *podStream) run(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		s.create(ctx, i)
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *podStream) create(ctx context.Context, i int) {
	privileged := i%2 == 1
	p := userPod(fmt.Sprintf("stream-%d", i), func(spec *corev1.PodSpec) {
		spec.NodeSelector = map[string]string{"turnstile.test/no-node": "true"}
		if privileged {
			spec.Containers[0].SecurityContext.Privileged = ptr.To(true)
		}
	})
	s.mu.Lock()
	policy := s.policy
	s.mu.Unlock()
	when := time.Now()
	created, err := s.client.CoreV1().Pods(s.namespace).Create(ctx, p, metav1.CreateOptions{})
	if ctx.Err() != nil {
		return // cut short by the end of the run
	}
	c := podCreate{when: when, done: time.Now(), outcome: "expected"}
	switch {
	case err == nil:
		if psp := created.Annotations["kubernetes.io/psp"]; !policy.right(privileged, true, psp) {
			c.outcome, c.what = "wrong", fmt.Sprintf("%s (privileged %t) admitted by %q", p.Name, privileged, psp)
		}
		_ = s.client.CoreV1().Pods(s.namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "PodSecurityPolicy: unable to admit pod"):
		if !policy.right(privileged, false, "") {
			c.outcome, c.what = "wrong", fmt.Sprintf("%s (privileged %t) refused: %v", p.Name, privileged, err)
		}
	default:
		// No decision of PodSecurityPolicy's: the request failed before
		// or after it (LimitRanger, for one, answers 403 when its live
		// lookup of the namespace's LimitRanges times out).
		c.outcome, c.what = "failed", fmt.Sprintf("%s: %v", p.Name, err)
	}
	s.mu.Lock()
	s.creates = append(s.creates, c)
	s.mu.Unlock()
}

// window counts the creates sent in [from, to).
func (s *podStream) window(from, to time.Time) *report.PodCreates {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := &report.PodCreates{}
	for _, c := range s.creates {
		if c.when.Before(from) || !c.when.Before(to) {
			continue
		}
		w.Sent++
		switch c.outcome {
		case "expected":
			w.AsExpected++
		case "wrong":
			w.Wrong++
		default:
			w.Failed++
		}
	}
	return w
}

// wrong lists the wrong decisions of creates sent since from.
func (s *podStream) wrong(from time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.creates {
		if c.outcome == "wrong" && !c.when.Before(from) {
			out = append(out, c.what)
		}
	}
	return out
}
