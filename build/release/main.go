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
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/build/sbom"
	"github.com/turnstile-k8s/turnstile/build/stamp"
)

func main() {
	var c config
	flag.StringVar(&c.dir, "dir", "_output/release", "the directory holding kube-apiserver-<os>-<arch>, and where the artifacts go")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list of the binaries")
	flag.StringVar(&c.ldflags, "ldflags", "", "the -ldflags the binaries were built with (hack/ldflags.sh turnstile): their version, commit and date")
	flag.StringVar(&c.repository, "repository", "turnstile-k8s", "image repository, as kubeadm's imageRepository")
	flag.StringVar(&c.source, "source", oci.DefaultSource, "the source repository's URL, for the image label and the SBOM")
	flag.BoolVar(&c.allowDirty, "allow-dirty", false, "release binaries built from a tree with uncommitted changes (not reproducible; for tests)")
	flag.StringVar(&c.kubectlPSPDir, "kubectl-psp-dir", "", "the directory holding kubectl-psp-<os>-<arch> for each of -kubectl-psp-platforms")
	kubectlPSP := flag.String("kubectl-psp-platforms", "", "comma-separated os/arch list of the kubectl-psp binaries to archive with their krew manifest; none: \"\"")
	flag.StringVar(&c.airgap, "airgap", "", "the directory where make airgap-images wrote each platform's images of kubeadm's but the kube-apiserver (airgap-images-<os>-<arch>.tar): write the air-gap bundles; none: \"\"")
	flag.BoolVar(&c.fips, "fips", false, "the binaries are kube-apiserver-fips-<os>-<arch>, built with GOFIPS140 (make release FIPS=1)")
	flag.Parse()
	c.platforms = strings.Split(*platforms, ",")
	if *kubectlPSP != "" {
		c.kubectlPSPPlatforms = strings.Split(*kubectlPSP, ",")
	}
	if err := run(c, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}

type config struct {
	dir, ldflags, repository, source string
	platforms                        []string
	allowDirty, fips                 bool
	// airgap, when set, holds build/nodeimages -airgap's archive of each
	// platform, from which the air-gap bundles are made (releaseAirGap).
	airgap string
	// kubectlPSPDir holds kubectl-psp-<os>-<arch> for each of
	// kubectlPSPPlatforms, which the release archives for krew.
	kubectlPSPDir       string
	kubectlPSPPlatforms []string
}

// binaryName is the name of the binary for goos/goarch.
func (c config) binaryName(goos, goarch string) string {
	if c.fips {
		return "kube-apiserver-fips-" + goos + "-" + goarch
	}
	return "kube-apiserver-" + goos + "-" + goarch
}

// command is the command that builds this kind of release, for its provenance.
func (c config) command() string {
	if c.fips {
		return "make release FIPS=1"
	}
	return "make release"
}

// artifact is a file of the release.
type artifact struct {
	name, platform, sha256 string
}

func run(c config, progress io.Writer) error {
	stamps, err := readBinaries(c)
	if err != nil {
		return err
	}
	first := stamps[0]
	meta := oci.Meta{Repository: c.repository, Version: first.Version, Source: c.source, Revision: first.Commit, Created: first.BuildDate}
	tag, err := meta.Tag()
	if err != nil {
		return err
	}
	var artifacts []artifact
	// add lists a file of the release and returns its checksum.
	add := func(name, platform string) (string, error) {
		sum, err := oci.FileSHA256(filepath.Join(c.dir, name))
		if err != nil {
			return "", err
		}
		artifacts = append(artifacts, artifact{name: name, platform: platform, sha256: sum})
		fmt.Fprintf(progress, "release: %s\n", filepath.Join(c.dir, name))
		return sum, nil
	}

	var images []v1.Image
	for _, s := range stamps {
		name := filepath.Base(s.Path)
		binarySum, err := add(name, s.Platform())
		if err != nil {
			return err
		}
		img, err := oci.Image(s.Path, s.OS, s.Arch, meta)
		if err != nil {
			return fmt.Errorf("%s: image: %w", name, err)
		}
		images = append(images, img)
		if c.airgap != "" {
			if err := releaseAirGap(c, s, img, tag, meta.Created, add); err != nil {
				return err
			}
		}
		archive := fmt.Sprintf("kube-apiserver-%s-%s-%s.tar", tag.TagStr(), s.OS, s.Arch)
		if _, err := oci.WriteDockerArchive(filepath.Join(c.dir, archive), tag, img); err != nil {
			return err
		}
		if _, err := add(archive, s.Platform()); err != nil {
			return err
		}
		doc := sbom.Document(sbom.Binary{Stamp: s, Name: name, SHA256: binarySum, Source: c.source})
		sbomName := name + ".spdx.json"
		if err := writeFile(filepath.Join(c.dir, sbomName), func(w io.Writer) error { return sbom.Write(w, doc) }); err != nil {
			return err
		}
		if _, err := add(sbomName, s.Platform()); err != nil {
			return err
		}
		st, err := provenanceStatement(s, name, binarySum, c.source, c.command())
		if err != nil {
			return err
		}
		provenanceName := name + ".provenance.json"
		if err := writeFile(filepath.Join(c.dir, provenanceName), func(w io.Writer) error { return writeStatement(w, st) }); err != nil {
			return err
		}
		if _, err := add(provenanceName, s.Platform()); err != nil {
			return err
		}
	}
	index := "kube-apiserver-" + tag.TagStr() + ".oci.tar"
	digest, err := oci.WriteIndexArchive(filepath.Join(c.dir, index), tag, meta.Created, images...)
	if err != nil {
		return err
	}
	if _, err := add(index, strings.Join(c.platforms, ", ")); err != nil {
		return err
	}

	if len(c.kubectlPSPPlatforms) > 0 {
		if err := releaseKubectlPSP(c, first.Version, meta.Created, add); err != nil {
			return err
		}
	}

	changes, since, err := changesSince(".", first.Commit)
	if err != nil {
		return err
	}
	notes := releaseNotes{stamp: first, platforms: c.platforms, tag: tag, repository: c.repository, digest: digest.String(), artifacts: artifacts, changes: changes, since: since}
	if err := writeFile(filepath.Join(c.dir, notesFile), notes.write); err != nil {
		return err
	}
	if _, err := add(notesFile, ""); err != nil {
		return err
	}

	slices.SortFunc(artifacts, func(a, b artifact) int { return strings.Compare(a.name, b.name) })
	return writeFile(filepath.Join(c.dir, "SHA256SUMS"), func(w io.Writer) error {
		for _, a := range artifacts {
			if _, err := fmt.Fprintf(w, "%s  %s\n", a.sha256, a.name); err != nil {
				return err
			}
		}
		fmt.Fprintf(progress, "release: %s (%d files)\n", filepath.Join(c.dir, "SHA256SUMS"), len(artifacts))
		return nil
	})
}

// readBinaries reads the stamp of each platform's binary and checks that
// they are one build: the platform their name says, one version and commit.
func readBinaries(c config) ([]*stamp.Stamp, error) {
	if len(c.platforms) == 0 || c.platforms[0] == "" {
		return nil, errors.New("-platforms is empty")
	}
	var stamps []*stamp.Stamp
	for _, p := range c.platforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok || goos == "" || goarch == "" {
			return nil, fmt.Errorf("-platforms: %q is not os/arch", p)
		}
		path := filepath.Join(c.dir, c.binaryName(goos, goarch))
		s, err := stamp.Read(path, c.ldflags)
		if err != nil {
			return nil, err
		}
		switch {
		case c.fips && s.FIPS140 == "":
			return nil, fmt.Errorf("%s was built without Go's FIPS 140-3 module (GOFIPS140): build it with make release FIPS=1", path)
		case !c.fips && s.FIPS140 != "":
			return nil, fmt.Errorf("%s was built with Go's FIPS 140-3 module (GOFIPS140=%s): release it with -fips (make release FIPS=1)", path, s.FIPS140)
		case c.fips && !strings.HasSuffix(s.Version, ".fips"):
			return nil, fmt.Errorf("%s is version %s: a FIPS build's version ends in .fips (hack/ldflags.sh with FIPS=1)", path, s.Version)
		}
		if s.Platform() != p {
			return nil, fmt.Errorf("%s was built for %s, not %s", path, s.Platform(), p)
		}
		if first := stamps; len(first) > 0 && (s.Version != first[0].Version || s.Commit != first[0].Commit) {
			return nil, fmt.Errorf("%s is %s at %s, but %s is %s at %s", path, s.Version, s.Commit, first[0].Path, first[0].Version, first[0].Commit)
		}
		if s.TreeState != "clean" && !c.allowDirty {
			return nil, fmt.Errorf("%s was built from a tree with uncommitted changes (gitTreeState %q): commit them, so that the release can be rebuilt from its commit", path, s.TreeState)
		}
		stamps = append(stamps, s)
	}
	return stamps, nil
}

// writeFile writes path through write, and fails if either fails.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
