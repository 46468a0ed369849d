package main

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/turnstile-k8s/turnstile/build/oci"
)

// debianSuite is the Debian release the e2e images' root file system is
// made of.
const debianSuite = "bookworm"

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

func runE2E(w io.Writer, out, bin, kubernetes, busybox, bash string) error {
	if kubernetes == "" {
		return fmt.Errorf("-kubernetes is required: the k8s.io/kubernetes module's directory")
	}
	if err := need(bin, e2eBinaries...); err != nil {
		return err
	}
	busyboxLayer, err := busyboxEntries(busybox, bash)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	rootfs, err := debianRootfs(w, out)
	if err != nil {
		return err
	}
	return buildAll(w, out, e2eSpecs(bin, kubernetes, rootfs, busyboxLayer))
}

// debianRootfs makes, or finds from an earlier run, the Debian root file
// system of the e2e images: out/debian-KEY.tar, KEY naming what mmdebstrap
// is asked for. Older ones are removed.
func debianRootfs(w io.Writer, out string) (string, error) {
	args := mmdebstrapArgs()
	path := debianRootfsPath(out)
	if _, err := os.Stat(path); err == nil {
		fmt.Fprintf(w, "nodeimages: debian   up to date  %s\n", path)
		return path, nil
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return "", fmt.Errorf("the e2e images' Debian root file system needs mmdebstrap (Debian's mmdebstrap package): %w", err)
	}
	old, err := filepath.Glob(filepath.Join(out, "debian-*.tar*"))
	if err != nil {
		return "", err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(w, "nodeimages: debian   making %s with mmdebstrap (%s and %s from Debian's mirror; a minute or two)\n", path, debianSuite, strings.Join(debianPackages, " "))
	start := time.Now()
	tmp := path + ".tmp"
	cmd := exec.Command("mmdebstrap", append(args, tmp)...)
	// mmdebstrap reports its progress on standard error.
	cmd.Stdout, cmd.Stderr = w, w
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
	fmt.Fprintf(w, "nodeimages: debian   made        %s (%.1f MiB) in %s\n", path, float64(fi.Size())/(1<<20), time.Since(start).Round(time.Second))
	return path, nil
}

// mmdebstrapArgs are mmdebstrap's arguments but the output file.
func mmdebstrapArgs() []string {
	args := []string{"--variant=minbase", "--format=tar", "--include=" + strings.Join(debianPackages, ","),
		// Devices come from the runtime; documentation is not run.
		"--skip=output/dev",
		"--dpkgopt=path-exclude=/usr/share/man/*", "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-exclude=/usr/share/locale/*",
	}
	for _, h := range debianHooks {
		args = append(args, "--customize-hook="+h)
	}
	return append(args, debianSuite)
}

// debianRootfsPath is where the root file system mmdebstrapArgs make is
// kept in out.
func debianRootfsPath(out string) string {
	key := fmt.Sprintf("%x", sha256.Sum256([]byte(strings.Join(mmdebstrapArgs(), "\x00"))))[:16]
	return filepath.Join(out, "debian-"+key+".tar")
}

// e2eSpecs are oci.E2EImages, each as test/images/NAME/Dockerfile builds it,
// on the Debian root file system where upstream's is Debian or Alpine with
// packages, on the busybox layer where it is a bare Alpine with one binary.
func e2eSpecs(bin, kubernetes, rootfs string, busyboxLayer []oci.Entry) []spec {
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
		}}, config: config(oci.Config{Entrypoint: agnhostConfig.Entrypoint, Cmd: []string{"test-webserver"}, ExposedPorts: []string{"80/tcp"}})}
	}
	binary := func(dest, name string) oci.Entry { return oci.FileFrom(dest, 0o755, filepath.Join(bin, name)) }
	return []spec{
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
		{image: byName["distroless-iptables"], rootfs: rootfs, config: config(oci.Config{})},
	}
}
