// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package debian makes Debian root file systems and fetches Debian's
// static busybox with mmdebstrap, for the e2e and conformance images, kept
// between runs under a key of what mmdebstrap is asked for.
package debian

import (
	"archive/tar"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Tarball makes, or finds from an earlier run, the tarball mmdebstrap
// makes with args (all but the output): out/NAME-KEY.tar, KEY naming the
// arguments. Older NAME-*.tar* files are removed.
func Tarball(w io.Writer, out, name string, args []string) (string, error) {
	path := tarballPath(out, name, args)
	if _, err := os.Stat(path); err == nil {
		fmt.Fprintf(w, "nodeimages: %-8s up to date  %s\n", name, path)
		return path, nil
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return "", fmt.Errorf("%s needs mmdebstrap (Debian's mmdebstrap package): %w", path, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	old, err := filepath.Glob(filepath.Join(out, name+"-*.tar*"))
	if err != nil {
		return "", err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(w, "nodeimages: %-8s making %s with mmdebstrap %s (from Debian's mirror)\n", name, path, strings.Join(args, " "))
	start := time.Now()
	tmp := path + ".tmp"
	cmd := exec.Command("mmdebstrap", append(args, tmp)...)
	// mmdebstrap reports its progress on standard error. With
	// SOURCE_DATE_EPOCH, every time in the tarball is that one or older,
	// so that the same packages give the same bytes: the release's
	// kube-proxy image is made from one.
	cmd.Stdout, cmd.Stderr = w, w
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=0")
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("mmdebstrap %s: %w", strings.Join(args, " "), err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(w, "nodeimages: %-8s made        %s (%.1f MiB) in %s\n", name, path, float64(fi.Size())/(1<<20), time.Since(start).Round(time.Second))
	return path, nil
}

// tarballPath is where Tarball keeps what mmdebstrap makes
// with args.
func tarballPath(out, name string, args []string) string {
	key := fmt.Sprintf("%x", sha256.Sum256([]byte(strings.Join(args, "\x00"))))[:16]
	return filepath.Join(out, name+"-"+key+".tar")
}

// Suite is the Debian release the e2e images' root file system is
// made of.
const Suite = "bookworm"

// debianPackages are what the e2e images run beyond Debian's minbase, the
// union of what upstream's images hold: agnhost's tools (bash, curl, nc,
// ip, dig, iperf, ping, ps), nginx, perl, stress (resource-consumer),
// iptables (distroless-iptables); ipcmk and ipcs (ipc-utils) are in
// minbase's util-linux.
var debianPackages = []string{
	"bash", "bind9-dnsutils", "ca-certificates", "curl", "iperf", "iproute2", "iptables", "iputils-ping",
	"netcat-openbsd", "nginx-light", "perl", "procps", "stress",
}

// debianHooks run in the finished root file system ("$1"): sh is bash, as
// in upstream's agnhost (its Services specs' scripts are bash); agnhost's
// user and group defined in the image (the SupplementalGroups specs); nginx
// logs to the container's output, as the nginx image does.
var debianHooks = []string{
	`ln -sf bash "$1/bin/sh"`,
	`chroot "$1" groupadd -g 50000 group-defined-in-image`,
	`chroot "$1" useradd -u 1000 -U -G group-defined-in-image -m -s /bin/sh user-defined-in-image`,
	`ln -sf /dev/stdout "$1/var/log/nginx/access.log" && ln -sf /dev/stderr "$1/var/log/nginx/error.log"`,
}

// RootfsArgs are mmdebstrap's arguments for the e2e images' Debian root
// file system.
func RootfsArgs() []string {
	args := []string{"--variant=minbase", "--format=tar", "--include=" + strings.Join(debianPackages, ","),
		// Devices come from the runtime; documentation is not run.
		"--skip=output/dev",
		"--dpkgopt=path-exclude=/usr/share/man/*", "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-exclude=/usr/share/locale/*",
	}
	for _, h := range debianHooks {
		args = append(args, "--customize-hook="+h)
	}
	return append(args, Suite)
}

// RootfsPath is where the e2e images' root file system is kept in out.
func RootfsPath(out string) string { return tarballPath(out, "debian", RootfsArgs()) }

// busyboxArgs fetch Debian's busybox-static from trixie: busybox 1.37, the
// version of upstream's e2e image (busybox:1.37.0-1). Bookworm's 1.35 wget
// crashes on -T when it cannot connect, which e2e specs run.
var busyboxArgs = []string{"--variant=extract", "--include=busybox-static", "--format=tar", "--skip=output/dev", "trixie"}

// Busybox is the path of Debian's static busybox 1.37, taken out of
// busybox-static's package next to it in out.
func Busybox(w io.Writer, out string) (string, error) {
	tarball, err := Tarball(w, out, "busybox", busyboxArgs)
	if err != nil {
		return "", err
	}
	path := strings.TrimSuffix(tarball, ".tar") + ".tar.busybox"
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	data, err := TarFile(tarball, "usr/bin/busybox")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path+".tmp", data, 0o755); err != nil {
		return "", err
	}
	return path, os.Rename(path+".tmp", path)
}

// TarFile is the content of the regular file at name in a tarball.
func TarFile(tarball, name string) ([]byte, error) {
	f, err := os.Open(tarball)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := tar.NewReader(f)
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s has no %s", tarball, name)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tarball, err)
		}
		if strings.TrimPrefix(h.Name, "./") == name && h.Typeflag == tar.TypeReg {
			return io.ReadAll(r)
		}
	}
}
