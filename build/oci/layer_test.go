// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

var epoch = time.Unix(0, 0).UTC()

type tarEntry struct {
	typ            byte
	mode           int64
	uid, gid       int
	link, contents string
}

func readTar(t *testing.T, r io.Reader) (names []string, entries map[string]tarEntry) {
	t.Helper()
	entries = map[string]tarEntry{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names, entries
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(epoch) || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: mtime %v, owner names %q %q", h.Name, h.ModTime, h.Uname, h.Gname)
		}
		names = append(names, h.Name)
		entries[h.Name] = tarEntry{typ: h.Typeflag, mode: h.Mode, uid: h.Uid, gid: h.Gid, link: h.Linkname, contents: string(data)}
	}
}

func TestLayerTar(t *testing.T) {
	source := filepath.Join(t.TempDir(), "busybox")
	if err := os.WriteFile(source, []byte("ELF"), 0o600); err != nil {
		t.Fatal(err)
	}
	entries := []Entry{
		Symlink("/bin/sh", "busybox"),
		FileFrom("bin/busybox", 0o755, source),
		Dir("/tmp", 0o777|fs.ModeSticky),
		File("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\n")),
		{Path: "home/user/", Mode: fs.ModeDir | 0o750, UID: 1000, GID: 50000},
		File("bin-x", 0o4755, nil),
		{Path: "setuid", Mode: 0o755 | fs.ModeSetuid},
	}
	var buf bytes.Buffer
	if err := LayerTar(&buf, entries, epoch); err != nil {
		t.Fatal(err)
	}
	names, got := readTar(t, &buf)
	// Sorted by path component, parents added: bin/ before bin-x.
	want := "bin/ bin/busybox bin/sh bin-x etc/ etc/passwd home/ home/user/ setuid tmp/"
	if strings.Join(names, " ") != want {
		t.Errorf("order\n got %s\nwant %s", strings.Join(names, " "), want)
	}
	for _, tc := range []struct {
		name string
		want tarEntry
	}{
		{"bin/", tarEntry{typ: tar.TypeDir, mode: 0o755}},
		{"bin/busybox", tarEntry{typ: tar.TypeReg, mode: 0o755, contents: "ELF"}},
		{"bin/sh", tarEntry{typ: tar.TypeSymlink, mode: 0o777, link: "busybox"}},
		// 0o4755 as a FileMode is not setuid: only fs.ModeSetuid is.
		{"bin-x", tarEntry{typ: tar.TypeReg, mode: 0o755}},
		{"etc/passwd", tarEntry{typ: tar.TypeReg, mode: 0o644, contents: "root:x:0:0:root:/root:/bin/sh\n"}},
		{"home/user/", tarEntry{typ: tar.TypeDir, mode: 0o750, uid: 1000, gid: 50000}},
		{"setuid", tarEntry{typ: tar.TypeReg, mode: 0o4755}},
		{"tmp/", tarEntry{typ: tar.TypeDir, mode: 0o1777}},
	} {
		if got[tc.name] != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got[tc.name], tc.want)
		}
	}
}

func TestLayerTarErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []Entry
		want    string
	}{
		{"root", []Entry{Dir("/", 0o755)}, "not a path below /"},
		{"duplicate", []Entry{File("a", 0o644, nil), File("/a", 0o644, nil)}, "given twice"},
		{"file as parent", []Entry{File("a", 0o644, nil), File("a/b", 0o644, nil)}, "not a directory"},
		{"link without target", []Entry{{Path: "l", Mode: fs.ModeSymlink}}, "without a target"},
		{"device", []Entry{{Path: "null", Mode: fs.ModeDevice | 0o666}}, "not a regular file"},
		{"missing source", []Entry{FileFrom("a", 0o644, "/nonexistent/file")}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := LayerTar(io.Discard, tc.entries, epoch)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// The same entries in any order give the same layer digest, the same
// inputs digest, and so the same image; any change gives other digests.
func TestDigestsAreDeterministic(t *testing.T) {
	a := []Entry{File("etc/group", 0o644, []byte("root:x:0:\n")), Symlink("bin/sh", "busybox"), Dir("tmp", 0o777|fs.ModeSticky)}
	reversed := []Entry{a[2], a[1], a[0]}
	digests := func(entries []Entry) (layer, inputs string) {
		t.Helper()
		l, err := Layer(entries, epoch)
		if err != nil {
			t.Fatal(err)
		}
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		in, err := InputsDigest(entries)
		if err != nil {
			t.Fatal(err)
		}
		return d.String(), in
	}
	l1, i1 := digests(a)
	l2, i2 := digests(reversed)
	if l1 != l2 || i1 != i2 {
		t.Errorf("order changed the digests: layer %s vs %s, inputs %s vs %s", l1, l2, i1, i2)
	}
	for _, tc := range []struct {
		name   string
		change func(e []Entry)
	}{
		{"content", func(e []Entry) { e[0].Data = []byte("root:x:0:root\n") }},
		{"mode", func(e []Entry) { e[2].Mode = fs.ModeDir | 0o777 }},
		{"symlink target", func(e []Entry) { e[1].Target = "bash" }},
		{"owner", func(e []Entry) { e[0].UID = 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changed := append([]Entry(nil), a...)
			tc.change(changed)
			l, i := digests(changed)
			if l == l1 || i == i1 {
				t.Errorf("same digests after changing the %s: layer %v, inputs %v", tc.name, l == l1, i == i1)
			}
		})
	}
}

func TestNewImageAndMultiTagArchive(t *testing.T) {
	l, err := Layer([]Entry{File("pause", 0o755, []byte("pause"))}, epoch)
	if err != nil {
		t.Fatal(err)
	}
	img, err := NewImage(Config{Architecture: "arm64", Entrypoint: []string{"/pause"}, User: "65535:65535",
		ExposedPorts: []string{"53/udp"}, Labels: map[string]string{"a": "b"}, Created: epoch}, l)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if cfg.OS != "linux" || cfg.Architecture != "arm64" || len(c.Entrypoint) != 1 || c.Entrypoint[0] != "/pause" || c.User != "65535:65535" ||
		len(c.ExposedPorts) != 1 || c.Labels["a"] != "b" || len(cfg.RootFS.DiffIDs) != 1 {
		t.Errorf("config %+v", cfg)
	}
	path := filepath.Join(t.TempDir(), "pause.tar")
	refs := []string{"registry.k8s.io/pause:3.10.2", "registry.k8s.io/pause:latest"}
	id, err := WriteDockerArchiveTags(path, img, refs...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || len(m[0].RepoTags) != 2 || m[0].Config != id.String() {
		t.Fatalf("manifest %+v, image ID %s", m, id)
	}
	for _, r := range refs {
		if !strings.Contains(strings.Join(m[0].RepoTags, " "), r) {
			t.Errorf("RepoTags %v lack %s", m[0].RepoTags, r)
		}
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
	if _, err := WriteDockerArchiveTags(path, img, "Not A Name"); err == nil {
		t.Error("a bad name was accepted")
	}
}

// Two images over one root file system tarball: one archive, the shared
// layer in it once, each image under its names.
func TestArchiveOfImagesSharingATarLayer(t *testing.T) {
	dir := t.TempDir()
	rootfs := filepath.Join(dir, "rootfs.tar")
	f, err := os.Create(rootfs)
	if err != nil {
		t.Fatal(err)
	}
	if err := LayerTar(f, []Entry{File("etc/os-release", 0o644, []byte("ID=debian\n")), Dir("tmp", 0o1777)}, epoch); err != nil {
		t.Fatal(err)
	}
	f.Close()
	base, err := TarLayer(rootfs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TarLayer(filepath.Join(dir, "missing.tar")); err == nil {
		t.Error("TarLayer of a missing file: no error")
	}
	top, err := Layer([]Entry{File("nginx", 0o755, []byte("nginx"))}, epoch)
	if err != nil {
		t.Fatal(err)
	}
	nginx, err := NewImage(Config{Cmd: []string{"nginx"}, Created: epoch}, base, top)
	if err != nil {
		t.Fatal(err)
	}
	nonroot, err := NewImage(Config{User: "1234", Created: epoch}, base)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "e2e.tar")
	if err := WriteDockerArchiveImages(path, map[string]v1.Image{
		"registry.k8s.io/e2e-test-images/nginx:1.15-4": nginx, "registry.k8s.io/e2e-test-images/nginx:1.27-0": nginx,
		"registry.k8s.io/e2e-test-images/nonroot:1.5": nonroot,
	}); err != nil {
		t.Fatal(err)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
	if err != nil {
		t.Fatal(err)
	}
	layers := map[string]int{}
	tags := 0
	for _, d := range m {
		tags += len(d.RepoTags)
		for _, l := range d.Layers {
			layers[l]++
		}
	}
	if len(m) != 2 || tags != 3 || len(layers) != 2 {
		t.Fatalf("manifest %+v: want 2 images, 3 names, 2 distinct layers", m)
	}
	if err := WriteDockerArchiveImages(path, nil); err == nil {
		t.Error("an archive of no image: no error")
	}
}
