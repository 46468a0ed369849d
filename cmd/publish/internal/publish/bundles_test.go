// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package publish

import (
	"archive/tar"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

// bundle writes an air-gap bundle of platform into dir as make release
// names it, one image per ref (NAME:TAG), each for imagePlatform[ref] or
// platform, and returns its file name.
func bundle(t *testing.T, dir, platform string, refs []string, imagePlatform map[string]string) string {
	t.Helper()
	staged := t.TempDir()
	l, err := layout.Write(staged, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range refs {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		p := platform
		if imagePlatform[ref] != "" {
			p = imagePlatform[ref]
		}
		goos, arch, _ := strings.Cut(p, "/")
		if img, err = mutate.ConfigFile(img, &v1.ConfigFile{OS: goos, Architecture: arch}); err != nil {
			t.Fatal(err)
		}
		if err := l.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref})); err != nil {
			t.Fatal(err)
		}
	}
	name := bundlePrefix + strings.ReplaceAll(platform, "/", "-") + ".oci.tar"
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.Walk(staged, func(path string, info os.FileInfo, err error) error {
		if err != nil || path == staged {
			return err
		}
		rel, _ := filepath.Rel(staged, path)
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = rel
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return name
}

// The bundles' images are grouped under the name and tag kubeadm pulls
// with --image-repository, one image per platform; a bundle's image for
// another platform, or without a NAME:TAG, is refused, naming the bundle.
func TestBundleImages(t *testing.T) {
	refs := []string{"docker.io/turnstile-k8s/kube-proxy:v1.37.2", "docker.io/turnstile-k8s/coredns:v1.14.6"}
	tests := []struct {
		name          string
		refs          []string
		imagePlatform map[string]string
		want          string // an error's text, "" for success
	}{
		{name: "two platforms", refs: refs},
		{name: "an image of another platform", refs: refs,
			imagePlatform: map[string]string{refs[1]: "linux/s390x"}, want: "docker.io/turnstile-k8s/coredns:v1.14.6 is an image for linux/s390x, not linux/"},
		{name: "an image without a tag", refs: []string{"turnstile-k8s/pause"}, want: `is named "turnstile-k8s/pause", not NAME:TAG`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			files := []string{"SHA256SUMS-is-not-a-bundle",
				bundle(t, dir, "linux/amd64", tt.refs, tt.imagePlatform), bundle(t, dir, "linux/arm64", tt.refs, tt.imagePlatform)}
			groups, err := bundleImages(dir, files, t.TempDir())
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), bundlePrefix) {
					t.Fatalf("got %v, want an error naming the bundle and containing %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"kube-proxy:v1.37.2", "coredns:v1.14.6"} {
				got := groups[key]
				if len(got) != 2 || got[0].platform == got[1].platform {
					t.Errorf("%s: %d images (%v), want one for each of the two platforms", key, len(got), got)
				}
			}
			if len(groups) != 2 {
				t.Errorf("%d groups, want 2: %v", len(groups), groups)
			}
		})
	}
}

// readIndex takes the release's layout, one image index under its tag;
// an air-gap bundle's layout, of several images, is not one.
func TestReadIndexRefusesABundle(t *testing.T) {
	dir := t.TempDir()
	name := bundle(t, dir, "linux/amd64", []string{"turnstile-k8s/pause:3.10.2", "turnstile-k8s/etcd:3.7.0-0"}, nil)
	if _, _, err := readIndex(filepath.Join(dir, name), t.TempDir()); err == nil || !strings.Contains(err.Error(), "index.json lists 2 manifests") {
		t.Errorf("got %v, want index.json's 2 manifests refused", err)
	}
}
