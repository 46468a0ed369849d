// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package assemble

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/distribution/reference"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/build/stamp"
)

// releaseAirGap writes the air-gap bundle of s's platform: every image
// kubeadm names for the release's Kubernetes version under the release's
// repository (oci.AirGapImages), in one OCI layout archive,
// airgap-images-<os>-<arch>.oci.tar, with the image list
// airgap-images-<os>-<arch>.txt, one NAME@DIGEST a line, both in
// SHA256SUMS. The kube-apiserver is apiserver, ours, under kubeadm's name
// and under the release's tag; the other six come from the archive make
// airgap-images built in c.AirGap (cmd/nodeimages -airgap), each checked
// to be there under kubeadm's name and for the platform.
func releaseAirGap(c Config, s *stamp.Stamp, apiserver v1.Image, tag name.Tag, created time.Time, add func(name, platform string) (string, error)) error {
	want, err := oci.AirGapImages(c.Repository, s.KubernetesVersion())
	if err != nil {
		return err
	}
	staged := filepath.Join(c.AirGap, oci.AirGapArchive(s.OS, s.Arch)+".tar")
	if _, err := os.Stat(staged); err != nil {
		return fmt.Errorf("the air-gap bundle's images: %w (make airgap-images builds them)", err)
	}
	open := func() (io.ReadCloser, error) { return os.Open(staged) }
	images := map[string]v1.Image{}
	var names []string
	for _, img := range want {
		ref := img.Tags[0]
		names = append(names, ref)
		if img.Name == "kube-apiserver" {
			images[ref] = apiserver
			continue
		}
		t, err := name.NewTag(ref, name.StrictValidation)
		if err != nil {
			return err
		}
		i, err := tarball.Image(open, &t)
		if err != nil {
			return fmt.Errorf("%s: %s: %w (make airgap-images builds it)", staged, ref, err)
		}
		cfg, err := i.ConfigFile()
		if err != nil {
			return fmt.Errorf("%s: %s: %w", staged, ref, err)
		}
		if cfg.OS != s.OS || cfg.Architecture != s.Arch {
			return fmt.Errorf("%s: %s is an image for %s/%s, not %s", staged, ref, cfg.OS, cfg.Architecture, s.Platform())
		}
		images[ref] = i
	}
	// Ours under the release's own tag too, the name make publish pushes.
	own, err := reference.ParseDockerRef(tag.String())
	if err != nil {
		return err
	}
	names = append(names, own.String())
	images[own.String()] = apiserver

	base := oci.AirGapArchive(s.OS, s.Arch)
	digests, err := oci.WriteImagesArchive(filepath.Join(c.Dir, base+".oci.tar"), created, names, images)
	if err != nil {
		return err
	}
	if _, err := add(base+".oci.tar", s.Platform()); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(c.Dir, base+".txt"), func(w io.Writer) error {
		for _, n := range names {
			if _, err := fmt.Fprintf(w, "%s@%s\n", n, digests[n]); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	_, err = add(base+".txt", s.Platform())
	return err
}
