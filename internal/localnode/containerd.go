// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"text/template"
	"time"

	criruntime "k8s.io/kubernetes/cmd/kubeadm/app/util/runtime"

	"github.com/turnstile-k8s/turnstile/build/oci"
)

// Each node runs Debian's containerd (1.6) with Debian's runc and CNI
// plugins, or, with Config.Containerd, containerd 2.x built from the module
// proxy (build/containerd, `make containerd`). 1.6 is what the distribution
// ships and what the kubelets of v1.36 and v1.37 still support (they fall
// back to their own cgroupDriver setting where 1.6 lacks the RuntimeConfig
// call, a fallback kubeadm v1.37 says 1.38 removes); 2.1 and later also
// mount images as volumes (the ImageVolume conformance spec). Building it
// adds some ten minutes to a cold build, so only make conformance and the
// HA kubeadm test do.
//
// The two configurations (1.6's version 2, 2.x's version 3) say the same.
// The settings that differ from the defaults are the ones this machine
// kind and offline images need:
//   - restrict_oom_score_adj: root may lack CAP_SYS_RESOURCE (a Firecracker
//     VM does), and then the pause container's oom_score_adj of -998 makes
//     every sandbox fail;
//   - enable_unprivileged_ports: CoreDNS binds :53 as user 65532, and the
//     locally built image carries no file capabilities (containerd 2.x's
//     default);
//   - netns_mounts_under_state_dir: the pods' network namespaces are
//     mounted under the node's state, not in the host's /run/netns, so that
//     a clean-up finds every one of them;
//   - the sandbox image is the locally built pause (oci.PauseImage, the
//     kubelet's and kubeadm's name for it), or Config.SandboxImage, as an
//     operator sets it to the air-gap bundle's;
//   - config_path: the hosts directory that sends every pull to the nodes'
//     own registry (registry.go).
var containerdConfigs = map[bool]*template.Template{
	false: template.Must(template.New("config.toml").Parse(`version = 2
root = "{{.Root}}"
state = "{{.State}}"

[grpc]
  address = "{{.Socket}}"

[ttrpc]
  address = "{{.Socket}}.ttrpc"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{{.Pause}}"
  enable_unprivileged_ports = true
  enable_unprivileged_icmp = true
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "{{.Runc}}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{{.CNIBin}}"
    conf_dir = "{{.CNIConf}}"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{{.Hosts}}"
`)),
	true: template.Must(template.New("config.toml").Parse(`version = 3
root = "{{.Root}}"
state = "{{.State}}"

[grpc]
  address = "{{.Socket}}"

[ttrpc]
  address = "{{.Socket}}.ttrpc"

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "{{.Pause}}"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "{{.Hosts}}"

[plugins.'io.containerd.cri.v1.runtime']
  enable_unprivileged_ports = true
  enable_unprivileged_icmp = true
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "{{.Runc}}"
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["{{.CNIBin}}"]
    conf_dir = "{{.CNIConf}}"
`)),
}

// containerdBinary is the node's containerd, ctr or shim: Debian's on the
// PATH, or the one in Config.Containerd.
func (c *Cluster) containerdBinary(name string) string {
	if c.cfg.Containerd == "" {
		return name
	}
	return filepath.Join(c.cfg.Containerd, name)
}

// writeContainerdConfig writes the node's containerd configuration and the
// hosts directory that points it at the nodes' registry.
func (n *Node) writeContainerdConfig() error {
	runc, err := exec.LookPath("runc")
	if err != nil {
		return err
	}
	var b strings.Builder
	if err := containerdConfigs[n.cluster.cfg.Containerd != ""].Execute(&b, map[string]string{
		"Root": n.containerdRoot(), "State": n.containerdState(), "Socket": n.Socket(),
		"Pause": cmp.Or(n.cluster.cfg.SandboxImage, oci.PauseImage), "Runc": runc, "CNIBin": cniBinDir, "CNIConf": n.cniConfDir(), "Hosts": n.hostsDir(),
	}); err != nil {
		return err
	}
	for _, dir := range []string{n.containerdRoot(), n.containerdState(), n.cniConfDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	if err := n.cluster.registry.writeHostsDir(n.hostsDir()); err != nil {
		return err
	}
	return os.WriteFile(n.containerdConfigFile(), []byte(b.String()), 0o600)
}

// ImportImages imports image tarballs into the running node's
// containerd, as importImages does for Config.Images when the node
// starts: as an operator loads the next release's air-gap bundle before
// upgrading a node (docs/release.md).
func (n *Node) ImportImages(ctx context.Context, tarballs ...string) error {
	return n.importImages(ctx, tarballs)
}

// Images are the images the node's containerd holds in the CRI's
// namespace, each name with its manifest digest, as `ctr -n k8s.io
// images ls` prints them.
func (n *Node) Images(ctx context.Context) (map[string]string, error) {
	out, err := exec.CommandContext(ctx, n.cluster.containerdBinary("ctr"), "--address", n.Socket(), "--namespace", "k8s.io", "images", "ls").Output()
	if err != nil {
		return nil, fmt.Errorf("listing %s's images: %w", n.Name, err)
	}
	images := map[string]string{}
	for _, line := range strings.Split(string(out), "\n")[1:] {
		// REF TYPE DIGEST SIZE PLATFORMS LABELS
		if f := strings.Fields(line); len(f) > 2 {
			images[f[0]] = f[2]
		}
	}
	return images, nil
}

// importImages imports every image tarball into the node's containerd, in
// the namespace the CRI uses, so that the kubelet finds each image by its
// exact name and never pulls. A later tarball's image replaces an earlier
// one's of the same name. A tarball whose content was imported before (by
// its digest, recorded next to the node's containerd root) is skipped,
// unless an earlier one was just imported and may have replaced its names.
func (n *Node) importImages(ctx context.Context, tarballs []string) error {
	imported := false
	for _, tarball := range tarballs {
		sum, err := oci.FileSHA256(tarball)
		if err != nil {
			return err
		}
		stamp := filepath.Join(n.containerdRoot(), "imported-"+filepath.Base(tarball))
		if prev, err := os.ReadFile(stamp); !imported && err == nil && string(prev) == sum {
			continue
		}
		imported = true
		cmd := exec.CommandContext(ctx, n.cluster.containerdBinary("ctr"), "--address", n.Socket(), "--namespace", "k8s.io",
			"images", "import", "--platform", "linux/"+runtime.GOARCH, tarball)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("importing %s into %s's containerd: %v: %s", tarball, n.Name, err, strings.TrimSpace(string(out)))
		}
		if err := os.WriteFile(stamp, []byte(sum), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// removePods stops and removes every pod sandbox through the CRI, as
// `kubeadm reset` does: containerd kills the containers, unmounts their
// root filesystems and tears down their networks.
func removePods(socket string) error {
	if _, err := os.Stat(socket); err != nil {
		return nil
	}
	rt := criruntime.NewContainerRuntime("unix://" + socket)
	if err := rt.Connect(); err != nil {
		return fmt.Errorf("connecting to %s: %w", socket, err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rt.Close(ctx)
	}()
	pods, err := rt.ListKubeContainers()
	if err != nil {
		return fmt.Errorf("listing the pods of %s: %w", socket, err)
	}
	if len(pods) == 0 {
		return nil
	}
	return rt.RemoveContainers(pods)
}
