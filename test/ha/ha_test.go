// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package ha

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/turnstile-k8s/turnstile/test/ha/report"
)

// EnableEnv must be set for TestHA to run: it needs root, the built
// binaries and several minutes. `make test-ha` sets it.
const EnableEnv = "TURNSTILE_HA"

// ReportEnv names the file that the run's figures are written to.
const ReportEnv = "TURNSTILE_HA_REPORT"

// shutdownDelay is every apiserver's --shutdown-delay-duration: longer
// than the balancer's probe interval, so that a server shutting down is out
// of rotation before it stops accepting connections.
const shutdownDelay = 3 * time.Second

// fault is one thing done to the cluster under load. inject returns when
// the fault has been healed; what it says goes into the report.
type fault struct {
	name string
	// graceful faults must cost the load no failed request at all.
	graceful bool
	// short faults are the ones `go test -short` (make test) runs: one of
	// each kind, etcd's leader and an apiserver killed and one stopped.
	// make test-ha runs them all.
	short  bool
	inject func(context.Context, *testing.T, *Cluster) string
}

// TestHA starts three nodes (Turnstile, Turnstile, upstream), runs a write
// load through a balancer over them, and injects each fault in turn. After
// each it waits for the cluster to converge and checks the ledger: every
// acknowledged write is in etcd's history at its revision and readable
// through every apiserver (or a later write of the same key), and no
// refused write was ever stored.
func TestHA(t *testing.T) {
	if os.Getenv(EnableEnv) == "" {
		t.Skipf("the HA control plane needs root and the built binaries; `make test-ha` runs it (%s=1)", EnableEnv)
	}
	ctx := context.Background()
	began := time.Now()
	c, err := Start(ctx, Config{
		Dir:        t.TempDir(),
		APIServers: []string{Turnstile, Turnstile, Upstream},
		TmpfsNode:  "node2",
		TmpfsSize:  "200m",
		ExtraArgs:  map[string]string{"shutdown-delay-duration": shutdownDelay.String()},
		Log:        t.Logf,
	})
	if c != nil {
		t.Cleanup(func() {
			if err := c.Stop(); err != nil {
				t.Errorf("clean-up: %v", err)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("three nodes up in %s", time.Since(began).Round(time.Second))
	checkSameFlags(t, c)

	lb, client := balancedClient(t, c)
	t.Cleanup(lb.Close)
	const ns = "ha-ledger"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ledger := &Ledger{}
	load := &Load{Clients: []kubernetes.Interface{client}, Namespace: ns, Workers: 4, Pause: 25 * time.Millisecond, Ledger: ledger}
	loadCtx, stopLoad := context.WithCancel(ctx)
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		load.Run(loadCtx)
	}()
	stop := func() {
		stopLoad()
		<-loadDone
	}
	t.Cleanup(stop)

	title, command := t.Name(), "sudo make test-ha"
	if testing.Short() {
		title += " with -short (one fault of each kind, no rollout; make test-ha runs all)"
		command = "sudo make test"
	}
	rep := &report.Report{Title: title, Command: command, Commit: Commit(), Began: began}
	faultsPassed := true
	for _, f := range faults() {
		ok := t.Run(f.name, func(t *testing.T) {
			if testing.Short() && !f.short {
				t.Skip("-short (make test) runs one fault of each kind; make test-ha runs this one")
			}
			from := time.Now()
			note := f.inject(ctx, t, c)
			healed := time.Now()
			if err := c.Converge(ctx, 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			converged := time.Since(healed)
			time.Sleep(2 * time.Second) // load on the converged cluster, inside the window
			w := ledger.Window(from, time.Now())
			problems := Checkpoint(ctx, t, c, load, ns)
			rep.Steps = append(rep.Steps, NewStep(f.name, note, time.Since(from), w, problems, converged))
			t.Logf("%d writes (%d acknowledged, %d refused, %d unknown), %d failed requests, errors for %.1f s, longest stall %.1f s, converged %.1f s after healing; %s",
				w.Writes, w.Acked, w.Refused, w.Unknown, w.Failed, w.ErrorSeconds, w.StallSeconds, converged.Seconds(), note)
			for _, e := range w.FirstErrors {
				t.Logf("failed: %s", e)
			}
			if w.Acked == 0 {
				t.Errorf("no write was acknowledged during the fault: the load is not running")
			}
			if f.graceful && w.Failed > 0 {
				t.Errorf("%d requests failed during a graceful change; first: %v", w.Failed, w.FirstErrors)
			}
		})
		if !ok {
			faultsPassed = false
			break // the cluster is in no state for the next fault
		}
	}
	t.Run("mixed versions: PodSecurityPolicy", func(t *testing.T) {
		if !faultsPassed {
			t.Skip("a fault failed: the cluster is in no state for the rollout (the fault's failure is reported above)")
		}
		if testing.Short() {
			t.Skip("-short (make test): make test-ha runs the rollout")
		}
		testMixedPodSecurityPolicy(ctx, t, c)
	})

	stop()
	t.Run("final ledger", func(t *testing.T) {
		lost := Checkpoint(ctx, t, c, load, ns)
		for _, s := range rep.Steps {
			lost += s.Lost
		}
		total := ledger.Window(began, time.Now())
		rep.Total = NewStep("whole run", "", time.Since(began), total, lost, 0)
		t.Logf("whole run: %d writes, %d acknowledged, %d refused (%d deliberately), %d unknown", total.Writes, total.Acked, total.Refused, total.Deliberate, total.Unknown)
	})
	WriteReport(t, rep, os.Getenv(ReportEnv))
}

func faults() []fault {
	return []fault{
		{name: "steady state", graceful: true, short: true, inject: func(ctx context.Context, t *testing.T, c *Cluster) string {
			time.Sleep(5 * time.Second)
			return "no fault: the baseline"
		}},
		{name: "kill -9 an etcd follower", inject: func(ctx context.Context, t *testing.T, c *Cluster) string {
			leader := etcdLeader(ctx, t, c)
			victim := c.Nodes[(slices.Index(c.Nodes, leader)+1)%len(c.Nodes)]
			return killEtcd(t, victim, "follower")
		}},
		{name: "kill -9 the etcd leader", short: true, inject: func(ctx context.Context, t *testing.T, c *Cluster) string {
			return killEtcd(t, etcdLeader(ctx, t, c), "leader")
		}},
		{name: "etcd leader cut off from the other members", inject: func(ctx context.Context, t *testing.T, c *Cluster) string {
			leader := etcdLeader(ctx, t, c)
			if err := leader.Cut(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Second)
			newLeader, err := c.EtcdLeader(ctx)
			if err := leader.Heal(); err != nil {
				t.Fatal(err)
			}
			if err != nil {
				return fmt.Sprintf("%s cut off for 10 s; no leader found while cut (%v)", leader.Name, err)
			}
			return fmt.Sprintf("%s cut off for 10 s; %s led meanwhile", leader.Name, newLeader.Name)
		}},
		{name: "kill -9 an apiserver", short: true, inject: func(ctx context.Context, t *testing.T, c *Cluster) string {
			n := c.Nodes[0]
			if err := n.StopAPIServer(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * time.Second)
			start(ctx, t, n, n.Binary)
			return n.Name + " (" + n.Binary + ") killed, restarted after 3 s"
		}},
		{name: "SIGTERM an apiserver", graceful: true, short: true, inject: func(ctx context.Context, t *testing.T, c *Cluster) string {
			n := c.Nodes[1]
			took := restart(ctx, t, n, n.Binary)
			return fmt.Sprintf("%s (%s) exited cleanly %.1f s after SIGTERM (shutdown delay %s), restarted", n.Name, n.Binary, took.Seconds(), shutdownDelay)
		}},
		{name: "rolling replacement of the upstream apiserver", graceful: true, inject: func(ctx context.Context, t *testing.T, c *Cluster) string {
			n := c.Nodes[2]
			restart(ctx, t, n, Turnstile)
			if err := c.Converge(ctx, 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			restart(ctx, t, n, Upstream)
			return n.Name + ": upstream → Turnstile → upstream, one SIGTERM at a time"
		}},
		{name: "etcd member's disk full", inject: func(ctx context.Context, t *testing.T, c *Cluster) string {
			n := c.Nodes[1]
			filled, err := n.FillDisk()
			if err != nil {
				t.Fatal(err)
			}
			freed := false
			defer func() {
				if !freed { // the fault was cut short: leave no full disk behind
					_ = n.FreeDisk()
				}
			}()
			// The load's small writes fit in what etcd has allocated
			// already; the cluster writing on makes the member need more.
			ballast(ctx, t, c.Nodes[0], 24)
			var exited bool
			var how error
			deadline := time.Now().Add(20 * time.Second)
			for !exited && time.Now().Before(deadline) {
				time.Sleep(500 * time.Millisecond)
				exited, how = n.EtcdExited()
			}
			if err := n.FreeDisk(); err != nil {
				t.Fatal(err)
			}
			freed = true
			note := fmt.Sprintf("%s's etcd tmpfs filled (%d MiB of filler)", n.Name, filled>>20)
			if !exited {
				return note + "; etcd kept running for 20 s, then the filler was removed"
			}
			if err := n.StartEtcd(); err != nil {
				t.Fatal(err)
			}
			cause := "for a reason its log does not give as ENOSPC"
			if line := n.EtcdLogLine("no space left on device"); line != "" {
				cause = "on ENOSPC"
				t.Logf("%s's etcd: %s", n.Name, line)
			}
			return note + fmt.Sprintf("; etcd exited %s (%v), disk freed, restarted", cause, how)
		}},
	}
}

// ballast writes count ConfigMaps of 900 KiB through node, in a namespace
// of their own: about 900 KiB each in every member's WAL and database.
// They are load, not part of the ledger: when the filled member dies and
// it was the leader, a write can time out during the election, and is
// sent again (a new object) for up to a minute.
func ballast(ctx context.Context, t *testing.T, n *Node, count int) {
	t.Helper()
	client := clientOf(t, n)
	const ns = "ha-ballast"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	data := strings.Repeat("x", 900<<10)
	deadline := time.Now().Add(time.Minute)
	for i := 0; i < count; {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "ballast-"}, Data: map[string]string{"data": data}}
		_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		switch {
		case err == nil:
			i++
		case time.Now().After(deadline):
			t.Fatalf("ballast %d of %d through %s, still failing after a minute: %v", i+1, count, n.Name, err)
		default:
			t.Logf("ballast %d of %d through %s: %v; sending it again", i+1, count, n.Name, err)
			time.Sleep(500 * time.Millisecond)
		}
	}
}

func etcdLeader(ctx context.Context, t *testing.T, c *Cluster) *Node {
	t.Helper()
	n, err := c.EtcdLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func killEtcd(t *testing.T, n *Node, role string) string {
	t.Helper()
	n.StopEtcd(syscall.SIGKILL)
	time.Sleep(5 * time.Second)
	if err := n.StartEtcd(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s's etcd (the %s) killed, restarted after 5 s", n.Name, role)
}

// restart stops the node's apiserver with SIGTERM, which must end it
// cleanly, and starts binary in its place. It returns how long the old
// server took to exit.
func restart(ctx context.Context, t *testing.T, n *Node, binary string, extra ...string) time.Duration {
	t.Helper()
	began := time.Now()
	if err := n.StopAPIServer(syscall.SIGTERM); err != nil {
		t.Fatalf("%s's apiserver after SIGTERM: %v", n.Name, err)
	}
	took := time.Since(began)
	start(ctx, t, n, binary, extra...)
	return took
}

func start(ctx context.Context, t *testing.T, n *Node, binary string, extra ...string) {
	t.Helper()
	if err := n.StartAPIServer(ctx, binary, extra...); err != nil {
		t.Fatal(err)
	}
}

// checkSameFlags checks that the nodes' apiservers differ only in the
// flags that name the node.
func checkSameFlags(t *testing.T, c *Cluster) {
	t.Helper()
	normal := func(n *Node) []string {
		var out []string
		for _, a := range n.APIServerArgs() {
			a = strings.ReplaceAll(a, n.root, "<root>")
			a = strings.ReplaceAll(a, n.IP.String(), "<node-ip>")
			out = append(out, a)
		}
		return out
	}
	first := normal(c.Nodes[0])
	for _, n := range c.Nodes[1:] {
		if got := normal(n); !slices.Equal(got, first) {
			t.Errorf("%s's apiserver flags differ from %s's:\n%v\n%v", n.Name, c.Nodes[0].Name, got, first)
		}
	}
}

// balancedClient is a clientset whose requests the balancer spreads over
// every node.
func balancedClient(t *testing.T, c *Cluster) (*Balancer, kubernetes.Interface) {
	t.Helper()
	transport, err := rest.TransportFor(c.Nodes[0].Config())
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for _, n := range c.Nodes {
		hosts = append(hosts, strings.TrimPrefix(n.URL(), "https://"))
	}
	lb := NewBalancer(transport, hosts)
	client, err := kubernetes.NewForConfig(&rest.Config{
		Host: c.Nodes[0].URL(), Transport: lb, QPS: 500, Burst: 1000,
		// A request stuck on a server cut off from etcd counts as an
		// unknown outcome after this, rather than blocking its worker.
		Timeout: 15 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return lb, client
}
