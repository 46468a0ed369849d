// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"net/netip"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestLayouts(t *testing.T) {
	for i := range 8 {
		l := layoutAt(i)
		for name, p := range map[string]netip.Prefix{"nodes": l.Nodes, "pods": l.Pods, "services": l.Services} {
			if !l.Block.Contains(p.Addr()) || !l.Block.Contains(lastAddr(p)) {
				t.Errorf("layout %d: %s %s is not inside %s", i, name, p, l.Block)
			}
		}
		if l.Nodes.Overlaps(l.Pods) || l.Nodes.Overlaps(l.Services) || l.Pods.Overlaps(l.Services) {
			t.Errorf("layout %d: ranges overlap: %+v", i, l)
		}
		if !netip.MustParsePrefix("198.18.0.0/15").Contains(l.Block.Addr()) {
			t.Errorf("layout %d: %s is outside 198.18.0.0/15", i, l.Block)
		}
		if i > 0 && layoutAt(i-1).Block.Overlaps(l.Block) {
			t.Errorf("layouts %d and %d overlap", i-1, i)
		}
		if !l.Nodes.Contains(l.Host()) || !l.Nodes.Contains(l.NodeIP(MaxNodes-1)) || !l.Services.Contains(l.DNS()) {
			t.Errorf("layout %d: host %s, last node %s or DNS %s outside their ranges", i, l.Host(), l.NodeIP(MaxNodes-1), l.DNS())
		}
		if l.Pods.Bits() > 24-4 { // a /24 for each of MaxNodes nodes
			t.Errorf("layout %d: pods %s has no room for %d /24s", i, l.Pods, MaxNodes)
		}
	}
	if got := layoutAt(0); got.Host().String() != "198.18.0.1" || got.NodeIP(0).String() != "198.18.0.11" || got.DNS().String() != "198.18.32.10" {
		t.Errorf("layout 0: host %s, node1 %s, DNS %s", got.Host(), got.NodeIP(0), got.DNS())
	}
}

func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	size := uint32(1) << (32 - p.Bits())
	n := (uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])) + size - 1
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}

func TestChooseLayout(t *testing.T) {
	prefixes := func(s ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, p := range s {
			out = append(out, netip.MustParsePrefix(p))
		}
		return out
	}
	second := layoutAt(1)
	for _, tc := range []struct {
		name     string
		previous *Layout
		used     []netip.Prefix
		want     netip.Prefix
		wantErr  string
	}{
		{name: "nothing routed", want: layoutAt(0).Block},
		{name: "the host's own network is elsewhere", used: prefixes("192.0.2.0/24", "10.0.0.0/8"), want: layoutAt(0).Block},
		{name: "an HA test bridge in the first block", used: prefixes("198.18.3.0/24"), want: layoutAt(1).Block},
		{name: "a route covering the whole range", used: prefixes("198.16.0.0/12"), wantErr: "every /18"},
		{name: "previous kept", previous: &second, used: prefixes("192.0.2.0/24"), want: second.Block},
		{name: "previous now taken", previous: &second, used: prefixes("198.18.64.0/24"), wantErr: "now overlap the route to 198.18.64.0/24"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := chooseLayout(tc.previous, tc.used)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got.Block != tc.want {
				t.Fatalf("chose %s (%v), want %s", got.Block, err, tc.want)
			}
		})
	}
}

func TestGuards(t *testing.T) {
	l := layoutAt(2)
	node := nodeGuard(l)
	for _, want := range []string{"policy drop", "ip daddr " + l.Block.String() + " accept", `oifname "lo" accept`, "hook forward", "hook output"} {
		if !strings.Contains(node, want) {
			t.Errorf("the node guard lacks %q:\n%s", want, node)
		}
	}
	host := hostGuard("t", "tsl1", l)
	for _, want := range []string{"priority -400", `iifname "tsl1" oifname != "tsl1" drop`, "ip saddr " + l.Block.String() + " drop", "ip daddr " + l.Block.String() + " drop"} {
		if !strings.Contains(host, want) {
			t.Errorf("the host guard lacks %q:\n%s", want, host)
		}
	}
}

func TestWithoutForward(t *testing.T) {
	corefile := `.:53 {
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
    }
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30
}
`
	got, err := withoutForward(corefile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "forward") || strings.Contains(got, "max_concurrent") {
		t.Errorf("forward block left:\n%s", got)
	}
	for _, keep := range []string{"pods insecure", "cache 30", "errors"} {
		if !strings.Contains(got, keep) {
			t.Errorf("%q removed:\n%s", keep, got)
		}
	}
	if strings.Count(got, "}") != 2 {
		t.Errorf("braces unbalanced:\n%s", got)
	}
	if _, err := withoutForward(".:53 {\n  errors\n}\n"); err == nil {
		t.Error("a Corefile without forward gave no error")
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{`/a/b`: "/a/b", `/a\040b`: "/a b", `/x\011y\134z`: "/x\ty\\z"} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestComponentConfigs(t *testing.T) {
	c := &Cluster{id: 42, cfg: Config{Dir: "/state", Layout: layoutAt(0)}}
	n := &Node{Name: "turnstile-node2", Index: 1, IP: c.cfg.Layout.NodeIP(1), cluster: c}
	var proxy map[string]any
	data, err := kubeProxyConfig(n, "/state/kp.conf")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &proxy); err != nil {
		t.Fatal(err)
	}
	if proxy["mode"] != "iptables" || proxy["hostnameOverride"] != "turnstile-node2" || proxy["clusterCIDR"] != "198.18.16.0/20" {
		t.Errorf("kube-proxy configuration: %s", data)
	}
	if ct, _ := proxy["conntrack"].(map[string]any); ct["maxPerCore"] != float64(0) {
		t.Errorf("kube-proxy would set conntrack sysctls: %s", data)
	}
	if got := n.Socket(); !strings.HasPrefix(got, "/run/turnstile-local/42/") || len(got) > 100 {
		t.Errorf("containerd socket %q: must be short and under the run's directory", got)
	}
	if got := n.CgroupRoot(); got != "/turnstile-local-42-turnstile-node2" {
		t.Errorf("cgroup root %q", got)
	}
}
