// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The host must give the nodes what a kubelet host needs. CheckHost says
// everything that is missing at once, before anything is started or
// changed, so that a run never fails half-way.

// commands is each command the nodes run, with the Debian package that
// installs it (`make run` installs them through hack/install-package.sh).
var commands = []struct{ command, pkg string }{
	{"ip", "iproute2"},
	{"nft", "nftables"},
	{"nsenter", "util-linux"},
	{"iptables", "iptables"},
	{"containerd", "containerd"},
	{"containerd-shim-runc-v2", "containerd"},
	{"ctr", "containerd"},
	{"runc", "runc"},
}

// cniPlugins are the CNI plugins each node's configuration calls.
var cniPlugins = []string{"bridge", "host-local", "portmap", "loopback"}

// cgroupControllers are those the kubelet needs for its pods.
var cgroupControllers = []string{"cpu", "cpuacct", "cpuset", "memory", "pids"}

// CheckHost reports what this host lacks to run the nodes of cfg.
func CheckHost(cfg Config) error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root: the nodes create network namespaces, a bridge, nftables rules, cgroups and mounts (run `sudo make run NODES=n`)")
	}
	for _, c := range commands {
		if _, err := exec.LookPath(c.command); err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian package %s)", c.command, c.pkg))
		}
	}
	for _, p := range cniPlugins {
		if _, err := os.Stat(filepath.Join(cniBinDir, p)); err != nil {
			missing = append(missing, fmt.Sprintf("the CNI plugin %s in %s (Debian package containernetworking-plugins)", p, cniBinDir))
		}
	}
	missing = append(missing, checkCgroups()...)
	if cfg.Dir != "" {
		if m := LowDisk(cfg.Dir, runHeadroom); m != "" {
			missing = append(missing, m)
		}
	}
	if fs, err := os.ReadFile("/proc/filesystems"); err != nil || !strings.Contains(string(fs), "\toverlay\n") {
		missing = append(missing, "the overlay filesystem in the kernel (containerd's snapshotter)")
	}
	if _, err := os.Stat("/proc/sys/net/bridge/bridge-nf-call-iptables"); err != nil {
		missing = append(missing, "br_netfilter in the kernel (`modprobe br_netfilter`): kube-proxy's rules must see bridged pod traffic")
	}
	for _, b := range []string{"kubelet", "kube-proxy"} {
		if _, err := os.Stat(filepath.Join(cfg.Bin, b)); err != nil {
			missing = append(missing, fmt.Sprintf("%s in %s (`make run` builds it)", b, cfg.Bin))
		}
	}
	if cfg.Containerd != "" {
		for _, b := range []string{"containerd", "containerd-shim-runc-v2", "ctr"} {
			if _, err := os.Stat(filepath.Join(cfg.Containerd, b)); err != nil {
				missing = append(missing, fmt.Sprintf("containerd 2's %s in %s (`make containerd` builds it)", b, cfg.Containerd))
			}
		}
	}
	for _, img := range cfg.Images {
		if _, err := os.Stat(img); err != nil {
			missing = append(missing, fmt.Sprintf("the image tarball %s (`make node-images` builds them, `make control-plane-images` etcd.tar, `make e2e-images` the e2e archive)", img))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("this host cannot run the local nodes; it lacks:\n  - %s", strings.Join(missing, "\n  - "))
	}
	return nil
}

// checkCgroups reports the cgroup controllers the kubelet needs that the
// host does not have enabled and mounted.
func checkCgroups() []string {
	if _, err := cgroupHierarchies(); err != nil {
		return []string{"cgroups: " + err.Error()}
	}
	var enabled []string
	if cgroupV2() {
		data, _ := os.ReadFile(filepath.Join(cgroupFS, "cgroup.controllers"))
		enabled = strings.Fields(string(data))
		enabled = append(enabled, "cpuacct") // part of cpu in v2
	} else {
		data, _ := os.ReadFile("/proc/cgroups")
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) == 4 && f[3] == "1" {
				if _, err := os.Stat(filepath.Join(cgroupFS, f[0])); err == nil {
					enabled = append(enabled, f[0])
				}
			}
		}
	}
	var missing []string
	for _, c := range cgroupControllers {
		found := false
		for _, e := range enabled {
			if e == c {
				found = true
			}
		}
		if !found {
			missing = append(missing, fmt.Sprintf("the %s cgroup controller, enabled and mounted under %s", c, cgroupFS))
		}
	}
	return missing
}
