// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Layout is the addresses of one local cluster. They all lie in one /18 of
// 198.18.0.0/15 (RFC 2544's benchmarking range, never routed on the
// Internet) that no route of this machine overlaps, so no address a node or
// pod uses can be anybody else's, and the guard can name them in one prefix.
type Layout struct {
	// Block is the /18 everything below lies in.
	Block netip.Prefix `json:"block"`
	// Nodes is the nodes' subnet on the host's bridge: the host (and with
	// it the kube-apiserver) is .1, node i (from 0) is .11+i.
	Nodes netip.Prefix `json:"nodes"`
	// Pods is the cluster CIDR; kube-controller-manager gives each node a
	// /24 of it.
	Pods netip.Prefix `json:"pods"`
	// Services is the service CIDR; its .1 is the kubernetes Service and
	// its .10 the cluster DNS, as kubeadm numbers them.
	Services netip.Prefix `json:"services"`
}

// MaxNodes is how many nodes a Layout has room for: one /24 of Pods each.
const MaxNodes = 16

// layoutAt returns the layout of the i-th /18 of 198.18.0.0/15.
func layoutAt(i int) Layout {
	base := netip.AddrFrom4([4]byte{198, 18 + byte(i/4), byte(i%4) * 64, 0})
	at := func(third byte, bits int) netip.Prefix {
		a := base.As4()
		a[2] += third
		return netip.PrefixFrom(netip.AddrFrom4(a), bits)
	}
	return Layout{
		Block:    netip.PrefixFrom(base, 18),
		Nodes:    at(0, 24),
		Pods:     at(16, 20),
		Services: at(32, 20),
	}
}

// Host is the host's address on the nodes' bridge.
func (l Layout) Host() netip.Addr { return nth(l.Nodes, 1) }

// BalancerIP is the address of the load balancer in front of a control
// plane of several nodes.
func (l Layout) BalancerIP() netip.Addr { return nth(l.Nodes, 2) }

// NodeIP is node i's address, from 0.
func (l Layout) NodeIP(i int) netip.Addr { return nth(l.Nodes, 11+i) }

// DNS is the cluster DNS Service's address.
func (l Layout) DNS() netip.Addr { return nth(l.Services, 10) }

func nth(p netip.Prefix, n int) netip.Addr {
	a := p.Addr().As4()
	a[3] += byte(n)
	return netip.AddrFrom4(a)
}

// LockNetwork takes the host-wide lock under which a run chooses its /18
// and adds the bridge that routes it: two runs starting at once would
// otherwise both find the same /18 free, and the second would fail on the
// first's route. Release it once Prepare has returned. The lock is a
// flock, so a run that dies releases it.
func LockNetwork() (unlock func(), err error) {
	if err := os.MkdirAll(runRoot, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(runRoot, "network.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// ChooseLayout returns previous when it is set and still free, or else the
// first free /18. A previous layout that is no longer free is an error,
// because the state made with it (the apiserver's certificate, the
// Services' addresses in etcd) would not fit another.
func ChooseLayout(previous *Layout) (Layout, error) {
	used, err := RoutedPrefixes()
	if err != nil {
		return Layout{}, err
	}
	return chooseLayout(previous, used)
}

func chooseLayout(previous *Layout, used []netip.Prefix) (Layout, error) {
	if previous != nil {
		if r, taken := overlap(previous.Block, used); taken {
			return Layout{}, fmt.Errorf("this state's addresses %s now overlap the route to %s on this machine", previous.Block, r)
		}
		return *previous, nil
	}
	for i := range 8 {
		if l := layoutAt(i); !l.taken(used) {
			return l, nil
		}
	}
	return Layout{}, fmt.Errorf("every /18 of 198.18.0.0/15 overlaps a route of this machine; the local nodes need one")
}

func (l Layout) taken(used []netip.Prefix) bool {
	_, taken := overlap(l.Block, used)
	return taken
}

func overlap(p netip.Prefix, used []netip.Prefix) (netip.Prefix, bool) {
	for _, u := range used {
		if u.Overlaps(p) {
			return u, true
		}
	}
	return netip.Prefix{}, false
}

// RoutedPrefixes is every IPv4 destination of every routing table but the
// default routes: what a test network must not overlap.
func RoutedPrefixes() ([]netip.Prefix, error) {
	out, err := exec.Command("ip", "-j", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return nil, fmt.Errorf("ip route show: %w", err)
	}
	var routes []struct{ Dst string }
	if err := json.Unmarshal(out, &routes); err != nil {
		return nil, fmt.Errorf("reading `ip -j route`: %w", err)
	}
	var used []netip.Prefix
	for _, r := range routes {
		if r.Dst == "default" {
			continue
		}
		if !strings.Contains(r.Dst, "/") {
			r.Dst += "/32"
		}
		if p, err := netip.ParsePrefix(r.Dst); err == nil {
			used = append(used, p)
		}
	}
	return used, nil
}

// The host's side: one bridge holding the host's address, each node's
// veth, and the routes to the nodes' pod ranges and to the Services.

// addBridge creates the nodes' bridge with the host's address. Bridged
// traffic skips the host's iptables (br_netfilter would pass it through a
// FORWARD chain that Docker, for one, sets to DROP): an attribute of this
// bridge only.
func addBridge(name string, l Layout) error {
	steps := [][]string{
		{"ip", "link", "add", name, "type", "bridge"},
		{"ip", "link", "set", name, "type", "bridge", "nf_call_iptables", "0", "nf_call_ip6tables", "0", "nf_call_arptables", "0"},
		{"ip", "addr", "add", netip.PrefixFrom(l.Host(), l.Nodes.Bits()).String(), "dev", name},
		{"ip", "link", "set", name, "up"},
	}
	return runAll(steps)
}

// addNetns creates a node's network namespace joined to the bridge by a
// veth pair, with the node's address on eth0, forwarding on (it routes for
// its pods) and no default route: an address outside the layout is
// unreachable before any packet is sent.
func addNetns(netns, veth, bridge string, ip netip.Addr, l Layout) error {
	steps := [][]string{
		{"ip", "netns", "add", netns},
		{"ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns},
		{"ip", "link", "set", veth, "master", bridge, "up"},
		{"ip", "-n", netns, "addr", "add", netip.PrefixFrom(ip, l.Nodes.Bits()).String(), "dev", "eth0"},
		{"ip", "-n", netns, "link", "set", "eth0", "up"},
		{"ip", "-n", netns, "link", "set", "lo", "up"},
		// Per namespace: it routes for its pods, and pod-to-Service
		// traffic answered on the same bridge must pass kube-proxy's
		// iptables rules.
		{"ip", "netns", "exec", netns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1", "net.bridge.bridge-nf-call-iptables=1"},
	}
	if err := runAll(steps); err != nil {
		return err
	}
	if out, err := exec.Command("ip", "-n", netns, "-4", "route", "show", "default").Output(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		return fmt.Errorf("%s has a default route (%q, %v); it must have none", netns, out, err)
	}
	return nil
}

// cutTable is the nft table in a node's namespace that cuts it off.
const cutTable = "turnstile-cut"

// Cut cuts the node off the network, as a pulled cable would: every packet
// in or out of its interface on the bridge is dropped, while what stays in
// the node (its loopback, its pods) still flows. Heal ends it.
func (n *Node) Cut() error {
	return nft(n.Netns(), fmt.Sprintf(`table inet %s {
	chain input { type filter hook input priority -500; policy accept; iifname "eth0" drop; }
	chain output { type filter hook output priority -500; policy accept; oifname "eth0" drop; }
	chain forward { type filter hook forward priority -500; policy accept; iifname "eth0" drop; oifname "eth0" drop; }
}`, cutTable))
}

// Heal joins a node that Cut cut off to the network again.
func (n *Node) Heal() error {
	return run("ip", "netns", "exec", n.Netns(), "nft", "delete", "table", "inet", cutTable)
}

// addRoute routes dst via gateway, on the host (netns "") or in a node.
func addRoute(netns string, dst netip.Prefix, gateway netip.Addr) error {
	args := []string{"ip"}
	if netns != "" {
		args = append(args, "-n", netns)
	}
	return runAll([][]string{append(args, "route", "replace", dst.String(), "via", gateway.String())})
}

func runAll(steps [][]string) error {
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

func run(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func runOutput(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}

// vethPrefix begins the name of every node veth's host end on bridge
// (Node.veth), so that the cleanup finds them by name.
func vethPrefix(bridge string) string { return bridge + "v" }

// nodeVeths are the host ends of the nodes' veths on bridge, attached to it
// or not.
func nodeVeths(bridge string) []string {
	paths, _ := filepath.Glob("/sys/class/net/" + vethPrefix(bridge) + "*")
	var veths []string
	for _, p := range paths {
		veths = append(veths, filepath.Base(p))
	}
	return veths
}

// linkExists reports whether the host has a network interface name.
func linkExists(name string) bool {
	_, err := os.Stat("/sys/class/net/" + name)
	return !errors.Is(err, os.ErrNotExist)
}
