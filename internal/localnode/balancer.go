// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/template"
	"time"

	"github.com/turnstile-k8s/turnstile/internal/process"
)

// Balancer is the load balancer in front of a control plane of several
// kubeadm nodes: Debian's haproxy, configured as kubeadm's HA guide
// configures it (kubernetes/kubeadm docs/ha-considerations.md), on a host
// of its own, as the guide's "Option 1" runs it: a network namespace on the
// nodes' bridge, behind the same guard as a node. It listens on kubeadm's
// port, 6443, which no other program can hold in that namespace.
type Balancer struct {
	cluster *Cluster
	proc    *process.Process
}

// BalancerPort is the port the balancer listens on, as the apiservers do.
const BalancerPort = 6443

// balancerConfig is the guide's haproxy.cfg with its placeholders filled
// and four changes:
//   - the health check is `check check-ssl verify none` with the guide's
//     `option httpchk GET /healthz`, and without its `option ssl-hello-chk`:
//     haproxy runs one kind of check per backend, the last one declared,
//     so the guide's configuration checks a TLS handshake and never asks
//     /healthz (haproxy's stats then say L6OK, not L7OK). check-ssl sends
//     the HTTP check over TLS; verify none, because the check reads only
//     the status, and clients verify the apiserver's certificate
//     themselves through the TCP passthrough;
//   - on-marked-down shutdown-sessions: a client's connection stays with
//     the apiserver it was sent to, and client-go sends every request over
//     one HTTP/2 connection, so without it a client pinned to an apiserver
//     that haproxy has marked down (cut off from etcd, or its etcd being
//     upgraded) keeps waiting on it, each request until the client's own
//     timeout; with it haproxy closes those connections and the clients
//     connect again, to a server that is up (docs/kubeadm.md measures both);
//   - haproxy logs to its standard output and stays in the foreground
//     (no syslog, no daemon), where its supervisor keeps it;
//   - a stats socket, from which a test reads each server's state.
//
// But for the stats socket, it is examples/kubeadm-ha/haproxy.cfg, the
// file operators install (TestBalancerConfig holds the two together).
var balancerConfig = template.Must(template.New("haproxy.cfg").Parse(`global
    log stdout format raw local0
    stats socket {{.Socket}} mode 600 level admin

defaults
    mode                    http
    log                     global
    option                  httplog
    option                  dontlognull
    option http-server-close
    option forwardfor       except 127.0.0.0/8
    option                  redispatch
    retries                 1
    timeout http-request    10s
    timeout queue           20s
    timeout connect         5s
    timeout client          20s
    timeout server          20s
    timeout http-keep-alive 10s
    timeout check           10s

frontend apiserver
    bind {{.Bind}}
    mode tcp
    option tcplog
    default_backend apiserver

backend apiserver
    option httpchk GET /healthz
    http-check expect status 200
    mode tcp
    balance     roundrobin
{{- range .Servers}}
    server {{.Name}} {{.Addr}} check check-ssl verify none on-marked-down shutdown-sessions
{{- end}}
`))

// Health checks as haproxy's defaults run them (the guide sets none): every
// BalancerCheckInterval, a server marked down after BalancerFall failures
// in a row and up after BalancerRise successes.
const (
	BalancerCheckInterval = 2 * time.Second
	BalancerFall          = 3
	BalancerRise          = 2
)

func (c *Cluster) balancerNetns() string  { return fmt.Sprintf("%s%d-balancer", netnsPrefix, c.id) }
func (c *Cluster) balancerDir() string    { return filepath.Join(c.runDir(), "balancer") }
func (c *Cluster) balancerSocket() string { return filepath.Join(c.balancerDir(), "haproxy.sock") }

// BalancerEndpoint is the balancer's host:port, before it runs too.
func (c *Cluster) BalancerEndpoint() string {
	return netip.AddrPortFrom(c.cfg.Layout.BalancerIP(), BalancerPort).String()
}

// StartBalancer starts haproxy in front of the apiservers of nodes (port
// 6443 of each, kubeadm's), before any of them runs: haproxy marks a server
// up once its checks pass. Debian's haproxy must be installed (`make
// test-ha-kubeadm` installs it).
func (c *Cluster) StartBalancer(nodes []*Node) (*Balancer, error) {
	type server struct{ Name, Addr string }
	var servers []server
	for _, n := range nodes {
		servers = append(servers, server{n.Name, netip.AddrPortFrom(n.IP, 6443).String()})
	}
	var cfg strings.Builder
	if err := balancerConfig.Execute(&cfg, map[string]any{"Socket": c.balancerSocket(), "Bind": c.BalancerEndpoint(), "Servers": servers}); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.balancerDir(), 0o700); err != nil {
		return nil, err
	}
	config := filepath.Join(c.balancerDir(), "haproxy.cfg")
	if err := os.WriteFile(config, []byte(cfg.String()), 0o600); err != nil {
		return nil, err
	}
	return c.startBalancer(config)
}

// StartBalancerFrom starts haproxy with a configuration of the caller's,
// as an operator writes it (a task page's), on the balancer's address:
// its frontend binds port 6443 of the balancer's namespace, and its
// servers are the nodes' addresses. A second file of the balancer's own
// adds the stats socket that Servers reads; haproxy runs in the
// foreground whatever the file says (-db).
func (c *Cluster) StartBalancerFrom(config string) (*Balancer, error) {
	if err := os.MkdirAll(c.balancerDir(), 0o700); err != nil {
		return nil, err
	}
	stats := filepath.Join(c.balancerDir(), "stats.cfg")
	if err := os.WriteFile(stats, []byte("global\n    stats socket "+c.balancerSocket()+" mode 600 level admin\n"), 0o600); err != nil {
		return nil, err
	}
	return c.startBalancer(config, stats)
}

// startBalancer starts haproxy with the configuration files in the
// balancer's network namespace, behind the nodes' guard, and waits for its
// stats socket.
func (c *Cluster) startBalancer(configs ...string) (*Balancer, error) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		return nil, fmt.Errorf("the load balancer needs haproxy (Debian package haproxy): %w", err)
	}
	if c.balancer != nil {
		return nil, errors.New("the cluster has its balancer already")
	}
	b := &Balancer{cluster: c}
	c.balancer = b
	if err := c.writeRecord(); err != nil {
		return nil, err
	}
	if err := addNetns(c.balancerNetns(), vethPrefix(c.bridge())+"lb", c.bridge(), c.cfg.Layout.BalancerIP(), c.cfg.Layout); err != nil {
		return nil, err
	}
	if err := nft(c.balancerNetns(), nodeGuard(c.cfg.Layout)); err != nil {
		return nil, fmt.Errorf("installing the balancer's guard: %w", err)
	}
	var files []string
	for _, f := range configs {
		files = append(files, "-f", f)
	}
	if out, err := exec.Command("haproxy", append([]string{"-c", "-q"}, files...)...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("haproxy -c %s: %v: %s", strings.Join(files, " "), err, strings.TrimSpace(string(out)))
	}
	// -db: in the foreground, its log on standard output.
	command := append([]string{"nsenter", "--net=/run/netns/" + c.balancerNetns(), "--", "haproxy", "-db"}, files...)
	p, err := process.Start("balancer haproxy", filepath.Join(c.cfg.Dir, "logs", "balancer-haproxy.log"), command)
	if err != nil {
		return nil, err
	}
	b.proc = p
	if err := p.WaitUntil(context.Background(), 30*time.Second, func(context.Context) error {
		_, err := b.Servers()
		return err
	}); err != nil {
		return nil, err
	}
	c.progress("balancer: haproxy on %s (%s)", b.Endpoint(), strings.Join(configs, ", "))
	return b, nil
}

// Endpoint is the balancer's host:port, kubeadm's controlPlaneEndpoint.
func (b *Balancer) Endpoint() string { return b.cluster.BalancerEndpoint() }

// ServerState is what haproxy says of one server.
type ServerState struct {
	// Status is UP, DOWN, or a transition (UP 1/3, DOWN 1/2).
	Status string
	// Check is the last check's result: L7OK when /healthz answered 200,
	// L7STS for another status, L4CON or L4TOUT when no connection was
	// made, L6OK for a bare TLS handshake.
	Check string
}

// Servers reads every server's state from haproxy's stats socket, by name.
func (b *Balancer) Servers() (map[string]ServerState, error) {
	conn, err := net.DialTimeout("unix", b.cluster.balancerSocket(), 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("show stat\n")); err != nil {
		return nil, err
	}
	return parseStat(bufio.NewReader(conn))
}

// parseStat reads haproxy's `show stat` CSV, whose header line starts with
// "# ", into the backend's servers.
func parseStat(r *bufio.Reader) (map[string]ServerState, error) {
	header, err := r.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("reading haproxy's stats: %w", err)
	}
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("reading haproxy's stats: %w", err)
	}
	col := map[string]int{}
	for i, name := range strings.Split(strings.TrimSpace(strings.TrimPrefix(header, "# ")), ",") {
		col[name] = i
	}
	for _, name := range []string{"pxname", "svname", "status", "check_status"} {
		if _, ok := col[name]; !ok {
			return nil, fmt.Errorf("haproxy's stats have no column %s: %q", name, header)
		}
	}
	out := map[string]ServerState{}
	for _, row := range rows {
		if len(row) < len(col) || row[col["pxname"]] != "apiserver" {
			continue
		}
		if name := row[col["svname"]]; name != "FRONTEND" && name != "BACKEND" {
			out[name] = ServerState{Status: row[col["status"]], Check: row[col["check_status"]]}
		}
	}
	return out, nil
}

// Stop stops haproxy; its namespace stays until the cluster is removed.
func (b *Balancer) Stop() error {
	if b == nil || b.proc == nil {
		return nil
	}
	// How it exits does not matter, only that it does.
	var exit *exec.ExitError
	if err := b.proc.Stop(syscall.SIGTERM, 10*time.Second); err != nil && !errors.As(err, &exit) {
		return fmt.Errorf("stopping haproxy: %w", err)
	}
	b.proc = nil
	return nil
}
