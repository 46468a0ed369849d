// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package images

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/cmd/nodeimages/internal/debian"
)

// testBusybox is a static busybox: the one make node-images fetched, or the
// host's busybox-static. It also stands in for busybox-sh, which needs only
// to be a static binary here. The test skips without one.
func testBusybox(t *testing.T, bin string) string {
	t.Helper()
	candidates, _ := filepath.Glob(filepath.Join("..", "..", "_output", "images", "node", "busybox-*.tar.busybox"))
	for _, path := range append(candidates, "/bin/busybox") {
		if static(path, "") == nil {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(bin, "busybox-sh"), data, 0o755); err != nil {
				t.Fatal(err)
			}
			return path
		}
	}
	t.Skip("no static busybox (make node-images fetches one)")
	return ""
}

// A second run writes nothing; changing one input rebuilds that image only.
func TestRunSkipsUnchangedImages(t *testing.T) {
	tmp := t.TempDir()
	bin, kube, out := filepath.Join(tmp, "bin"), filepath.Join(tmp, "kubernetes"), filepath.Join(tmp, "images")
	porter := filepath.Join(kube, "test", "images", "agnhost", "porter")
	for _, d := range []string{bin, porter} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Any static binary will do for bash.
	busybox := testBusybox(t, bin)
	bash := busybox
	for _, f := range []string{filepath.Join(bin, "pause"), filepath.Join(bin, "agnhost"), filepath.Join(bin, "coredns"),
		filepath.Join(porter, "localhost.crt"), filepath.Join(porter, "localhost.key")} {
		if err := os.WriteFile(f, []byte(filepath.Base(f)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runOnce := func() string {
		t.Helper()
		var buf bytes.Buffer
		if err := Run(&buf, out, bin, kube, busybox, bash, ""); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	count := func(s, word string) int { return strings.Count(s, " "+word+" ") }
	if first := runOnce(); count(first, "built") != 4 {
		t.Fatalf("first run:\n%s", first)
	}
	if second := runOnce(); count(second, "up to date") != 4 {
		t.Fatalf("second run:\n%s", second)
	}
	if err := os.WriteFile(filepath.Join(bin, "coredns"), []byte("coredns 2"), 0o755); err != nil {
		t.Fatal(err)
	}
	third := runOnce()
	if count(third, "up to date") != 3 || !strings.Contains(third, "coredns  built") {
		t.Fatalf("after changing coredns:\n%s", third)
	}
	// A lost tarball is rebuilt even though its stamp is there.
	if err := os.Remove(filepath.Join(out, "pause.tar")); err != nil {
		t.Fatal(err)
	}
	if fourth := runOnce(); !strings.Contains(fourth, "pause    built") {
		t.Fatalf("after removing pause.tar:\n%s", fourth)
	}
}

// The e2e images: one archive with every name, the Debian root file system
// in it once, rebuilt only when an input changes.
func TestE2EImagesShareOneArchive(t *testing.T) {
	tmp := t.TempDir()
	bin, kube, out := filepath.Join(tmp, "bin"), filepath.Join(tmp, "kubernetes"), filepath.Join(tmp, "images")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	busybox := testBusybox(t, bin)
	files := []string{
		filepath.Join(kube, "test", "images", "agnhost", "porter", "localhost.crt"), filepath.Join(kube, "test", "images", "agnhost", "porter", "localhost.key"),
		filepath.Join(kube, "test", "images", "kitten", "html", "kitten.jpg"), filepath.Join(kube, "test", "images", "kitten", "html", "data.json"),
		filepath.Join(kube, "test", "images", "nautilus", "html", "nautilus.jpg"), filepath.Join(kube, "test", "images", "nautilus", "html", "data.json"),
	}
	for _, b := range e2eBinaries {
		files = append(files, filepath.Join(bin, b))
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(filepath.Base(f)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fakeRootfs(t, out)

	var buf bytes.Buffer
	if err := RunE2E(&buf, out, bin, kube, busybox); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "debian   up to date") || !strings.Contains(buf.String(), "e2e      built") {
		t.Fatalf("first run:\n%s", buf.String())
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(filepath.Join(out, oci.E2EImageArchive)) })
	if err != nil {
		t.Fatal(err)
	}
	tags, rootfsLayers := map[string]bool{}, map[string]bool{}
	for _, d := range m {
		for _, tag := range d.RepoTags {
			tags[tag] = true
		}
		rootfsLayers[d.Layers[0]] = true
	}
	for _, img := range oci.E2EImages() {
		for _, tag := range img.Tags {
			if !tags[tag] {
				t.Errorf("the archive lacks %s", tag)
			}
		}
	}
	// Two bottom layers: the Debian root file system and busybox.
	if len(m) != len(oci.E2EImages()) || len(rootfsLayers) != 2 {
		t.Errorf("%d images (want %d), %d distinct bottom layers (want 2)", len(m), len(oci.E2EImages()), len(rootfsLayers))
	}
	buf.Reset()
	if err := RunE2E(&buf, out, bin, kube, busybox); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "e2e      up to date") {
		t.Fatalf("second run:\n%s", buf.String())
	}
	if err := os.Remove(filepath.Join(bin, "nnp")); err != nil {
		t.Fatal(err)
	}
	if err := RunE2E(&buf, out, bin, kube, busybox); err == nil || !strings.Contains(err.Error(), "nnp") {
		t.Errorf("without nnp: %v", err)
	}
}

// fakeRootfs writes a made-up Debian root file system into out, where
// mmdebstrap's would be.
func fakeRootfs(t *testing.T, out string) {
	t.Helper()
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	rootfs, err := os.Create(debian.RootfsPath(out))
	if err != nil {
		t.Fatal(err)
	}
	defer rootfs.Close()
	if err := oci.LayerTar(rootfs, []oci.Entry{
		oci.File("etc/debian_version", 0o644, []byte("12\n")),
		oci.File("usr/lib/os-release", 0o644, []byte("NAME=\"Debian GNU/Linux\"\n")),
	}, created); err != nil {
		t.Fatal(err)
	}
}
