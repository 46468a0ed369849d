package localnode

import (
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
// plugins. 1.6 is what the distribution ships and what the kubelet v1.36
// still supports (it falls back to its own cgroupDriver setting where 1.6
// lacks the RuntimeConfig call); building containerd 2.x from the module
// proxy would add some 15 minutes to a cold build for one conformance spec
// (ImageVolume) that also needs a registry.

// containerdConfig is containerd 1.6's configuration (version 2) for one
// node. The settings that differ from the defaults are the ones this
// machine kind and offline images need:
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
//     kubelet's and kubeadm's name for it).
var containerdConfig = template.Must(template.New("config.toml").Parse(`version = 2
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
`))

// writeContainerdConfig writes the node's containerd configuration.
func (n *Node) writeContainerdConfig() error {
	runc, err := exec.LookPath("runc")
	if err != nil {
		return err
	}
	var b strings.Builder
	if err := containerdConfig.Execute(&b, map[string]string{
		"Root": n.containerdRoot(), "State": n.containerdState(), "Socket": n.Socket(),
		"Pause": oci.PauseImage, "Runc": runc, "CNIBin": cniBinDir, "CNIConf": n.cniConfDir(),
	}); err != nil {
		return err
	}
	for _, dir := range []string{n.containerdRoot(), n.containerdState(), n.cniConfDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	return os.WriteFile(n.containerdConfigFile(), []byte(b.String()), 0o600)
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
		cmd := exec.CommandContext(ctx, "ctr", "--address", n.Socket(), "--namespace", "k8s.io",
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
