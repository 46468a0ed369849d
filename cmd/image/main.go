// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command image packs one static kube-apiserver into a FROM-scratch image,
// without a Docker daemon, as a docker-archive tarball that `docker load`
// and `ctr images import` read: `make image`, for the machine it runs on.
// `make release` builds the multi-architecture images (cmd/release).
//
// It prints the tarball's path and the image ID.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/build/stamp"
)

func main() {
	binary := flag.String("binary", "_output/bin/kube-apiserver", "the static kube-apiserver to pack")
	ldflags := flag.String("ldflags", "", "the -ldflags the binary was built with (hack/ldflags.sh turnstile): its version, commit and date")
	repository := flag.String("repository", "turnstile-k8s", "image repository, as kubeadm's imageRepository")
	outDir := flag.String("out", "_output/images", "directory for the tarball")
	source := flag.String("source", oci.DefaultSource, "org.opencontainers.image.source")
	flag.Parse()
	if err := run(*binary, *ldflags, *repository, *outDir, *source); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func run(binary, ldflags, repository, outDir, source string) error {
	s, err := stamp.Read(binary, ldflags)
	if err != nil {
		return err
	}
	meta := oci.Meta{Repository: repository, Version: s.Version, Source: source, Revision: s.Commit, Created: s.BuildDate}
	tag, err := meta.Tag()
	if err != nil {
		return err
	}
	img, err := oci.Image(binary, s.OS, s.Arch, meta)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(outDir, "kube-apiserver-"+tag.TagStr()+".tar")
	id, err := oci.WriteDockerArchive(path, tag, img)
	if err != nil {
		return err
	}
	fmt.Printf("%s\n%s\n", path, id)
	return nil
}
