// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command publish pushes a release that `make release` wrote to a
// registry, by digest, and signs and attests what it pushed with cosign:
//
//   - it checks the release's files against its SHA256SUMS, so that what
//     it pushes and attests is what the release lists;
//   - it pushes the multi-arch image index and both platform images from
//     the release's OCI layout (kube-apiserver-<tag>.oci.tar) as
//     <registry>/kube-apiserver:<tag>, with go-containerregistry (no
//     Docker), and prints every digest;
//   - it pushes every other image of the release's air-gap bundles where
//     kubeadm --image-repository <registry> pulls it, <registry>/<name>:<tag>:
//     each platform's image by the digest the bundle's image list names,
//     and an index of the platforms under the tag;
//   - with -key, it signs every image and index it pushed with cosign and
//     attaches, as signed in-toto attestations, the kube-apiserver's SLSA
//     v1 provenance and SPDX SBOM, each platform's to its image and to the index (so that
//     `cosign verify-attestation` on the tag finds them). No transparency
//     log and no signing configuration are asked for: the key is the
//     operator's, and a registry that reaches nothing else can hold it all.
//
// It lives in a module of its own with cosign, so that cosign's module
// graph stays out of the apiserver's.
//
// This file parses the flags; package publish does the work.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/turnstile-k8s/turnstile/cmd/publish/internal/publish"
)

func main() {
	var c publish.Config
	flag.StringVar(&c.Dir, "dir", "_output/release", "the release's directory, as make release wrote it")
	flag.StringVar(&c.Registry, "registry", "", "where to push: host[:port][/path]; the image is <registry>/kube-apiserver")
	flag.StringVar(&c.Key, "key", "", "a cosign private key (cosign generate-key-pair; its password in COSIGN_PASSWORD) to sign and attest with; none: push unsigned")
	flag.StringVar(&c.Cosign, "cosign", "cosign", "the cosign binary")
	flag.Parse()
	if err := publish.Run(c, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "publish: %v\n", err)
		os.Exit(1)
	}
}
