// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package assemble writes a Turnstile release next to the kube-apiserver
// binaries make release cross-compiled: the images, SBOMs, provenance,
// air-gap bundles, kubectl-psp archives, notes and checksums cmd/release's
// doc lists.
package assemble

import (
	"errors"
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
	"github.com/turnstile-k8s/turnstile/cmd/release/internal/provenance"
)

type Config struct {
	Dir, LDFlags, Repository, Source string
	Platforms                        []string
	AllowDirty, FIPS                 bool
	// AirGap, when set, holds cmd/nodeimages -airgap's archive of each
	// platform, from which the air-gap bundles are made (releaseAirGap).
	AirGap string
	// KubectlPSPDir holds kubectl-psp-<os>-<arch> for each of
	// KubectlPSPPlatforms, which the release archives for krew.
	KubectlPSPDir       string
	KubectlPSPPlatforms []string
}

// binaryName is the name of the binary for goos/goarch.
func (c Config) binaryName(goos, goarch string) string {
	if c.FIPS {
		return "kube-apiserver-fips-" + goos + "-" + goarch
	}
	return "kube-apiserver-" + goos + "-" + goarch
}

// command is the command that builds this kind of release, for its provenance.
func (c Config) command() string {
	if c.FIPS {
		return "make release FIPS=1"
	}
	return "make release"
}

// artifact is a file of the release.
type artifact struct {
	name, platform, sha256 string
}

// Run writes the release of the binaries in c.Dir there, saying what it
// writes on progress.
func Run(c Config, progress io.Writer) error {
	stamps, err := readBinaries(c)
	if err != nil {
		return err
	}
	first := stamps[0]
	meta := oci.Meta{Repository: c.Repository, Version: first.Version, Source: c.Source, Revision: first.Commit, Created: first.BuildDate}
	tag, err := meta.Tag()
	if err != nil {
		return err
	}
	var artifacts []artifact
	// add lists a file of the release and returns its checksum.
	add := func(name, platform string) (string, error) {
		sum, err := oci.FileSHA256(filepath.Join(c.Dir, name))
		if err != nil {
			return "", err
		}
		artifacts = append(artifacts, artifact{name: name, platform: platform, sha256: sum})
		fmt.Fprintf(progress, "release: %s\n", filepath.Join(c.Dir, name))
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
		if c.AirGap != "" {
			if err := releaseAirGap(c, s, img, tag, meta.Created, add); err != nil {
				return err
			}
		}
		archive := fmt.Sprintf("kube-apiserver-%s-%s-%s.tar", tag.TagStr(), s.OS, s.Arch)
		if _, err := oci.WriteDockerArchive(filepath.Join(c.Dir, archive), tag, img); err != nil {
			return err
		}
		if _, err := add(archive, s.Platform()); err != nil {
			return err
		}
		doc := sbom.Document(sbom.Binary{Stamp: s, Name: name, SHA256: binarySum, Source: c.Source})
		sbomName := name + ".spdx.json"
		if err := writeFile(filepath.Join(c.Dir, sbomName), func(w io.Writer) error { return sbom.Write(w, doc) }); err != nil {
			return err
		}
		if _, err := add(sbomName, s.Platform()); err != nil {
			return err
		}
		st, err := provenance.New(s, name, binarySum, c.Source, c.command())
		if err != nil {
			return err
		}
		provenanceName := name + ".provenance.json"
		if err := writeFile(filepath.Join(c.Dir, provenanceName), func(w io.Writer) error { return provenance.Write(w, st) }); err != nil {
			return err
		}
		if _, err := add(provenanceName, s.Platform()); err != nil {
			return err
		}
	}
	index := "kube-apiserver-" + tag.TagStr() + ".oci.tar"
	digest, err := oci.WriteIndexArchive(filepath.Join(c.Dir, index), tag, meta.Created, images...)
	if err != nil {
		return err
	}
	if _, err := add(index, strings.Join(c.Platforms, ", ")); err != nil {
		return err
	}

	if len(c.KubectlPSPPlatforms) > 0 {
		if err := releaseKubectlPSP(c, first.Version, meta.Created, add); err != nil {
			return err
		}
	}

	changes, since, err := changesSince(".", first.Commit)
	if err != nil {
		return err
	}
	notes := releaseNotes{stamp: first, platforms: c.Platforms, tag: tag, repository: c.Repository, digest: digest.String(), artifacts: artifacts, changes: changes, since: since}
	if err := writeFile(filepath.Join(c.Dir, notesFile), notes.write); err != nil {
		return err
	}
	if _, err := add(notesFile, ""); err != nil {
		return err
	}

	slices.SortFunc(artifacts, func(a, b artifact) int { return strings.Compare(a.name, b.name) })
	return writeFile(filepath.Join(c.Dir, "SHA256SUMS"), func(w io.Writer) error {
		for _, a := range artifacts {
			if _, err := fmt.Fprintf(w, "%s  %s\n", a.sha256, a.name); err != nil {
				return err
			}
		}
		fmt.Fprintf(progress, "release: %s (%d files)\n", filepath.Join(c.Dir, "SHA256SUMS"), len(artifacts))
		return nil
	})
}

// readBinaries reads the stamp of each platform's binary and checks that
// they are one build: the platform their name says, one version and commit.
func readBinaries(c Config) ([]*stamp.Stamp, error) {
	if len(c.Platforms) == 0 || c.Platforms[0] == "" {
		return nil, errors.New("-platforms is empty")
	}
	var stamps []*stamp.Stamp
	for _, p := range c.Platforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok || goos == "" || goarch == "" {
			return nil, fmt.Errorf("-platforms: %q is not os/arch", p)
		}
		path := filepath.Join(c.Dir, c.binaryName(goos, goarch))
		s, err := stamp.Read(path, c.LDFlags)
		if err != nil {
			return nil, err
		}
		switch {
		case c.FIPS && s.FIPS140 == "":
			return nil, fmt.Errorf("%s was built without Go's FIPS 140-3 module (GOFIPS140): build it with make release FIPS=1", path)
		case !c.FIPS && s.FIPS140 != "":
			return nil, fmt.Errorf("%s was built with Go's FIPS 140-3 module (GOFIPS140=%s): release it with -fips (make release FIPS=1)", path, s.FIPS140)
		case c.FIPS && !strings.HasSuffix(s.Version, ".fips"):
			return nil, fmt.Errorf("%s is version %s: a FIPS build's version ends in .fips (hack/ldflags.sh with FIPS=1)", path, s.Version)
		}
		if s.Platform() != p {
			return nil, fmt.Errorf("%s was built for %s, not %s", path, s.Platform(), p)
		}
		if first := stamps; len(first) > 0 && (s.Version != first[0].Version || s.Commit != first[0].Commit) {
			return nil, fmt.Errorf("%s is %s at %s, but %s is %s at %s", path, s.Version, s.Commit, first[0].Path, first[0].Version, first[0].Commit)
		}
		if s.TreeState != "clean" && !c.AllowDirty {
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
