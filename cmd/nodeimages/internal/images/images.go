// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package images builds the images cmd/nodeimages writes: each image's
// layers and config (spec), and the docker-archive tarballs, rebuilt only
// when their inputs change.
package images

import (
	"cmp"
	"crypto/sha256"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/cmd/nodeimages/internal/debian"
)

// created is every file's time and the images' creation time, so that the
// same inputs give the same images.
var created = time.Unix(0, 0).UTC()

// envPath is what the busybox based images run with, as upstream's Alpine based
// ones.
const envPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

type spec struct {
	image oci.NodeImage
	// rootfs, when set, is a root file system tarball, the bottom layer.
	rootfs string
	layers [][]oci.Entry
	config oci.Config
}

// Run writes the node images, or with controlPlaneVersion set the
// control plane's.
func Run(w io.Writer, out, bin, kubernetes, busybox, bash, controlPlaneVersion string) error {
	if controlPlaneVersion != "" {
		specs, err := controlPlaneSpecs(bin, controlPlaneVersion)
		if err != nil {
			return err
		}
		return buildAll(w, out, specs)
	}
	if kubernetes == "" {
		return fmt.Errorf("-kubernetes is required: the k8s.io/kubernetes module's directory")
	}
	specs, err := specs(w, out, bin, kubernetes, busybox, bash)
	if err != nil {
		return err
	}
	return buildAll(w, out, specs)
}

// buildAll writes each archive of specs: the images of one tarball go into
// it together.
func buildAll(w io.Writer, out string, specs []spec) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	self, err := selfDigest()
	if err != nil {
		return err
	}
	var order []string
	byTarball := map[string][]spec{}
	for _, s := range specs {
		if byTarball[s.image.Tarball] == nil {
			order = append(order, s.image.Tarball)
		}
		byTarball[s.image.Tarball] = append(byTarball[s.image.Tarball], s)
	}
	for _, tarball := range order {
		if err := build(w, filepath.Join(out, tarball), self, byTarball[tarball]); err != nil {
			return fmt.Errorf("%s: %w", tarball, err)
		}
	}
	return nil
}

// build writes the archive at tarball holding group's images, unless its
// inputs are those of the last build.
func build(w io.Writer, tarball, self string, group []spec) error {
	start := time.Now()
	name := strings.TrimSuffix(filepath.Base(tarball), ".tar")
	key, err := inputsKey(self, group)
	if err != nil {
		return err
	}
	stamp := tarball + ".inputs"
	if old, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(old)) == key {
		if _, err := os.Stat(tarball); err == nil {
			fmt.Fprintf(w, "nodeimages: %-8s up to date  %s\n", name, tarball)
			return nil
		}
	}
	images := map[string]v1.Image{}
	var tags []string
	// A layer built once is the same layer in every image that has it.
	built := map[string]v1.Layer{}
	for _, s := range group {
		var layers []v1.Layer
		if s.rootfs != "" {
			if built[s.rootfs] == nil {
				if built[s.rootfs], err = oci.TarLayer(s.rootfs); err != nil {
					return err
				}
			}
			layers = append(layers, built[s.rootfs])
		}
		for _, entries := range s.layers {
			d, err := oci.InputsDigest(entries)
			if err != nil {
				return err
			}
			if built[d] == nil {
				if built[d], err = oci.Layer(entries, created); err != nil {
					return err
				}
			}
			layers = append(layers, built[d])
		}
		img, err := oci.NewImage(s.config, layers...)
		if err != nil {
			return fmt.Errorf("%s: %w", s.image.Name, err)
		}
		for _, tag := range s.image.Tags {
			images[tag] = img
			tags = append(tags, tag)
		}
	}
	// Remove the stamp first: a failed write must not leave an old
	// tarball that looks up to date.
	if err := os.Remove(stamp); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := oci.WriteDockerArchiveImages(tarball, images); err != nil {
		return err
	}
	if err := os.WriteFile(stamp, []byte(key+"\n"), 0o644); err != nil {
		return err
	}
	fi, err := os.Stat(tarball)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "nodeimages: %-8s built       %s (%.1f MiB, %s) in %s\n", name, tarball,
		float64(fi.Size())/(1<<20), strings.Join(tags, " "), time.Since(start).Round(100*time.Millisecond))
	return nil
}

// inputsKey is the sha256 of everything an archive is built from.
func inputsKey(self string, group []spec) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "nodeimages %s\n", self)
	for _, s := range group {
		cfg, err := json.Marshal(s.config)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "tags %q\nconfig %s\n", s.image.Tags, cfg)
		if s.rootfs != "" {
			d, err := oci.FileSHA256(s.rootfs)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "rootfs %s\n", d)
		}
		for _, entries := range s.layers {
			d, err := oci.InputsDigest(entries)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "layer %s\n", d)
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}

// selfDigest is the sha256 of this program, so that changing how images are
// built rebuilds them.
func selfDigest() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return oci.FileSHA256(exe)
}

func specs(w io.Writer, out, bin, kubernetes, busybox, bash string) ([]spec, error) {
	byName := map[string]oci.NodeImage{}
	for _, img := range oci.NodeImages() {
		byName[img.Name] = img
	}
	if err := need(bin, "pause", "agnhost", "coredns"); err != nil {
		return nil, err
	}
	busyboxLayer, err := busyboxEntries(w, out, bin, busybox)
	if err != nil {
		return nil, err
	}
	if err := static(bash, "bash-static"); err != nil {
		return nil, err
	}
	return []spec{pauseSpec(byName["pause"], bin, ""), {
		image:  byName["busybox"],
		layers: [][]oci.Entry{busyboxLayer},
		config: oci.Config{Env: []string{envPath}, Cmd: []string{"sh"}, Created: created},
	}, {
		// test/images/agnhost/Dockerfile, without its Alpine tools, the
		// CoreDNS 1.6.2 it downloads and the fake registry's images.
		image: byName["agnhost"],
		layers: [][]oci.Entry{busyboxLayer, append(agnhostEntries(bin, kubernetes),
			// Upstream's agnhost adds bash to Alpine's busybox.
			oci.FileFrom("bin/bash", 0o755, bash),
			// The SupplementalGroups test's user and group defined in the
			// image (the Debian one's come from useradd).
			oci.File("etc/passwd", 0o644, []byte(passwd+"user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n")),
			oci.File("etc/group", 0o644, []byte(group+"user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n")),
			oci.Entry{Path: "home/user-defined-in-image", Mode: fs.ModeDir | 0o755, UID: 1000, GID: 1000},
		)},
		config: agnhostConfig,
	}, corednsSpec(byName["coredns"], bin, "")}, nil
}

// pauseSpec is build/pause/Dockerfile's image: FROM scratch, /pause, USER
// 65535:65535; arch is the image's architecture (empty: this machine's).
func pauseSpec(image oci.NodeImage, bin, arch string) spec {
	return spec{
		image:  image,
		layers: [][]oci.Entry{{oci.FileFrom("pause", 0o755, filepath.Join(bin, "pause"))}},
		config: oci.Config{Entrypoint: []string{"/pause"}, User: "65535:65535", Architecture: arch, Created: created},
	}
}

// corednsSpec is as upstream's CoreDNS image: static, distroless nonroot
// (65532); arch as for pauseSpec.
func corednsSpec(image oci.NodeImage, bin, arch string) spec {
	return spec{
		image: image,
		layers: [][]oci.Entry{{
			oci.FileFrom("coredns", 0o755, filepath.Join(bin, "coredns")),
			oci.File("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")),
			oci.File("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")),
			{Path: "home/nonroot", Mode: fs.ModeDir | 0o700, UID: 65532, GID: 65532},
			oci.Dir("tmp", 0o777|fs.ModeSticky),
		}},
		config: oci.Config{Entrypoint: []string{"/coredns"}, User: "65532:65532",
			ExposedPorts: []string{"53/tcp", "53/udp"}, Architecture: arch, Created: created},
	}
}

// need checks that bin holds the binaries, saying what builds them.
func need(bin string, binaries ...string) error {
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return fmt.Errorf("%w (make node-images and make e2e-images build the binaries)", err)
		}
	}
	return nil
}

// agnhostEntries are agnhost's own files, as test/images/agnhost/Dockerfile
// adds them.
func agnhostEntries(bin, kubernetes string) []oci.Entry {
	porter := filepath.Join(kubernetes, "test", "images", "agnhost", "porter")
	return []oci.Entry{
		oci.FileFrom("agnhost", 0o755, filepath.Join(bin, "agnhost")),
		// The entrypoint-tester tests override the entrypoint with it.
		oci.Symlink("agnhost-2", "agnhost"),
		// netexec's uploads.
		oci.Dir("uploads", 0o755),
		// porter's TLS server.
		oci.FileFrom("localhost.crt", 0o644, filepath.Join(porter, "localhost.crt")),
		oci.FileFrom("localhost.key", 0o644, filepath.Join(porter, "localhost.key")),
	}
}

var agnhostConfig = oci.Config{Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}, Env: []string{envPath},
	ExposedPorts: []string{"80/tcp", "8080/tcp", "8081/tcp", "9376/tcp", "5000/tcp"}, Created: created}

// controlPlaneSpecs are kubeadm's control-plane images (binarySpec), each
// from the binary in bin that NodeImage.Binary names.
func controlPlaneSpecs(bin, version string) ([]spec, error) {
	var out []spec
	for _, img := range oci.ControlPlaneImages(version) {
		binary := filepath.Join(bin, cmp.Or(img.Binary, img.Name))
		if _, err := os.Stat(binary); err != nil {
			return nil, fmt.Errorf("%w (make tools builds it)", err)
		}
		out = append(out, binarySpec(img, binary, ""))
	}
	return out, nil
}

// binarySpec is a control-plane image as upstream's: binary FROM scratch
// as /usr/local/bin/<image.Name>, on the PATH, as kubeadm's static pods
// call it by name; arch as for pauseSpec.
func binarySpec(img oci.NodeImage, binary, arch string) spec {
	return spec{
		image:  img,
		layers: [][]oci.Entry{{oci.FileFrom("usr/local/bin/"+img.Name, 0o755, binary), oci.Dir("tmp", 0o777|fs.ModeSticky)}},
		config: oci.Config{Env: []string{envPath}, Architecture: arch, Created: created},
	}
}

const (
	passwd = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
	group  = "root:x:0:\nnobody:x:65534:\n"
)

// busyboxEntries is a busybox userland: every applet a symbolic link in
// /bin, and sh busybox-sh from bin, which runs busybox's ash (see
// build/busybox-sh for why). busybox is a static busybox, or empty for
// Debian's (debianBusybox, kept in out).
func busyboxEntries(w io.Writer, out, bin, busybox string) ([]oci.Entry, error) {
	if err := need(bin, "busybox-sh"); err != nil {
		return nil, err
	}
	sh := filepath.Join(bin, "busybox-sh")
	if busybox == "" {
		var err error
		if busybox, err = debian.Busybox(w, out); err != nil {
			return nil, err
		}
	}
	// The images have no libc: only static binaries will do.
	if err := static(busybox, "busybox-static"); err != nil {
		return nil, err
	}
	if err := static(sh, "busybox-sh, built with CGO_ENABLED=0"); err != nil {
		return nil, err
	}
	list, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", busybox, err)
	}
	entries := []oci.Entry{
		oci.FileFrom("bin/busybox", 0o755, busybox),
		oci.FileFrom("bin/sh", 0o755, sh),
		oci.File("etc/passwd", 0o644, []byte(passwd)),
		oci.File("etc/group", 0o644, []byte(group)),
		oci.Dir("root", 0o700),
		oci.Dir("tmp", 0o777|fs.ModeSticky),
		oci.Dir("var/tmp", 0o777|fs.ModeSticky),
		oci.Dir("usr/bin", 0o755),
		oci.Dir("usr/sbin", 0o755),
		oci.Dir("sbin", 0o755),
		oci.Dir("home", 0o755),
	}
	applets := strings.Fields(string(list))
	hasAsh := false
	for _, a := range applets {
		switch {
		case a == "busybox" || a == "sh":
			continue
		case strings.Contains(a, "/"):
			return nil, fmt.Errorf("%s --list: applet %q", busybox, a)
		}
		hasAsh = hasAsh || a == "ash"
		entries = append(entries, oci.Symlink("bin/"+a, "busybox"))
	}
	if !hasAsh || len(applets) < 100 {
		return nil, fmt.Errorf("%s --list: %d applets, ash among them: %v", busybox, len(applets), hasAsh)
	}
	return entries, nil
}

// static checks that the binary at path is statically linked; what says
// where a static one comes from.
func static(path, what string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%w (%s)", err, what)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked: it needs to be static (%s)", path, what)
		}
	}
	return nil
}
