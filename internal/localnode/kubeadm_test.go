// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	"k8s.io/kubernetes/cmd/kubeadm/app/componentconfigs"
	configutil "k8s.io/kubernetes/cmd/kubeadm/app/util/config"
)

// testCluster is a cluster of n nodes that exists only in memory.
func testCluster(t *testing.T, n int) *Cluster {
	c := &Cluster{cfg: Config{Dir: t.TempDir(), Layout: layoutAt(0), Nodes: n}, id: 4242}
	for i := range n {
		c.Nodes = append(c.Nodes, &Node{Name: fmt.Sprintf("turnstile-node%d", i+1), Index: i, IP: c.cfg.Layout.NodeIP(i), cluster: c})
	}
	return c
}

func render(t *testing.T, command string, values map[string]any) []byte {
	t.Helper()
	var b strings.Builder
	if err := kubeadmConfig.ExecuteTemplate(&b, command, values); err != nil {
		t.Fatal(err)
	}
	return []byte(b.String())
}

// kubeadm's own loaders, strict as `kubeadm init --config` and `kubeadm
// join --config` read them, take what the nodes are given: one control
// plane node alone, or the first of several behind a balancer, and the
// nodes that join it.
func TestKubeadmConfigurations(t *testing.T) {
	c := testCluster(t, 4)
	secrets, err := NewJoinSecrets()
	if err != nil {
		t.Fatal(err)
	}
	endpoint := c.cfg.Layout.BalancerIP().String() + ":6443"

	t.Run("init alone", func(t *testing.T) {
		cfg, err := configutil.BytesToInitConfiguration(render(t, "init", c.Nodes[0].initValues(InitOptions{Version: "v1.37.2", AdmissionPlugins: []string{"NodeRestriction", "PodSecurityPolicy"}})), true)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ControlPlaneEndpoint != "" || cfg.CertificateKey != "" {
			t.Errorf("a control plane of one has endpoint %q, certificate key %q", cfg.ControlPlaneEndpoint, cfg.CertificateKey)
		}
		wantNode(t, c.Nodes[0], cfg.NodeRegistration, cfg.Patches)
		if !slices.Equal(cfg.SkipPhases, []string{"addon/kube-proxy", "addon/coredns"}) || cfg.ImageRepository != "registry.k8s.io" {
			t.Errorf("skipPhases %v, imageRepository %q", cfg.SkipPhases, cfg.ImageRepository)
		}
		if got := cfg.APIServer.ExtraArgs; len(got) != 1 || got[0].Value != "NodeRestriction,PodSecurityPolicy" {
			t.Errorf("apiServer.extraArgs = %v", got)
		}
	})
	t.Run("init air-gapped, with the addons", func(t *testing.T) {
		data := render(t, "init", c.Nodes[0].initValues(InitOptions{Version: "v1.37.2", ImageRepository: "turnstile-k8s", Addons: true, PullIfNotPresent: true}))
		cfg, err := configutil.BytesToInitConfiguration(data, true)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ImageRepository != "turnstile-k8s" || cfg.NodeRegistration.ImagePullPolicy != "IfNotPresent" {
			t.Errorf("imageRepository %q, imagePullPolicy %q", cfg.ImageRepository, cfg.NodeRegistration.ImagePullPolicy)
		}
		// CoreDNS's phase runs after init, once its Corefile is in place.
		if !slices.Equal(cfg.SkipPhases, []string{"addon/coredns"}) {
			t.Errorf("skipPhases %v, want kube-proxy's addon to run", cfg.SkipPhases)
		}
		if _, ok := cfg.ComponentConfigs[componentconfigs.KubeProxyGroup]; !ok || !strings.Contains(string(data), "maxPerCore: 0") {
			t.Errorf("no KubeProxyConfiguration without conntrack sysctls:\n%s", data)
		}
	})
	t.Run("init behind a balancer", func(t *testing.T) {
		cfg, err := configutil.BytesToInitConfiguration(render(t, "init", c.Nodes[0].initValues(InitOptions{Version: "v1.36.5", ControlPlaneEndpoint: endpoint, Join: secrets})), true)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ControlPlaneEndpoint != endpoint || cfg.CertificateKey != secrets.CertificateKey {
			t.Errorf("endpoint %q, certificate key %q; want %q, %q", cfg.ControlPlaneEndpoint, cfg.CertificateKey, endpoint, secrets.CertificateKey)
		}
		if len(cfg.BootstrapTokens) != 1 || cfg.BootstrapTokens[0].Token.String() != secrets.Token {
			t.Errorf("bootstrap tokens %v, want %s", cfg.BootstrapTokens, secrets.Token)
		}
	})
	for i, controlPlane := range map[int]bool{1: true, 3: false} {
		t.Run(fmt.Sprintf("join %s, control plane %t", c.Nodes[i].Name, controlPlane), func(t *testing.T) {
			n := c.Nodes[i]
			cfg, err := configutil.BytesToJoinConfiguration(render(t, "join", n.joinValues(JoinOptions{Endpoint: endpoint, Secrets: *secrets,
				CACertHash: "sha256:" + strings.Repeat("ab", 32), ControlPlane: controlPlane})), configutil.LoadOrDefaultConfigurationOptions{SkipCRIDetect: true})
			if err != nil {
				t.Fatal(err)
			}
			if d := cfg.Discovery.BootstrapToken; d == nil || d.APIServerEndpoint != endpoint || d.Token != secrets.Token {
				t.Errorf("discovery %+v", cfg.Discovery.BootstrapToken)
			}
			if (cfg.ControlPlane != nil) != controlPlane {
				t.Fatalf("controlPlane %+v, want it %t", cfg.ControlPlane, controlPlane)
			}
			if controlPlane && (cfg.ControlPlane.CertificateKey != secrets.CertificateKey || cfg.ControlPlane.LocalAPIEndpoint.AdvertiseAddress != n.IP.String()) {
				t.Errorf("controlPlane %+v", cfg.ControlPlane)
			}
			wantNode(t, n, cfg.NodeRegistration, cfg.Patches)
		})
	}
	t.Run("join, pulling what it lacks", func(t *testing.T) {
		cfg, err := configutil.BytesToJoinConfiguration(render(t, "join", c.Nodes[3].joinValues(JoinOptions{Endpoint: endpoint, Secrets: *secrets,
			CACertHash: "sha256:" + strings.Repeat("ab", 32), PullIfNotPresent: true})), configutil.LoadOrDefaultConfigurationOptions{SkipCRIDetect: true})
		if err != nil || cfg.NodeRegistration.ImagePullPolicy != "IfNotPresent" {
			t.Errorf("imagePullPolicy %q, %v; want IfNotPresent", cfg.NodeRegistration.ImagePullPolicy, err)
		}
	})
	for _, reconfigure := range []bool{false, true} {
		t.Run(fmt.Sprintf("upgrade, reconfigure %t", reconfigure), func(t *testing.T) {
			pull := !reconfigure // either way, as the air-gapped run's upgrades and reconfigurations differ
			data, err := c.Nodes[1].upgradeConfig(UpgradeOptions{Version: "v1.37.2", Timeout: 150 * time.Second, PullIfNotPresent: pull}, reconfigure)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := configutil.BytesToUpgradeConfiguration(data)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Apply.KubernetesVersion != "v1.37.2" || cfg.Timeouts.UpgradeManifests.Duration != 150*time.Second {
				t.Errorf("version %q, upgradeManifests %v", cfg.Apply.KubernetesVersion, cfg.Timeouts.UpgradeManifests)
			}
			for _, p := range []*kubeadmapi.Patches{cfg.Apply.Patches, cfg.Node.Patches} {
				if p == nil || p.Directory != c.Nodes[1].PatchesDir() {
					t.Errorf("patches %+v, want the node's", p)
				}
			}
			// kubeadm defaults both to true: an upgrade moves etcd and renews
			// the certificates, a reconfiguration neither.
			if *cfg.Node.EtcdUpgrade == reconfigure || *cfg.Node.CertificateRenewal == reconfigure {
				t.Errorf("node.etcdUpgrade %t, node.certificateRenewal %t, want both %t", *cfg.Node.EtcdUpgrade, *cfg.Node.CertificateRenewal, !reconfigure)
			}
			want := map[bool]corev1.PullPolicy{true: corev1.PullIfNotPresent, false: corev1.PullNever}[pull]
			if cfg.Apply.ImagePullPolicy != want || cfg.Node.ImagePullPolicy != want {
				t.Errorf("imagePullPolicy apply %q, node %q, want %q", cfg.Apply.ImagePullPolicy, cfg.Node.ImagePullPolicy, want)
			}
		})
	}
}

func wantNode(t *testing.T, n *Node, reg kubeadmapi.NodeRegistrationOptions, patches *kubeadmapi.Patches) {
	t.Helper()
	if reg.Name != n.Name || reg.CRISocket != "unix://"+n.Socket() || len(reg.Taints) != 0 || reg.ImagePullPolicy != "Never" {
		t.Errorf("nodeRegistration %+v", reg)
	}
	if patches == nil || patches.Directory != n.PatchesDir() {
		t.Errorf("patches %+v, want %s", patches, n.PatchesDir())
	}
}

// The node's own kubelet settings are a kubeadm patch, so that every node
// sharing this host keeps its own cgroup root.
func TestWritePatches(t *testing.T) {
	c := testCluster(t, 2)
	for _, n := range c.Nodes {
		if err := n.writePatches("registry.example/kube-apiserver:v1"); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.Nodes {
		data, err := os.ReadFile(filepath.Join(n.PatchesDir(), "kubeletconfiguration+strategic.yaml"))
		if err != nil || !strings.Contains(string(data), "cgroupRoot: "+n.CgroupRoot()+"\n") {
			t.Errorf("%s's kubelet patch: %q, %v", n.Name, data, err)
		}
	}
	n := c.Nodes[0]
	if err := n.writePatches(""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(n.PatchesDir(), "kube-apiserver+strategic.yaml")); !os.IsNotExist(err) {
		t.Errorf("without an image the apiserver's patch is still there: %v", err)
	}
}

// haproxy's `show stat`, as haproxy 2.6 answers it (columns cut after
// check_status, which parseStat finds by name).
const showStat = `# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status,weight,act,bck,chkfail,chkdown,lastchg,downtime,qlimit,pid,iid,sid,throttle,lbtot,tracked,type,rate,rate_lim,rate_max,check_status,
apiserver,FRONTEND,,,3,5,262124,40,1,2,0,0,0,,,,,OPEN,,,,,,,,,1,2,0,,,,0,0,0,4,,
apiserver,turnstile-node1,0,0,1,2,,20,1,2,,0,,0,0,0,0,UP,1,1,0,0,0,100,0,,1,3,1,,20,,2,0,,3,L7OK,
apiserver,turnstile-node2,0,0,0,1,,10,1,2,,0,,3,0,0,0,DOWN,1,1,0,2,1,12,12,,1,3,2,,10,,2,0,,2,L4TOUT,
apiserver,turnstile-node3,0,0,0,1,,10,1,2,,0,,0,0,0,0,UP 1/3,1,1,0,1,0,3,0,,1,3,3,,10,,2,0,,2,L7STS,
apiserver,BACKEND,0,0,1,3,26213,40,1,2,0,0,,3,0,0,0,UP,2,2,0,,0,100,0,,1,3,0,,40,,1,0,,4,,
`

func TestParseStat(t *testing.T) {
	got, err := parseStat(bufio.NewReader(strings.NewReader(showStat)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ServerState{
		"turnstile-node1": {"UP", "L7OK"}, "turnstile-node2": {"DOWN", "L4TOUT"}, "turnstile-node3": {"UP 1/3", "L7STS"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parseStat = %v, want %v", got, want)
	}
	if _, err := parseStat(bufio.NewReader(strings.NewReader("# pxname,svname\n"))); err == nil {
		t.Error("stats without a status column were read")
	}
}

// The configuration balancerConfig writes is one haproxy accepts, and it
// health-checks /healthz over TLS on every server.
// wantExampleBalancer checks that the operator's haproxy.cfg
// (examples/kubeadm-ha, which docs/tasks/kubeadm-ha.md installs) is the
// balancer's configuration but for its stats socket, which only a test
// reads: the test's balancer is the one the page sets up.
func wantExampleBalancer(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile("../../examples/kubeadm-ha/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	example := string(data)
	for strings.HasPrefix(example, "#") {
		_, example, _ = strings.Cut(example, "\n")
	}
	var b strings.Builder
	servers := []struct{ Name, Addr string }{{"node1", "10.0.0.11:6443"}, {"node2", "10.0.0.12:6443"}, {"node3", "10.0.0.13:6443"}}
	if err := balancerConfig.Execute(&b, map[string]any{"Socket": "/run/x.sock", "Bind": "*:6443", "Servers": servers}); err != nil {
		t.Fatal(err)
	}
	ours := strings.Replace(b.String(), "    stats socket /run/x.sock mode 600 level admin\n", "", 1)
	if ours != example {
		t.Errorf("examples/kubeadm-ha/haproxy.cfg, after its comments:\n%s\nis not the balancer's configuration without its stats socket:\n%s", example, ours)
	}
}

func TestBalancerConfig(t *testing.T) {
	var b strings.Builder
	if err := balancerConfig.Execute(&b, map[string]any{"Socket": "/run/x.sock", "Bind": "198.18.0.2:6443",
		"Servers": []struct{ Name, Addr string }{{"turnstile-node1", "198.18.0.11:6443"}, {"turnstile-node2", "198.18.0.12:6443"}}}); err != nil {
		t.Fatal(err)
	}
	cfg := b.String()
	for _, want := range []string{"option httpchk GET /healthz", "server turnstile-node2 198.18.0.12:6443 check check-ssl verify none on-marked-down shutdown-sessions"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("haproxy.cfg lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(cfg, "ssl-hello-chk") {
		t.Errorf("haproxy.cfg has ssl-hello-chk, which replaces the /healthz check:\n%s", cfg)
	}
	wantExampleBalancer(t)
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy is not installed (make test-ha-kubeadm installs it): its own check of the file is skipped")
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("haproxy", "-c", "-f", path).CombinedOutput(); err != nil {
		t.Errorf("haproxy -c: %v\n%s", err, out)
	}
}
