// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package publish

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// bundleImage is one platform's image of an air-gap bundle.
type bundleImage struct {
	platform string
	digest   v1.Hash
	image    v1.Image
}

// bundlePrefix starts the name of each air-gap bundle among a release's
// files: airgap-images-<os>-<arch>.oci.tar.
const bundlePrefix = "airgap-images-"

// bundleImages reads the air-gap bundles among the release's files, each
// extracted under tmp, and groups their images by the name and tag kubeadm
// pulls with --image-repository <registry> (kube-controller-manager:v1.37.2:
// the last element of the bundle's repository path, and its tag), each
// with one image per platform.
func bundleImages(dir string, files []string, tmp string) (map[string][]bundleImage, error) {
	groups := map[string][]bundleImage{}
	for _, f := range files {
		if !strings.HasPrefix(f, bundlePrefix) || !strings.HasSuffix(f, ".oci.tar") {
			continue
		}
		osArch := strings.TrimSuffix(strings.TrimPrefix(f, bundlePrefix), ".oci.tar")
		goos, arch, ok := strings.Cut(osArch, "-")
		if !ok {
			return nil, fmt.Errorf("%s: not %s<os>-<arch>.oci.tar", f, bundlePrefix)
		}
		platform := goos + "/" + arch
		extracted := filepath.Join(tmp, osArch)
		if err := os.MkdirAll(extracted, 0o755); err != nil {
			return nil, err
		}
		l, m, err := readLayout(filepath.Join(dir, f), extracted)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, f), err)
		}
		for _, desc := range m.Manifests {
			ref := desc.Annotations["org.opencontainers.image.ref.name"]
			tag, err := name.NewTag(ref, name.StrictValidation)
			if err != nil {
				return nil, fmt.Errorf("%s: image %s is named %q, not NAME:TAG: %w", filepath.Join(dir, f), desc.Digest, ref, err)
			}
			img, err := l.Image(desc.Digest)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", filepath.Join(dir, f), ref, err)
			}
			cfg, err := img.ConfigFile()
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", filepath.Join(dir, f), ref, err)
			}
			if got := cfg.OS + "/" + cfg.Architecture; got != platform {
				return nil, fmt.Errorf("%s: %s is an image for %s, not %s", filepath.Join(dir, f), ref, got, platform)
			}
			key := path.Base(tag.RepositoryStr()) + ":" + tag.TagStr()
			groups[key] = append(groups[key], bundleImage{platform: platform, digest: desc.Digest, image: img})
		}
	}
	return groups, nil
}

// pushBundles pushes every image of the release's air-gap bundles under
// <registry>/<name>:<tag>, where kubeadm --image-repository <registry>
// pulls it: each platform's image by its digest, which the bundle's signed
// image list names, and an index of the platforms under the tag. The
// release's own tag of the kube-apiserver, which Run pushed as the
// release's index, is left as it is. It prints each digest on out.
func pushBundles(c Config, files []string, releaseTag string, out, progress io.Writer) ([]published, error) {
	tmp, err := os.MkdirTemp("", "publish-bundles-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	groups, err := bundleImages(c.Dir, files, tmp)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	var pushed []published
	for _, key := range keys {
		image, tagName, _ := strings.Cut(key, ":")
		if image == "kube-apiserver" && tagName == releaseTag {
			continue
		}
		repo, err := name.NewRepository(strings.TrimSuffix(c.Registry, "/") + "/" + image)
		if err != nil {
			return nil, fmt.Errorf("-registry %q: %w", c.Registry, err)
		}
		images := groups[key]
		slices.SortFunc(images, func(a, b bundleImage) int { return strings.Compare(a.platform, b.platform) })
		index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
		var platforms []published
		for _, bi := range images {
			ref := repo.Digest(bi.digest.String())
			if err := remote.Write(ref, bi.image, auth); err != nil {
				return nil, fmt.Errorf("pushing %s (%s, from the air-gap bundle): %w", ref, key, err)
			}
			goos, arch, _ := strings.Cut(bi.platform, "/")
			index = mutate.AppendManifests(index, mutate.IndexAddendum{
				Add:        bi.image,
				Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: goos, Architecture: arch}},
			})
			platforms = append(platforms, published{platform: bi.platform, ref: ref})
		}
		tag := repo.Tag(tagName)
		fmt.Fprintf(progress, "publish: pushing %s from the air-gap bundles (%d platforms)\n", tag, len(images))
		if err := remote.WriteIndex(tag, index, auth); err != nil {
			return nil, fmt.Errorf("pushing %s: %w", tag, err)
		}
		d, err := index.Digest()
		if err != nil {
			return nil, err
		}
		indexRef := repo.Digest(d.String())
		fmt.Fprintf(out, "%s\tbundle %s index %s\n", indexRef, key, tag)
		for _, p := range platforms {
			fmt.Fprintf(out, "%s\tbundle %s %s\n", p.ref, key, p.platform)
		}
		pushed = append(append(pushed, published{ref: indexRef}), platforms...)
	}
	return pushed, nil
}
