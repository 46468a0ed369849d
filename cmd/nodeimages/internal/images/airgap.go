// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package images

import (
	"debug/elf"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/cmd/nodeimages/internal/debian"
)

// RunAirGap writes, for make release's air-gap bundle of platform
// (linux/arm64), every image kubeadm names for a cluster of version whose
// imageRepository is repository (oci.AirGapImages) but the kube-apiserver,
// which is ours and which cmd/release adds: one docker-archive,
// out/<oci.AirGapArchive>.tar. bin holds the platform's
// kube-controller-manager, kube-scheduler, kube-proxy, etcd, coredns and
// pause; each is checked to be a static binary of the platform's
// architecture, so that a binary of the wrong platform is refused here and
// not found on a node.
func RunAirGap(w io.Writer, out, bin, platform, repository, version string) error {
	goos, arch, ok := strings.Cut(platform, "/")
	if !ok || goos != "linux" {
		return fmt.Errorf("-platform %q: want linux/ARCH", platform)
	}
	machine, ok := elfMachines[arch]
	if !ok {
		return fmt.Errorf("-platform %q: the air-gap bundle is built for linux/amd64 and linux/arm64", platform)
	}
	if version == "" {
		return fmt.Errorf("-airgap needs -kubernetes-version, the release's (v1.37.2)")
	}
	images, err := oci.AirGapImages(repository, version)
	if err != nil {
		return err
	}
	tarball := oci.AirGapArchive(goos, arch) + ".tar"
	var specs []spec
	for _, img := range images {
		img.Tarball = tarball
		if img.Name == "kube-apiserver" {
			continue
		}
		binary := filepath.Join(bin, img.Name)
		if err := platformBinary(binary, machine); err != nil {
			return err
		}
		switch img.Name {
		case "pause":
			specs = append(specs, pauseSpec(img, bin, arch))
		case "coredns":
			specs = append(specs, corednsSpec(img, bin, arch))
		case "kube-proxy":
			rootfs, err := debian.Tarball(w, out, "kube-proxy-"+arch, kubeProxyRootfsArgs(arch))
			if err != nil {
				return err
			}
			s := binarySpec(img, binary, arch)
			s.rootfs = rootfs
			s.layers[0] = append(s.layers[0], iptablesNFT()...)
			specs = append(specs, s)
		default:
			specs = append(specs, binarySpec(img, binary, arch))
		}
	}
	return buildAll(w, out, specs)
}

// elfMachines are the ELF machines of the platforms' binaries.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// platformBinary checks that path is a static binary for machine.
func platformBinary(path string, machine elf.Machine) error {
	if err := static(path, "the release builds it with CGO_ENABLED=0, or static with gcc for pause"); err != nil {
		return err
	}
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Machine != machine {
		return fmt.Errorf("%s is a binary for %s, not %s", path, f.Machine, machine)
	}
	return nil
}

// kubeProxyRootfsArgs are mmdebstrap's arguments for the root file system
// under kube-proxy, as upstream's distroless-iptables image is under
// theirs: Debian's iptables and nftables with their libraries, for arch.
// extract unpacks the packages without running anything of them, so a
// foreign architecture needs no emulator, and nothing else is installed:
// no shell, no package manager.
func kubeProxyRootfsArgs(arch string) []string {
	return []string{"--variant=extract", "--arch=" + arch, "--include=iptables,nftables", "--format=tar", "--skip=output/dev",
		"--dpkgopt=path-exclude=/usr/share/man/*", "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-exclude=/usr/share/locale/*",
		debian.Suite}
}

// iptablesNFT are the commands kube-proxy runs (iptables, ip6tables and
// their -save and -restore), as Debian's alternatives make them when the
// package is installed, which extract does not do: the nf_tables backend,
// Debian's default and what the kernel's nftables rules share.
func iptablesNFT() []oci.Entry {
	var entries []oci.Entry
	for _, family := range []string{"iptables", "ip6tables"} {
		for _, suffix := range []string{"", "-save", "-restore"} {
			entries = append(entries, oci.Symlink("usr/sbin/"+family+suffix, "xtables-nft-multi"))
		}
	}
	return entries
}
