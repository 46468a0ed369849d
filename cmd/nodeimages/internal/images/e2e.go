// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package images

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/cmd/nodeimages/internal/debian"
)

// nginxSite is the nginx image's one site, as upstream's default.conf: port
// 80, /usr/share/nginx/html (Debian's default site also listens on IPv6).
const nginxSite = `server {
	listen 80 default_server;
	server_name _;
	root /usr/share/nginx/html;
	index index.html;
	location / {
		try_files $uri $uri/ =404;
	}
}
`

// e2eBinaries are the Go binaries of the e2e images, which make e2e-images
// builds into -bin from test/images/go.mod's tool lines.
var e2eBinaries = []string{"agnhost", "coredns", "nnp", "sample-apiserver", "resource-consumer", "consume-cpu", "regression-issue-74839"}

// RunE2E writes the rest of the e2e framework's images into one archive in
// out, on a Debian root file system.
func RunE2E(w io.Writer, out, bin, kubernetes, busybox string) error {
	if kubernetes == "" {
		return fmt.Errorf("-kubernetes is required: the k8s.io/kubernetes module's directory")
	}
	if err := need(bin, e2eBinaries...); err != nil {
		return err
	}
	busyboxLayer, err := busyboxEntries(w, out, bin, busybox)
	if err != nil {
		return err
	}
	rootfs, err := debian.Tarball(w, out, "debian", debian.RootfsArgs())
	if err != nil {
		return err
	}
	osRelease, err := debian.TarFile(rootfs, "usr/lib/os-release")
	if err != nil {
		return err
	}
	return buildAll(w, out, e2eSpecs(bin, kubernetes, rootfs, busyboxLayer, osRelease))
}

// webserverOSRelease is /etc/os-release of the kitten and nautilus images:
// Debian's, and a comment saying what they stand in for. Upstream's are
// agnhost on Alpine Linux, and the ImageVolume conformance spec mounts
// kitten as a volume and looks for "Alpine Linux" in its os-release.
func webserverOSRelease(debian []byte) []byte {
	return append(slices.Clip(debian), "# Turnstile's stand-in for upstream's e2e image of the same name, which is built on Alpine Linux\n"...)
}

// e2eSpecs are oci.E2EImages, each as test/images/NAME/Dockerfile builds it,
// on the Debian root file system where upstream's is Debian or Alpine with
// packages, on the busybox layer where it is a bare Alpine with one binary.
func e2eSpecs(bin, kubernetes, rootfs string, busyboxLayer []oci.Entry, osRelease []byte) []spec {
	byName := map[string]oci.NodeImage{}
	for _, img := range oci.E2EImages() {
		byName[img.Name] = img
	}
	config := func(c oci.Config) oci.Config {
		c.Env, c.Created = []string{envPath}, created
		return c
	}
	images := filepath.Join(kubernetes, "test", "images")
	webserver := func(name string) spec {
		return spec{image: byName[name], rootfs: rootfs, layers: [][]oci.Entry{agnhostEntries(bin, kubernetes), {
			oci.FileFrom(name+".jpg", 0o644, filepath.Join(images, name, "html", name+".jpg")),
			oci.FileFrom("data.json", 0o644, filepath.Join(images, name, "html", "data.json")),
			oci.File("etc/os-release", 0o644, webserverOSRelease(osRelease)),
		}}, config: config(oci.Config{Entrypoint: agnhostConfig.Entrypoint, Cmd: []string{"test-webserver"}, ExposedPorts: []string{"80/tcp"}})}
	}
	binary := func(dest, name string) oci.Entry { return oci.FileFrom(dest, 0o755, filepath.Join(bin, name)) }
	specs := []spec{
		{image: byName["agnhost-debian"], rootfs: rootfs, layers: [][]oci.Entry{agnhostEntries(bin, kubernetes)}, config: agnhostConfig},
		webserver("kitten"),
		webserver("nautilus"),
		{image: byName["nginx"], rootfs: rootfs, layers: [][]oci.Entry{{oci.File("etc/nginx/sites-enabled/default", 0o644, []byte(nginxSite))}},
			config: config(oci.Config{Cmd: []string{"nginx", "-g", "daemon off;"}, ExposedPorts: []string{"80/tcp"}})},
		{image: byName["nonroot"], rootfs: rootfs, config: config(oci.Config{User: "1234"})},
		{image: byName["nonewprivs"], layers: [][]oci.Entry{busyboxLayer, {
			oci.FileFrom("usr/local/bin/nnp", 0o755|os.ModeSetuid, filepath.Join(bin, "nnp")),
		}}, config: config(oci.Config{Cmd: []string{"nnp"}})},
		// Upstream's adds CoreDNS 1.5.0 from GitHub; this one is ours.
		{image: byName["glibc-dns-testing"], rootfs: rootfs, layers: [][]oci.Entry{{binary("coredns", "coredns")}}, config: config(oci.Config{})},
		{image: byName["perl"], rootfs: rootfs, config: config(oci.Config{Cmd: []string{"perl", "-de0"}})},
		{image: byName["sample-apiserver"], layers: [][]oci.Entry{busyboxLayer, {binary("sample-apiserver", "sample-apiserver")}},
			config: config(oci.Config{Entrypoint: []string{"/sample-apiserver"}})},
		{image: byName["resource-consumer"], rootfs: rootfs, layers: [][]oci.Entry{{
			binary("consumer", "resource-consumer"),
			// The consumer runs ./consume-cpu/consume-cpu from /.
			binary("consume-cpu/consume-cpu", "consume-cpu"),
		}}, config: config(oci.Config{Entrypoint: []string{"/consumer"}, ExposedPorts: []string{"8080/tcp"}})},
		{image: byName["ipc-utils"], rootfs: rootfs, config: config(oci.Config{})},
		{image: byName["regression-issue-74839"], rootfs: rootfs, layers: [][]oci.Entry{{binary("regression-issue-74839", "regression-issue-74839")}},
			config: config(oci.Config{Entrypoint: []string{"/regression-issue-74839"}})},
	}
	// Upstream's e2e framework runs distroless-iptables until v1.38
	// (oci.E2EImages lists it on the lines that do).
	if img, ok := byName["distroless-iptables"]; ok {
		specs = append(specs, spec{image: img, rootfs: rootfs, config: config(oci.Config{})})
	}
	return specs
}
