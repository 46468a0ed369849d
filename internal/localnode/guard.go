// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"fmt"
	"os/exec"
	"strings"
)

// The guard keeps everything the nodes and their pods send on this machine.
// It is installed before any node's containerd starts, so before any pod
// exists, in two places:
//
//   - in each node's network namespace, which has no default route anyway:
//     its output and forward hooks drop every packet whose destination lies
//     outside the cluster's block (after kube-proxy's DNAT, which runs at a
//     higher priority), so not even an image pull that someone forces gets
//     a packet out;
//   - on the host, at priority -400 so that nothing another tool adds runs
//     first: whatever comes in from the nodes' bridge, or carries one of
//     the block's addresses, is dropped unless it goes back out through the
//     bridge or stays on the host.
//
// The host's own traffic (its resolver, the Go module proxy, apt) is not
// touched: the nodes' traffic never reaches another interface.

// guardTable names the tables; a node's is always this name in its own
// namespace, the host's carries the run's ID.
const guardTable = "turnstile-guard"

func nodeGuard(l Layout) string {
	return fmt.Sprintf(`table inet %[1]s {
	chain output {
		type filter hook output priority 0; policy drop;
		oifname "lo" accept
		ip daddr %[2]s accept
	}
	chain forward {
		type filter hook forward priority 0; policy drop;
		ip daddr %[2]s ip saddr %[2]s accept
	}
}`, guardTable, l.Block)
}

func hostGuard(table, bridge string, l Layout) string {
	return fmt.Sprintf(`table inet %[1]s {
	chain forward {
		type filter hook forward priority -400; policy accept;
		iifname "%[2]s" oifname != "%[2]s" drop
		ip saddr %[3]s oifname != "%[2]s" drop
		ip daddr %[3]s oifname != "%[2]s" drop
	}
	chain postrouting {
		type filter hook postrouting priority -400; policy accept;
		oifname { "%[2]s", "lo" } accept
		ip saddr %[3]s drop
		ip daddr %[3]s drop
	}
}`, table, bridge, l.Block)
}

// nft loads ruleset on the host (netns "") or in a node's namespace.
func nft(netns, ruleset string) error {
	args := []string{"nft", "-f", "-"}
	if netns != "" {
		args = append([]string{"ip", "netns", "exec", netns}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin = strings.NewReader(ruleset)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// hostTableExists reports whether the host has the nft table inet name.
func hostTableExists(name string) bool {
	return exec.Command("nft", "list", "table", "inet", name).Run() == nil
}
