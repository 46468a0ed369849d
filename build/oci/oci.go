// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package oci builds the kube-apiserver's container images without a Docker
// daemon: one FROM-scratch image per platform, holding the static binary at
// /usr/local/bin/kube-apiserver as its entrypoint, written either as a
// docker-archive tarball (what `docker load` and `ctr images import` have
// always read) or as an OCI image layout tarball whose index lists every
// platform (what `ctr images import` and Docker's containerd image store
// read as one multi-architecture image).
//
// Everything is reproducible: file times, the image's creation time and the
// layer's compression depend only on the binary and on Meta, so the same
// commit gives the same bytes.
package oci

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	kubeadmutil "k8s.io/kubernetes/cmd/kubeadm/app/util"
)

// DefaultSource is the org.opencontainers.image.source label.
const DefaultSource = "https://github.com/turnstile-k8s/turnstile"

// BinaryPath is where the image holds the binary, as upstream's images do.
const BinaryPath = "usr/local/bin/kube-apiserver"

// Meta is what the images of one build share.
type Meta struct {
	// Repository is kubeadm's imageRepository, for example turnstile-k8s.
	Repository string
	// Version is what the binary reports, for example v1.36.3+turnstile.1.
	Version string
	// Source and Revision are the repository URL and the commit.
	Source, Revision string
	// Created is the image's creation time: the commit's date.
	Created time.Time
}

// Tag is repository/kube-apiserver:<tag>, where the tag is the version with
// kubeadm's rule for image tags applied ('+' is not allowed in a tag, so
// v1.36.3+turnstile.1 becomes v1.36.3_turnstile.1). kubeadm computes the
// same tag from kubernetesVersion, so it finds the image.
func (m Meta) Tag() (name.Tag, error) {
	ref := m.Repository + "/kube-apiserver:" + kubeadmutil.KubernetesVersionToImageTag(m.Version)
	tag, err := name.NewTag(ref)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image repository %q: %w", m.Repository, err)
	}
	return tag, nil
}

// Image is the image of binary, built for platform os/arch.
func Image(binary, os, arch string, m Meta) (v1.Image, error) {
	layer, err := binaryLayer(binary, m.Created)
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: m.Created}, CreatedBy: "turnstile build/oci: COPY kube-apiserver /" + BinaryPath},
	})
	if err != nil {
		return nil, err
	}
	// Edit the config Append made, which holds the layer's diff ID.
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS, cfg.Created = arch, os, v1.Time{Time: m.Created}
	cfg.Config.Entrypoint = []string{"/" + BinaryPath}
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":       "kube-apiserver",
		"org.opencontainers.image.description": "Turnstile: kube-apiserver " + m.Version + " with every documented admission controller",
		"org.opencontainers.image.version":     m.Version,
		"org.opencontainers.image.source":      m.Source,
		"org.opencontainers.image.revision":    m.Revision,
		"org.opencontainers.image.created":     m.Created.Format(time.RFC3339),
	}
	return mutate.ConfigFile(img, cfg)
}

// WriteDockerArchive writes img tagged tag to path as a docker-archive
// tarball. It returns the image ID, the config's digest, which `docker load`
// and `docker images` report: a loader writes its own manifest for an
// archive, so a manifest digest would not survive the import.
func WriteDockerArchive(path string, tag name.Tag, img v1.Image) (v1.Hash, error) {
	id, err := img.ConfigName()
	if err != nil {
		return v1.Hash{}, err
	}
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		return v1.Hash{}, fmt.Errorf("writing %s: %w", path, err)
	}
	return id, nil
}

// WriteIndexArchive writes images, one per platform, to path as a tarball
// of an OCI image layout whose index.json holds one image index tagged tag.
// It returns the image index's digest, which is the image's digest in a
// registry.
func WriteIndexArchive(path string, tag name.Tag, created time.Time, images ...v1.Image) (v1.Hash, error) {
	var index v1.ImageIndex = empty.Index
	for _, img := range images {
		cfg, err := img.ConfigFile()
		if err != nil {
			return v1.Hash{}, err
		}
		index = mutate.AppendManifests(index, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture}},
		})
	}
	digest, err := index.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	// containerd (ctr images import, Docker's containerd store, the
	// kubelet's CRI) names an imported image by io.containerd.image.name,
	// as a fully qualified reference: docker.io/... for a Docker Hub
	// style repository. The OCI annotation holds the tag alone.
	full, err := reference.ParseDockerRef(tag.String())
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image %s: %w", tag, err)
	}
	return digest, writeLayoutArchive(path, created, func(l layout.Path) error {
		return l.AppendIndex(index, layout.WithAnnotations(map[string]string{
			"io.containerd.image.name":          full.String(),
			"org.opencontainers.image.ref.name": tag.TagStr(),
		}))
	})
}

// WriteImagesArchive writes images to path as a tarball of an OCI image
// layout whose index.json lists each image under each of its names, in the
// order of names: the air-gap bundle, which `ctr images import` and
// Docker's containerd image store import whole. Each name must be fully
// qualified and tagged (docker.io/... for a Docker Hub style repository), as
// containerd names images. Unlike a docker-archive's, a layout's manifests
// are imported as they are, so the digests WriteImagesArchive returns, by
// name, are the ones containerd and the kubelet report.
func WriteImagesArchive(path string, created time.Time, names []string, images map[string]v1.Image) (map[string]v1.Hash, error) {
	digests := make(map[string]v1.Hash, len(names))
	for _, n := range names {
		full, err := reference.ParseNormalizedNamed(n)
		if _, tagged := full.(reference.Tagged); err != nil || !tagged || full.String() != n {
			return nil, fmt.Errorf("writing %s: image name %q is not fully qualified with a tag, as containerd names images (%v)", path, n, err)
		}
		img, ok := images[n]
		if !ok {
			return nil, fmt.Errorf("writing %s: no image named %s", path, n)
		}
		if digests[n], err = img.Digest(); err != nil {
			return nil, err
		}
	}
	return digests, writeLayoutArchive(path, created, func(l layout.Path) error {
		for _, n := range names {
			if err := l.AppendImage(images[n], layout.WithAnnotations(map[string]string{
				"io.containerd.image.name":          n,
				"org.opencontainers.image.ref.name": n,
			})); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeLayoutArchive writes the OCI image layout that add fills to path as
// a tarball (tarDir), by way of a temporary directory.
func writeLayoutArchive(path string, created time.Time, add func(layout.Path) error) error {
	dir, err := os.MkdirTemp("", "oci-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	l, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := add(l); err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	if err := tarDir(path, dir, created); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// tarDir writes the files under dir to a tarball at path, in lexical order,
// owned by root, with mtime created.
func tarDir(path, dir string, created time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: 0o755, ModTime: created, Format: tar.FormatPAX})
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: 0o644, Size: int64(len(data)), ModTime: created, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	return err
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
	dirs := strings.Split(filepath.Dir(BinaryPath), "/")
	for i := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.Join(dirs[:i+1], "/") + "/", Mode: 0o755, ModTime: created, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: BinaryPath, Mode: 0o755, Size: int64(len(data)), ModTime: created, Format: tar.FormatPAX}); err != nil {
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
	}, tarball.WithMediaType(types.OCILayer))
}
