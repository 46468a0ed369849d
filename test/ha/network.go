// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package ha

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/turnstile-k8s/turnstile/internal/localnode"
)

// The nodes' network: one bridge on the host and, for each node, a network
// namespace joined to it by a veth pair, all in a /24 of 198.18.0.0/15
// (RFC 2544's benchmarking range) that no route of this machine covers. A
// namespace has only that subnet's route and an nftables guard that drops
// everything else it sends, so nothing a node does leaves the machine.
// Every node also gets its own UTS namespace, so that each apiserver has its
// own hostname, as it would on its own machine: the apiserver names its
// identity lease after the hostname.

const (
	// netnsPrefix names the namespaces as "<prefix><pid>-<node>", so that a
	// later run can remove what a killed run left behind.
	netnsPrefix = "turnstile-ha-"
	utsDir      = "/run/turnstile-ha"
	guardTable  = "turnstile-guard"
	cutTable    = "turnstile-partition"
)

type network struct {
	pid    int
	bridge string
	subnet netip.Prefix
	host   netip.Addr // the bridge's address, the clients' source
}

// newNetwork removes what runs that are no longer alive left behind, then
// creates the bridge in a free /24.
func newNetwork() (*network, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("the HA test creates network namespaces and a bridge: run it as root")
	}
	for _, tool := range []string{"ip", "nft", "nsenter", "unshare", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("the HA test needs %s (Debian packages iproute2, nftables, util-linux, mount): %w", tool, err)
		}
	}
	removeStale()
	subnet, err := freeSubnet()
	if err != nil {
		return nil, err
	}
	n := &network{pid: os.Getpid(), subnet: subnet, host: subnet.Addr().Next()}
	n.bridge = fmt.Sprintf("tsha%d", n.pid)
	if err := run("ip", "link", "add", n.bridge, "type", "bridge"); err != nil {
		return nil, err
	}
	// Bridged traffic skips the host's iptables (br_netfilter would pass
	// it through a FORWARD chain that Docker, for one, sets to DROP). This
	// is an attribute of this bridge only.
	if err := run("ip", "link", "set", n.bridge, "type", "bridge", "nf_call_iptables", "0", "nf_call_ip6tables", "0", "nf_call_arptables", "0"); err != nil {
		n.remove()
		return nil, err
	}
	if err := run("ip", "addr", "add", prefixString(n.host, subnet), "dev", n.bridge); err != nil {
		n.remove()
		return nil, err
	}
	if err := run("ip", "link", "set", n.bridge, "up"); err != nil {
		n.remove()
		return nil, err
	}
	return n, nil
}

// addr returns the subnet's i-th address.
func (n *network) addr(i int) netip.Addr {
	a := n.subnet.Addr().As4()
	a[3] = byte(i)
	return netip.AddrFrom4(a)
}

// tmpfsSource names this run's tmpfs mounts in /proc/mounts, so that a
// later run can unmount what a killed run left.
func (n *network) tmpfsSource() string { return fmt.Sprintf("%s%d", netnsPrefix, n.pid) }

func (n *network) netns(node string) string { return fmt.Sprintf("%s%d-%s", netnsPrefix, n.pid, node) }
func (n *network) uts(node string) string   { return filepath.Join(utsDir, n.netns(node)) }

// addNode creates the node's namespaces, gives it ip on the bridge, installs
// the guard and sets its hostname to node.
func (n *network) addNode(node string, index int, ip netip.Addr) error {
	ns, veth := n.netns(node), fmt.Sprintf("%sn%d", n.bridge, index)
	steps := [][]string{
		{"ip", "netns", "add", ns},
		{"ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"ip", "link", "set", veth, "master", n.bridge, "up"},
		{"ip", "-n", ns, "addr", "add", prefixString(ip, n.subnet), "dev", "eth0"},
		{"ip", "-n", ns, "link", "set", "eth0", "up"},
		{"ip", "-n", ns, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			return err
		}
	}
	// No default route: an address outside the subnet is unreachable
	// before any packet is sent.
	if out, err := exec.Command("ip", "-n", ns, "-4", "route", "show", "default").Output(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		return fmt.Errorf("%s has a default route (%q, %v); it must have none", ns, out, err)
	}
	guard := fmt.Sprintf(`table inet %s {
	chain output {
		type filter hook output priority 0; policy drop;
		oifname "lo" accept
		ip daddr %s accept
	}
}`, guardTable, n.subnet)
	if err := n.nft(node, guard); err != nil {
		return fmt.Errorf("installing the guard in %s: %w", ns, err)
	}
	if err := os.MkdirAll(utsDir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(n.uts(node), nil, 0o600); err != nil {
		return err
	}
	return run("unshare", "--uts="+n.uts(node), "hostname", node)
}

// enter is the command prefix that runs a program in the node's namespaces.
// nsenter execs the program, so the process started is the program itself.
func (n *network) enter(node string) []string {
	return []string{"nsenter", "--net=/run/netns/" + n.netns(node), "--uts=" + n.uts(node), "--"}
}

// cut drops everything between the node and the addresses others, in both
// directions, inside the node's namespace; heal removes that.
func (n *network) cut(node string, others []netip.Addr) error {
	var set []string
	for _, a := range others {
		set = append(set, a.String())
	}
	return n.nft(node, fmt.Sprintf(`table inet %[1]s {
	chain input {
		type filter hook input priority -10;
		ip saddr { %[2]s } drop
	}
	chain output {
		type filter hook output priority -10;
		ip daddr { %[2]s } drop
	}
}`, cutTable, strings.Join(set, ", ")))
}

func (n *network) heal(node string) error {
	return run("ip", "netns", "exec", n.netns(node), "nft", "delete", "table", "inet", cutTable)
}

func (n *network) nft(node, ruleset string) error {
	cmd := exec.Command("ip", "netns", "exec", n.netns(node), "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(ruleset)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft -f in %s: %v: %s", n.netns(node), err, out)
	}
	return nil
}

// remove deletes every veth pair, namespace and tmpfs mount of this run
// and its bridge. It is safe to call twice.
func (n *network) remove() error {
	return removeRun(n.pid)
}

func removeRun(pid int) error {
	var errs []string
	// The veths go before the namespaces, as internal/localnode's do: `ip
	// netns del` leaves the kernel to delete a veth's host end later, once
	// nothing holds the namespace, and the next test's snapshot of the
	// host saw them. Deleting a veth deletes both ends at once.
	bridge := fmt.Sprintf("tsha%d", pid)
	links, _ := os.ReadDir("/sys/class/net")
	for _, l := range links {
		if strings.HasPrefix(l.Name(), bridge+"n") {
			if err := run("ip", "link", "del", l.Name()); err != nil {
				if _, gone := os.Stat("/sys/class/net/" + l.Name()); gone == nil {
					errs = append(errs, err.Error())
				}
			}
		}
	}
	prefix := fmt.Sprintf("%s%d-", netnsPrefix, pid)
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			if err := run("ip", "netns", "del", e.Name()); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	utsFiles, _ := os.ReadDir(utsDir)
	for _, e := range utsFiles {
		if strings.HasPrefix(e.Name(), prefix) {
			path := filepath.Join(utsDir, e.Name())
			_ = syscall.Unmount(path, syscall.MNT_DETACH)
			if err := os.Remove(path); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mounts")
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == fmt.Sprintf("%s%d", netnsPrefix, pid) && f[2] == "tmpfs" {
			if err := syscall.Unmount(f[1], syscall.MNT_DETACH); err != nil {
				errs = append(errs, fmt.Sprintf("unmounting %s: %v", f[1], err))
			}
		}
	}
	if _, err := os.Stat("/sys/class/net/" + bridge); err == nil {
		if err := run("ip", "link", "del", bridge); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing the HA network of run %d: %s", pid, strings.Join(errs, "; "))
	}
	return nil
}

// removeStale removes the namespaces and bridges of runs whose process is
// gone (killed before their clean-up ran).
func removeStale() {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), netnsPrefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			_ = removeRun(pid)
		}
	}
}

// freeSubnet returns a /24 in 198.18.0.0/15 that no route of this machine
// (in any table, including other runs' bridges) overlaps.
func freeSubnet() (netip.Prefix, error) {
	used, err := localnode.RoutedPrefixes()
	if err != nil {
		return netip.Prefix{}, err
	}
	for i := range 512 {
		third := (os.Getpid() + i) % 512
		candidate := netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18 + byte(third/256), byte(third % 256), 0}), 24)
		free := true
		for _, u := range used {
			if u.Overlaps(candidate) {
				free = false
				break
			}
		}
		if free {
			return candidate, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("every /24 of 198.18.0.0/15 overlaps a route of this machine; the HA test needs one for its bridge")
}

func prefixString(a netip.Addr, p netip.Prefix) string {
	return netip.PrefixFrom(a, p.Bits()).String()
}

func run(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
