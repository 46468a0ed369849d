// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// cniBinDir is where Debian's containernetworking-plugins installs them.
const cniBinDir = "/usr/lib/cni"

// kubeletConfig is the node's KubeletConfiguration: kubeadm's choices
// (webhook authentication and authorization, the cluster CA for client
// certificates, cluster DNS at the Services' .10) plus what one host with
// several nodes and this machine kind need.
func kubeletConfig(n *Node, resolvConf string) ([]byte, error) {
	c := n.cluster
	cfg := kubeletconfig.KubeletConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: kubeletconfig.SchemeGroupVersion.String(), Kind: "KubeletConfiguration"},
		Address:  n.IP.String(),
		// Each node has its own namespace, so kubeadm's ports cannot
		// collide with the host's or another node's.
		Port:               kubeadmconstants.KubeletPort,
		ReadOnlyPort:       0,
		HealthzBindAddress: "127.0.0.1",
		Authentication: kubeletconfig.KubeletAuthentication{
			X509:      kubeletconfig.KubeletX509Authentication{ClientCAFile: filepath.Join(c.cfg.Kubeadm.CertificatesDir, kubeadmconstants.CACertName)},
			Webhook:   kubeletconfig.KubeletWebhookAuthentication{Enabled: ptr.To(true)},
			Anonymous: kubeletconfig.KubeletAnonymousAuthentication{Enabled: ptr.To(false)},
		},
		Authorization:            kubeletconfig.KubeletAuthorization{Mode: kubeletconfig.KubeletAuthorizationModeWebhook},
		ClusterDomain:            c.cfg.Kubeadm.Networking.DNSDomain,
		ClusterDNS:               []string{c.cfg.Layout.DNS().String()},
		ResolverConfig:           ptr.To(resolvConf),
		ContainerRuntimeEndpoint: "unix://" + n.Socket(),
		PodLogsDir:               filepath.Join(n.dir(), "pod-logs"),
		StaticPodPath:            n.StaticPodPath(),
		// Two kubelets on one host must not manage the same kubepods tree.
		CgroupRoot:   n.CgroupRoot(),
		CgroupDriver: "cgroupfs",
		// The kubelet refuses cgroup v1 unless told; this machine kind has it.
		FailCgroupV1: ptr.To(false),
		FailSwapOn:   ptr.To(false),
		// The certificates come from kubeadm's phases; nothing rotates them.
		RotateCertificates: false,
		// Images are imported, never pulled back: garbage-collecting them
		// would leave pods that cannot start.
		ImageGCHighThresholdPercent: ptr.To[int32](100),
		ImageGCLowThresholdPercent:  ptr.To[int32](99),
		EvictionHard:                evictionHard(),
	}
	return yaml.Marshal(cfg)
}

// kubeProxyConfig is kube-proxy's configuration: iptables mode inside the
// node's namespace, and no conntrack sysctls (they are the host's, and a
// VM may refuse them). Written as a map so that only these fields are set
// and kube-proxy defaults the rest.
func kubeProxyConfig(n *Node, kubeconfig string) ([]byte, error) {
	c := n.cluster
	cfg := map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"mode":               "iptables",
		"clientConnection":   map[string]any{"kubeconfig": kubeconfig},
		"hostnameOverride":   n.Name,
		"bindAddress":        n.IP.String(),
		"clusterCIDR":        c.cfg.Layout.Pods.String(),
		"healthzBindAddress": "127.0.0.1:10256",
		"metricsBindAddress": "127.0.0.1:10249",
		"nodePortAddresses":  []string{n.IP.String() + "/32"},
		"conntrack": map[string]any{
			"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s",
		},
	}
	return yaml.Marshal(cfg)
}

// writeCNIConfig writes the node's CNI configuration for its pod range: a
// bridge in the node's namespace with host-local addresses, hairpin mode so
// that a pod reaches itself through a Service, no masquerade (nothing
// leaves), portmap for hostPorts, and loopback.
func (n *Node) writeCNIConfig() error {
	gateway := nth(n.PodCIDR, 1)
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       "turnstile-pods",
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": n.PodCIDR.String(), "gateway": gateway.String()}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": filepath.Join(n.dir(), "cni", "ipam"),
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
			map[string]any{"type": "loopback"},
		},
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(n.cniConfDir(), 0o700); err != nil {
		return err
	}
	// Written whole, then renamed: containerd watches the directory.
	tmp := filepath.Join(n.cniConfDir(), ".10-turnstile.conflist")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(n.cniConfDir(), "10-turnstile.conflist")); err != nil {
		return fmt.Errorf("writing %s's CNI configuration: %w", n.Name, err)
	}
	return nil
}
