// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command release assembles a Turnstile release from the kube-apiserver
// binaries that `make release` cross-compiled into one directory, named
// kube-apiserver-<os>-<arch>. Next to them it writes:
//
//   - kube-apiserver-<tag>.oci.tar: an OCI image layout whose index lists
//     every platform, for `ctr images import` and Docker's containerd store;
//   - kube-apiserver-<tag>-<os>-<arch>.tar: each platform's image as a
//     docker-archive, for `docker load` on Docker's classic image store,
//     which cannot load an index;
//   - kube-apiserver-<os>-<arch>.spdx.json: each binary's SPDX SBOM;
//   - kube-apiserver-<os>-<arch>.provenance.json: each binary's SLSA v1
//     provenance, an in-toto statement (make publish attests it, with the
//     SBOM, to the image);
//   - RELEASE-NOTES.md: versions, artifacts and the commits since the
//     previous tag;
//   - airgap-images-<os>-<arch>.oci.tar and .txt, with -airgap: every
//     image a kubeadm control plane and node of the release needs, ours
//     the kube-apiserver, and their list (releaseAirGap);
//   - kubectl-psp-<os>-<arch>.tar.gz and psp.yaml, with -kubectl-psp-platforms:
//     the kubectl plugin for each desktop and the krew manifest that
//     installs it;
//   - SHA256SUMS over all of them, in the format of sha256sum -c.
//
// With -fips the binaries are kube-apiserver-fips-<os>-<arch>, built with
// Go's FIPS 140-3 module (make release FIPS=1), and the release says so in
// every name: the binaries', and through their version
// (v1.37.2+turnstile.1.fips), the images' tag. A binary built the other
// way is refused in either kind of release.
//
// Every artifact depends only on the binaries and the commit, so building
// a commit twice gives the same bytes.
//
// This file parses the flags; package assemble does the work.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/cmd/release/internal/assemble"
)

func main() {
	var c assemble.Config
	flag.StringVar(&c.Dir, "dir", "_output/release", "the directory holding kube-apiserver-<os>-<arch>, and where the artifacts go")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list of the binaries")
	flag.StringVar(&c.LDFlags, "ldflags", "", "the -ldflags the binaries were built with (hack/ldflags.sh turnstile): their version, commit and date")
	flag.StringVar(&c.Repository, "repository", "turnstile-k8s", "image repository, as kubeadm's imageRepository")
	flag.StringVar(&c.Source, "source", oci.DefaultSource, "the source repository's URL, for the image label and the SBOM")
	flag.BoolVar(&c.AllowDirty, "allow-dirty", false, "release binaries built from a tree with uncommitted changes (not reproducible; for tests)")
	flag.StringVar(&c.KubectlPSPDir, "kubectl-psp-dir", "", "the directory holding kubectl-psp-<os>-<arch> for each of -kubectl-psp-platforms")
	kubectlPSP := flag.String("kubectl-psp-platforms", "", "comma-separated os/arch list of the kubectl-psp binaries to archive with their krew manifest; none: \"\"")
	flag.StringVar(&c.AirGap, "airgap", "", "the directory where make airgap-images wrote each platform's images of kubeadm's but the kube-apiserver (airgap-images-<os>-<arch>.tar): write the air-gap bundles; none: \"\"")
	flag.BoolVar(&c.FIPS, "fips", false, "the binaries are kube-apiserver-fips-<os>-<arch>, built with GOFIPS140 (make release FIPS=1)")
	flag.Parse()
	c.Platforms = strings.Split(*platforms, ",")
	if *kubectlPSP != "" {
		c.KubectlPSPPlatforms = strings.Split(*kubectlPSP, ",")
	}
	if err := assemble.Run(c, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}
