// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Entry is one file, directory or symbolic link of a layer. Build entries
// with File, FileFrom, Dir and Symlink. Everything is owned by root unless
// UID or GID say otherwise.
type Entry struct {
	// Path is where the entry is in the image, slash-separated, with or
	// without a leading slash: "bin/sh" and "/bin/sh" are the same entry.
	Path string
	// Mode is the permission bits, with fs.ModeSetuid, fs.ModeSetgid and
	// fs.ModeSticky, and fs.ModeDir or fs.ModeSymlink for the kind (none
	// for a regular file).
	Mode fs.FileMode
	// Data is a regular file's content when Source is empty.
	Data []byte
	// Source is a file on this machine whose content a regular file has,
	// read when the layer is built.
	Source string
	// Target is a symbolic link's target.
	Target string
	// UID and GID own the entry.
	UID, GID int
}

// File is a regular file holding data.
func File(p string, perm fs.FileMode, data []byte) Entry {
	return Entry{Path: p, Mode: perm, Data: data}
}

// FileFrom is a regular file whose content is the file source on this
// machine (read when the layer is built).
func FileFrom(p string, perm fs.FileMode, source string) Entry {
	return Entry{Path: p, Mode: perm, Source: source}
}

// Dir is a directory.
func Dir(p string, perm fs.FileMode) Entry {
	return Entry{Path: p, Mode: fs.ModeDir | perm}
}

// Symlink is a symbolic link to target.
func Symlink(p, target string) Entry {
	return Entry{Path: p, Mode: fs.ModeSymlink | 0o777, Target: target}
}

// cleanPath is p relative to the image's root, without a trailing slash.
func cleanPath(p string) (string, error) {
	c := strings.TrimPrefix(path.Clean("/"+p), "/")
	if c == "" || strings.Contains(p, "\x00") {
		return "", fmt.Errorf("layer entry path %q: not a path below /", p)
	}
	return c, nil
}

// tarMode is m as a tar header's mode: permissions and the setuid, setgid
// and sticky bits.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}

// normalize checks entries, cleans their paths, adds the directories above
// them that are missing (0755, root's) and sorts them by path, so that a
// directory comes before what it holds.
func normalize(entries []Entry) ([]Entry, error) {
	byPath := make(map[string]Entry, len(entries))
	for _, e := range entries {
		p, err := cleanPath(e.Path)
		if err != nil {
			return nil, err
		}
		e.Path = p
		switch {
		case e.Mode.IsDir(), e.Mode.IsRegular():
		case e.Mode&fs.ModeSymlink != 0:
			if e.Target == "" {
				return nil, fmt.Errorf("layer entry %s: a symbolic link without a target", p)
			}
		default:
			return nil, fmt.Errorf("layer entry %s: mode %v is not a regular file, a directory or a symbolic link", p, e.Mode)
		}
		if _, dup := byPath[p]; dup {
			return nil, fmt.Errorf("layer entry %s: given twice", p)
		}
		byPath[p] = e
	}
	for _, p := range slices.Collect(maps.Keys(byPath)) {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			parent, ok := byPath[d]
			if !ok {
				byPath[d] = Entry{Path: d, Mode: fs.ModeDir | 0o755}
			} else if !parent.Mode.IsDir() {
				return nil, fmt.Errorf("layer entry %s: %s above it is not a directory", p, d)
			}
		}
	}
	// Sort component by component, so that "a/b" comes right after "a"
	// and before "a-b" (a plain string sort would put "a-b" first).
	return slices.SortedFunc(maps.Values(byPath), func(a, b Entry) int {
		return slices.Compare(strings.Split(a.Path, "/"), strings.Split(b.Path, "/"))
	}), nil
}

// LayerTar writes entries to w as an uncompressed layer tarball: sorted,
// with the directories they need, every time set to mtime, no user or group
// names, so that the same entries always give the same bytes.
func LayerTar(w io.Writer, entries []Entry, mtime time.Time) error {
	sorted, err := normalize(entries)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for _, e := range sorted {
		h := &tar.Header{Name: e.Path, Mode: tarMode(e.Mode), Uid: e.UID, Gid: e.GID, ModTime: mtime, Format: tar.FormatPAX}
		var data []byte
		switch {
		case e.Mode.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, e.Path+"/"
		case e.Mode&fs.ModeSymlink != 0:
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.Target
		default:
			data = e.Data
			if e.Source != "" {
				if data, err = os.ReadFile(e.Source); err != nil {
					return fmt.Errorf("layer entry %s: %w", e.Path, err)
				}
			}
			h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// Layer is an OCI layer (gzip) holding entries, as LayerTar writes them.
func Layer(entries []Entry, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	if err := LayerTar(&buf, entries, mtime); err != nil {
		return nil, err
	}
	tarBytes := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// InputsDigest is a sha256 of entries as they would be written, content
// included, without building the layer: what a builder compares to skip
// an image whose inputs have not changed. Sources are hashed as read now.
func InputsDigest(entries []Entry) (string, error) {
	sorted, err := normalize(entries)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, e := range sorted {
		fmt.Fprintf(h, "%q %o %d %d %q ", e.Path, uint32(e.Mode), e.UID, e.GID, e.Target)
		if e.Source != "" {
			f, err := os.Open(e.Source)
			if err != nil {
				return "", fmt.Errorf("layer entry %s: %w", e.Path, err)
			}
			fh := sha256.New()
			_, err = io.Copy(fh, f)
			f.Close()
			if err != nil {
				return "", fmt.Errorf("layer entry %s: %w", e.Path, err)
			}
			fmt.Fprintf(h, "%x\n", fh.Sum(nil))
		} else {
			fmt.Fprintf(h, "%x\n", sha256.Sum256(e.Data))
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Config is what an image built by NewImage runs, and how it describes
// itself.
type Config struct {
	// OS and Architecture default to linux and the builder's GOARCH.
	OS, Architecture string
	Entrypoint, Cmd  []string
	// User is "uid:gid" or a name in the image's /etc/passwd.
	User       string
	WorkingDir string
	// Env holds "NAME=value" strings.
	Env    []string
	Labels map[string]string
	// ExposedPorts holds "80/tcp" style ports.
	ExposedPorts []string
	// Created is the image's creation time (and its history's).
	Created time.Time
}

// NewImage is an OCI image of layers, bottom first, that runs as cfg says.
func NewImage(cfg Config, layers ...v1.Layer) (v1.Image, error) {
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	adds := make([]mutate.Addendum, len(layers))
	for i, l := range layers {
		adds[i] = mutate.Addendum{Layer: l, MediaType: types.OCILayer,
			History: v1.History{Created: v1.Time{Time: cfg.Created}, CreatedBy: fmt.Sprintf("turnstile build/oci: layer %d", i)}}
	}
	img, err := mutate.Append(base, adds...)
	if err != nil {
		return nil, err
	}
	// Edit the config Append made, which holds the layers' diff IDs.
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = cfg.OS, cfg.Architecture
	if cf.OS == "" {
		cf.OS = "linux"
	}
	if cf.Architecture == "" {
		cf.Architecture = runtime.GOARCH
	}
	cf.Created = v1.Time{Time: cfg.Created}
	c := &cf.Config
	c.Entrypoint, c.Cmd, c.User, c.WorkingDir, c.Env, c.Labels = cfg.Entrypoint, cfg.Cmd, cfg.User, cfg.WorkingDir, cfg.Env, cfg.Labels
	if len(cfg.ExposedPorts) > 0 {
		c.ExposedPorts = make(map[string]struct{}, len(cfg.ExposedPorts))
		for _, p := range cfg.ExposedPorts {
			c.ExposedPorts[p] = struct{}{}
		}
	}
	return mutate.ConfigFile(img, cf)
}

// WriteDockerArchiveTags writes img to path as one docker-archive tarball
// that holds every name in refs, as WriteDockerArchiveImages does. It
// returns the image ID, the config's digest.
func WriteDockerArchiveTags(path string, img v1.Image, refs ...string) (v1.Hash, error) {
	if len(refs) == 0 {
		return v1.Hash{}, fmt.Errorf("writing %s: no image name", path)
	}
	id, err := img.ConfigName()
	if err != nil {
		return v1.Hash{}, err
	}
	images := make(map[string]v1.Image, len(refs))
	for _, r := range refs {
		images[r] = img
	}
	return id, WriteDockerArchiveImages(path, images)
}

// TarLayer is an OCI layer (gzip) holding the uncompressed tar file at
// path, for example a root filesystem that mmdebstrap wrote.
func TarLayer(path string) (v1.Layer, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return tarball.LayerFromFile(path, tarball.WithMediaType(types.OCILayer))
}

// WriteDockerArchiveImages writes images to path as one docker-archive tarball
// that holds each under its name (for example registry.k8s.io/pause:3.10.2;
// one image may have several), each layer once: `docker load` and `ctr
// images import` create all of them. The file is written next to path and
// renamed, so path is never a partial archive.
func WriteDockerArchiveImages(path string, images map[string]v1.Image) error {
	if len(images) == 0 {
		return fmt.Errorf("writing %s: no image", path)
	}
	tags := make(map[name.Reference]v1.Image, len(images))
	for r, img := range images {
		tag, err := name.NewTag(r, name.StrictValidation)
		if err != nil {
			return fmt.Errorf("image name %q: %w", r, err)
		}
		tags[tag] = img
	}
	tmp := path + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, tags); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

// FileSHA256 is a file's SHA-256, hex-encoded: how a tarball or a binary
// is recognised as unchanged.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
