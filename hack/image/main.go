// Command image packs our static kube-apiserver into an OCI image, without
// a Docker daemon, as a tarball that `docker load` and `ctr images import`
// accept. The image is FROM scratch: one layer holding
// /usr/local/bin/kube-apiserver, the binary as the entrypoint, and the OCI
// labels for version, source and revision.
//
// Its tag is the binary's version with kubeadm's rule for image tags applied
// ('+' is not allowed in a tag, so v1.36.3+turnstile.1 becomes
// v1.36.3_turnstile.1), so kubeadm finds it from kubernetesVersion.
//
// The build is reproducible: file times, the image's creation time and the
// layer's compression depend only on the binary and the commit's date. It
// prints the tarball's path and the image ID.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	kubeadmutil "k8s.io/kubernetes/cmd/kubeadm/app/util"
)

const binaryPath = "usr/local/bin/kube-apiserver"

func main() {
	binary := flag.String("binary", "_output/bin/kube-apiserver", "the static kube-apiserver to pack")
	repository := flag.String("repository", "turnstile-k8s", "image repository, as kubeadm's imageRepository")
	outDir := flag.String("out", "_output/images", "directory for the tarball")
	source := flag.String("source", "https://github.com/turnstile-k8s/turnstile", "org.opencontainers.image.source")
	revision := flag.String("revision", "", "org.opencontainers.image.revision (the commit)")
	epoch := flag.Int64("created", 0, "creation time, seconds since the epoch (the commit's date)")
	flag.Parse()
	path, id, err := build(*binary, *repository, *outDir, *source, *revision, time.Unix(*epoch, 0).UTC())
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%s\n%s\n", path, id)
}

func build(binary, repository, outDir, source, revision string, created time.Time) (string, v1.Hash, error) {
	version, err := binaryVersion(binary)
	if err != nil {
		return "", v1.Hash{}, err
	}
	tag := kubeadmutil.KubernetesVersionToImageTag(version)
	ref, err := name.NewTag(repository + "/kube-apiserver:" + tag)
	if err != nil {
		return "", v1.Hash{}, fmt.Errorf("-repository %q: %w", repository, err)
	}
	layer, err := binaryLayer(binary, created)
	if err != nil {
		return "", v1.Hash{}, err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "turnstile hack/image: COPY kube-apiserver /" + binaryPath},
	})
	if err != nil {
		return "", v1.Hash{}, err
	}
	// Edit the config Append made, which holds the layer's diff ID.
	cfg, err := img.ConfigFile()
	if err != nil {
		return "", v1.Hash{}, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS, cfg.Created = "amd64", "linux", v1.Time{Time: created}
	cfg.Config.Entrypoint = []string{"/" + binaryPath}
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":       "kube-apiserver",
		"org.opencontainers.image.description": "Turnstile: kube-apiserver " + version + " with every documented admission controller",
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.source":      source,
		"org.opencontainers.image.revision":    revision,
		"org.opencontainers.image.created":     created.Format(time.RFC3339),
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return "", v1.Hash{}, err
	}
	// The image ID: the config's digest, which `docker load` and
	// `docker images` report. A loader writes its own manifest for an
	// archive, so a manifest digest would not survive the import.
	id, err := img.ConfigName()
	if err != nil {
		return "", v1.Hash{}, err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", v1.Hash{}, err
	}
	path := filepath.Join(outDir, "kube-apiserver-"+tag+".tar")
	if err := tarball.WriteToFile(path, ref, img); err != nil {
		return "", v1.Hash{}, fmt.Errorf("writing %s: %w", path, err)
	}
	return path, id, nil
}

// binaryVersion asks the binary, so the tag always matches what it reports.
func binaryVersion(binary string) (string, error) {
	out, err := exec.Command(binary, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", binary, err)
	}
	version, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "Kubernetes ")
	if !ok {
		return "", fmt.Errorf("%s --version printed %q, want \"Kubernetes v...\"", binary, out)
	}
	return version, nil
}

// binaryLayer is a tar of the directories down to the binary and the binary
// itself, owned by root, with fixed times.
func binaryLayer(binary string, created time.Time) (v1.Layer, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := strings.Split(filepath.Dir(binaryPath), "/")
	for i := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.Join(dirs[:i+1], "/") + "/", Mode: 0o755, ModTime: created, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: binaryPath, Mode: 0o755, Size: int64(len(data)), ModTime: created, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	tarBytes := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	})
}
