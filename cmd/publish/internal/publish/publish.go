// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package publish pushes a release's images by digest and, with a key,
// signs and attests them with cosign: what cmd/publish's doc says.
package publish

import (
	"archive/tar"
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Config is cmd/publish's flags: the release's directory, the registry,
// the cosign key (none: push unsigned) and the cosign binary.
type Config struct {
	Dir, Registry, Key, Cosign string
}

// published is an image that publish pushed: the index, or one platform's.
type published struct {
	platform string // "" for the index
	ref      name.Digest
}

// Run checks the release in c.Dir against its SHA256SUMS, pushes its
// images to c.Registry by digest, printing the digests on out, and with
// c.Key signs and attests them.
func Run(c Config, out, progress io.Writer) error {
	if c.Registry == "" {
		return errors.New("-registry is empty: say where to push (make publish REGISTRY=host:port/path)")
	}
	repo, err := name.NewRepository(strings.TrimSuffix(c.Registry, "/") + "/kube-apiserver")
	if err != nil {
		return fmt.Errorf("-registry %q: %w", c.Registry, err)
	}
	sums, err := checkSums(c.Dir)
	if err != nil {
		return err
	}
	archive, err := layoutArchive(c.Dir, sums)
	if err != nil {
		return err
	}
	// The index's blobs are read while they are pushed, from here.
	layoutDir, err := os.MkdirTemp("", "publish-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(layoutDir)
	index, tag, err := readIndex(filepath.Join(c.Dir, archive), layoutDir)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(c.Dir, archive), err)
	}

	ref := repo.Tag(tag)
	fmt.Fprintf(progress, "publish: pushing %s to %s\n", archive, ref)
	updates := make(chan v1.Update, 64)
	reported := make(chan struct{})
	go func() { defer close(reported); reportProgress(progress, updates, 2*time.Second) }()
	err = remote.WriteIndex(ref, index, remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithProgress(updates))
	<-reported // WriteIndex closes updates when it returns
	if err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	images, err := digests(repo, index)
	if err != nil {
		return err
	}
	for _, img := range images {
		what := "index " + ref.String()
		if img.platform != "" {
			what = img.platform
		}
		fmt.Fprintf(out, "%s\t%s\n", img.ref, what)
	}

	bundled, err := pushBundles(c, sums, tag, out, progress)
	if err != nil {
		return err
	}

	if c.Key == "" {
		fmt.Fprintf(progress, "publish: not signed: no -key (make publish RELEASE_SIGNING_KEY=cosign.key)\n")
		return nil
	}
	if err := signAndAttest(c, images, sums); err != nil {
		return err
	}
	// The bundles' other images have no provenance or SBOM of ours to
	// attest: each is signed, by digest.
	for _, img := range bundled {
		if err := cosign(c.Cosign, append(append([]string{"sign"}, offlineSigning(c.Key)...), img.ref.String())...); err != nil {
			return err
		}
	}
	return nil
}

// offlineSigning is cosign's signing flags with key and nothing asked of
// a transparency log or a signing configuration.
func offlineSigning(key string) []string {
	return []string{"--key", key, "--tlog-upload=false", "--use-signing-config=false", "--yes"}
}

// reportProgress prints how much of the push is done at most once per
// interval, and when it ends, until updates is closed.
func reportProgress(w io.Writer, updates <-chan v1.Update, interval time.Duration) {
	var last v1.Update
	var printed time.Time
	for u := range updates {
		if u.Error != nil {
			continue // WriteIndex returns it
		}
		last = u
		if time.Since(printed) >= interval {
			printed = time.Now()
			fmt.Fprintf(w, "publish: %.1f of %.1f MiB sent\n", float64(u.Complete)/(1<<20), float64(u.Total)/(1<<20))
		}
	}
	if last.Total > 0 {
		fmt.Fprintf(w, "publish: %.1f of %.1f MiB sent\n", float64(last.Complete)/(1<<20), float64(last.Total)/(1<<20))
	}
}

// digests names the index and each of its platform images by digest in repo.
func digests(repo name.Repository, index v1.ImageIndex) ([]published, error) {
	d, err := index.Digest()
	if err != nil {
		return nil, err
	}
	images := []published{{ref: repo.Digest(d.String())}}
	m, err := index.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, desc := range m.Manifests {
		if desc.Platform == nil {
			return nil, fmt.Errorf("the index's manifest %s names no platform", desc.Digest)
		}
		images = append(images, published{platform: desc.Platform.OS + "/" + desc.Platform.Architecture, ref: repo.Digest(desc.Digest.String())})
	}
	return images, nil
}

// signAndAttest signs every image and attests each platform's provenance
// and SBOM to its image and to the index.
func signAndAttest(c Config, images []published, files []string) error {
	offline := offlineSigning(c.Key)
	predicates, err := os.MkdirTemp("", "publish-predicates-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(predicates)
	index := images[0]
	for _, img := range images {
		if err := cosign(c.Cosign, append(append([]string{"sign"}, offline...), img.ref.String())...); err != nil {
			return err
		}
		if img.platform == "" {
			continue
		}
		binary, err := binaryOf(files, img.platform)
		if err != nil {
			return err
		}
		provenance, err := predicateOf(filepath.Join(c.Dir, binary+".provenance.json"), predicates)
		if err != nil {
			return err
		}
		for _, a := range []struct{ kind, predicate string }{
			{"slsaprovenance1", provenance},
			{"spdxjson", filepath.Join(c.Dir, binary+".spdx.json")},
		} {
			for _, target := range []name.Digest{img.ref, index.ref} {
				args := append([]string{"attest", "--type", a.kind, "--predicate", a.predicate}, offline...)
				if err := cosign(c.Cosign, append(args, target.String())...); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// binaryOf is the release's binary for platform among its files:
// kube-apiserver-<os>-<arch>, or kube-apiserver-fips-<os>-<arch> in a FIPS
// release. Its SBOM and provenance are named after it.
func binaryOf(files []string, platform string) (string, error) {
	suffix := "-" + strings.ReplaceAll(platform, "/", "-")
	for _, name := range []string{"kube-apiserver" + suffix, "kube-apiserver-fips" + suffix} {
		if slices.Contains(files, name) {
			return name, nil
		}
	}
	return "", fmt.Errorf("SHA256SUMS lists no kube-apiserver binary for %s, which the image index has", platform)
}

// predicateOf writes the predicate of the in-toto statement at path, which
// is what cosign attest --predicate takes, into dir, and returns its path.
func predicateOf(path, dir string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var st struct {
		PredicateType string          `json:"predicateType"`
		Predicate     json.RawMessage `json:"predicate"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if st.PredicateType != "https://slsa.dev/provenance/v1" || len(st.Predicate) == 0 {
		return "", fmt.Errorf("%s: predicateType %q: want an SLSA v1 provenance statement (make release writes it)", path, st.PredicateType)
	}
	out := filepath.Join(dir, filepath.Base(path))
	return out, os.WriteFile(out, st.Predicate, 0o644)
}

// cosign runs the cosign binary with args, its output to ours.
func cosign(bin string, args ...string) error {
	fmt.Fprintf(os.Stderr, "publish: cosign %s\n", strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("cosign %s: %w", args[0], err)
	}
	return nil
}

// checkSums checks every file SHA256SUMS in dir lists and returns the
// listed names.
func checkSums(dir string) ([]string, error) {
	path := filepath.Join(dir, "SHA256SUMS")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w (run make release first)", err)
	}
	defer f.Close()
	var names []string
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		want, file, ok := strings.Cut(s.Text(), "  ")
		if !ok || len(want) != 64 || strings.ContainsAny(file, "/\\") {
			return nil, fmt.Errorf("%s:%d: %q is not \"<sha256>  <file>\"", path, n, s.Text())
		}
		got, err := fileSHA256(filepath.Join(dir, file))
		if err != nil {
			return nil, err
		}
		if got != want {
			return nil, fmt.Errorf("%s: sha256 %s, but %s lists %s: the release changed after make release wrote it", filepath.Join(dir, file), got, path, want)
		}
		names = append(names, file)
	}
	return names, s.Err()
}

// fileSHA256 is a file's SHA-256, hex-encoded: build/oci.FileSHA256 again,
// because this module does not import the main one, whose graph is
// Kubernetes'.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// layoutArchive is the one OCI layout archive among the release's files.
func layoutArchive(dir string, files []string) (string, error) {
	var found []string
	for _, f := range files {
		if strings.HasPrefix(f, "kube-apiserver-") && strings.HasSuffix(f, ".oci.tar") {
			found = append(found, f)
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("%s: SHA256SUMS lists %d kube-apiserver-<tag>.oci.tar archives (%s), want one", dir, len(found), strings.Join(found, ", "))
	}
	return found[0], nil
}

// readLayout extracts the OCI layout archive at path into dir and reads
// its index.json, the layout's root index.
func readLayout(path, dir string) (v1.ImageIndex, *v1.IndexManifest, error) {
	if err := untar(path, dir); err != nil {
		return nil, nil, err
	}
	l, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, nil, err
	}
	m, err := l.IndexManifest()
	return l, m, err
}

// readIndex extracts the OCI layout archive at path into dir and reads
// the image index it holds, and the tag its annotation names.
func readIndex(path, dir string) (v1.ImageIndex, string, error) {
	l, m, err := readLayout(path, dir)
	if err != nil {
		return nil, "", err
	}
	if len(m.Manifests) != 1 {
		return nil, "", fmt.Errorf("index.json lists %d manifests, want the one image index make release writes", len(m.Manifests))
	}
	desc := m.Manifests[0]
	tag := desc.Annotations["org.opencontainers.image.ref.name"]
	if tag == "" {
		return nil, "", errors.New("index.json's image index has no org.opencontainers.image.ref.name annotation (its tag)")
	}
	index, err := l.ImageIndex(desc.Digest)
	if err != nil {
		return nil, "", err
	}
	return index, tag, nil
}

// untar extracts the regular files and directories of the tarball at path
// into dir, refusing any name that would leave it.
func untar(path, dir string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, h.Name)
		if !strings.HasPrefix(target, dir+string(filepath.Separator)) {
			return fmt.Errorf("%q leaves the layout's directory", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			w, err := os.Create(target)
			if err != nil {
				return err
			}
			_, err = io.Copy(w, tr)
			if closeErr := w.Close(); err == nil {
				err = closeErr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("%q: not a file or a directory", h.Name)
		}
	}
}
