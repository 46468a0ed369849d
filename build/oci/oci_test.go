// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

var meta = Meta{
	Repository: "example.test/turnstile",
	Version:    "v1.36.3+turnstile.7",
	Source:     DefaultSource,
	Revision:   "0123456789abcdef",
	Created:    time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
}

func TestTag(t *testing.T) {
	tag, err := meta.Tag()
	if err != nil {
		t.Fatal(err)
	}
	if tag.String() != "example.test/turnstile/kube-apiserver:v1.36.3_turnstile.7" {
		t.Errorf("tag %s", tag)
	}
	if _, err := (Meta{Repository: "Bad Repo", Version: "v1"}).Tag(); err == nil {
		t.Error("a repository with spaces and capitals was accepted")
	}
}

func fakeBinary(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kube-apiserver")
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestImage(t *testing.T) {
	img, err := Image(fakeBinary(t, "arm64 binary"), "linux", "arm64", meta)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "arm64" || !cfg.Created.Equal(meta.Created) ||
		len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/usr/local/bin/kube-apiserver" {
		t.Errorf("config %+v", cfg)
	}
	if cfg.Config.Labels["org.opencontainers.image.version"] != meta.Version || cfg.Config.Labels["org.opencontainers.image.revision"] != meta.Revision ||
		cfg.Config.Labels["org.opencontainers.image.created"] != "2026-01-02T03:04:05Z" {
		t.Errorf("labels %v", cfg.Config.Labels)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %v, %v", layers, err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var names []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if !h.ModTime.Equal(meta.Created) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: mtime %s, owner %d:%d", h.Name, h.ModTime, h.Uid, h.Gid)
		}
		if h.Name == BinaryPath {
			data, _ := io.ReadAll(tr)
			if string(data) != "arm64 binary" || h.Mode != 0o755 {
				t.Errorf("binary %q, mode %o", data, h.Mode)
			}
		}
	}
	if want := []string{"usr/", "usr/local/", "usr/local/bin/", BinaryPath}; !slices.Equal(names, want) {
		t.Errorf("layer holds %v, want %v", names, want)
	}
}

// The index archive is an OCI layout that go-containerregistry reads back:
// one image index, named for containerd, with one manifest per platform.
// Writing it twice gives the same bytes.
func TestWriteIndexArchive(t *testing.T) {
	tag, err := meta.Tag()
	if err != nil {
		t.Fatal(err)
	}
	write := func() (string, v1.Hash) {
		var images []v1.Image
		for _, arch := range []string{"amd64", "arm64"} {
			img, err := Image(fakeBinary(t, arch+" binary"), "linux", arch, meta)
			if err != nil {
				t.Fatal(err)
			}
			images = append(images, img)
		}
		path := filepath.Join(t.TempDir(), "index.tar")
		digest, err := WriteIndexArchive(path, tag, meta.Created, images...)
		if err != nil {
			t.Fatal(err)
		}
		return path, digest
	}
	path, digest := write()
	again, againDigest := write()
	if digest != againDigest || !sameFile(t, path, again) {
		t.Errorf("two writes differ: %s and %s", digest, againDigest)
	}

	dir := t.TempDir()
	untar(t, path, dir)
	l, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := l.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	topManifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topManifest.Manifests) != 1 {
		t.Fatalf("index.json has %d entries, want 1", len(topManifest.Manifests))
	}
	entry := topManifest.Manifests[0]
	if entry.Digest != digest || entry.MediaType != types.OCIImageIndex {
		t.Errorf("index.json names %s %s, want the image index %s", entry.MediaType, entry.Digest, digest)
	}
	if entry.Annotations["io.containerd.image.name"] != "example.test/turnstile/kube-apiserver:v1.36.3_turnstile.7" ||
		entry.Annotations["org.opencontainers.image.ref.name"] != "v1.36.3_turnstile.7" {
		t.Errorf("annotations %v", entry.Annotations)
	}
	index, err := top.ImageIndex(digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, m := range im.Manifests {
		platforms = append(platforms, m.Platform.String())
		img, err := index.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.OS+"/"+cfg.Architecture != m.Platform.String() {
			t.Errorf("manifest for %s holds a config for %s/%s", m.Platform, cfg.OS, cfg.Architecture)
		}
	}
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v", platforms)
	}
}

// A Docker Hub style repository is named in full for containerd, which is
// how the kubelet's CRI looks the image up.
func TestIndexNameIsFullyQualified(t *testing.T) {
	m := meta
	m.Repository = "turnstile-k8s"
	tag, err := m.Tag()
	if err != nil {
		t.Fatal(err)
	}
	img, err := Image(fakeBinary(t, "x"), "linux", "amd64", m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "index.tar")
	if _, err := WriteIndexArchive(path, tag, m.Created, img); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	untar(t, path, dir)
	var index v1.IndexManifest
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &index); err != nil {
		t.Fatal(err)
	}
	if got := index.Manifests[0].Annotations["io.containerd.image.name"]; got != "docker.io/turnstile-k8s/kube-apiserver:v1.36.3_turnstile.7" {
		t.Errorf("io.containerd.image.name = %q", got)
	}
}

func TestWriteDockerArchive(t *testing.T) {
	tag, err := meta.Tag()
	if err != nil {
		t.Fatal(err)
	}
	img, err := Image(fakeBinary(t, "amd64 binary"), "linux", "amd64", meta)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "image.tar")
	id, err := WriteDockerArchive(path, tag, img)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	untar(t, path, dir)
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		t.Fatal(err)
	}
	if len(manifest) != 1 || manifest[0].Config != id.String() || !slices.Equal(manifest[0].RepoTags, []string{tag.String()}) || len(manifest[0].Layers) != 1 {
		t.Errorf("manifest.json %+v, want config %s tagged %s", manifest, id, tag)
	}
}

func untar(t *testing.T, path, dir string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	da, errA := os.ReadFile(a)
	db, errB := os.ReadFile(b)
	return errA == nil && errB == nil && bytes.Equal(da, db)
}

// The air-gap bundle's archive lists every image under each of its names,
// in order, with the digests WriteImagesArchive returns, and refuses a
// name containerd would qualify differently.
func TestWriteImagesArchive(t *testing.T) {
	a, err := Image(fakeBinary(t, "a"), "linux", "arm64", meta)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Image(fakeBinary(t, "b"), "linux", "arm64", meta)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"docker.io/turnstile-k8s/a:v1", "registry.example.com/b:v2", "docker.io/turnstile-k8s/a:v1_x.1"}
	images := map[string]v1.Image{names[0]: a, names[1]: b, names[2]: a}
	path := filepath.Join(t.TempDir(), "bundle.oci.tar")
	digests, err := WriteImagesArchive(path, meta.Created, names, images)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	untar(t, path, dir)
	l, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	index, err := l.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != len(names) {
		t.Fatalf("index.json lists %d manifests, want %d", len(m.Manifests), len(names))
	}
	for i, d := range m.Manifests {
		n := names[i]
		if d.Annotations["io.containerd.image.name"] != n || d.Annotations["org.opencontainers.image.ref.name"] != n || d.Digest != digests[n] {
			t.Errorf("manifest %d: %+v; want %s at %s", i, d, n, digests[n])
		}
	}
	if digests[names[0]] != digests[names[2]] || digests[names[0]] == digests[names[1]] {
		t.Errorf("digests %v", digests)
	}
	for _, bad := range []string{"turnstile-k8s/a:v1", "docker.io/turnstile-k8s/a"} {
		if _, err := WriteImagesArchive(path, meta.Created, []string{bad}, map[string]v1.Image{bad: a}); err == nil || !strings.Contains(err.Error(), "not fully qualified") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
