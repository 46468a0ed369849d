// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// `make image` output, read the way `docker load` reads it: manifest.json
// names the config and the layers; the config's diff IDs are the digests
// of the uncompressed layers; the layer holds a binary that runs. The
// labels carry the commit and date that hack/ldflags.sh stamped.
func TestImage(t *testing.T) {
	t.Parallel() // long and independent of the others: see "Running in parallel" in README.md
	tool, err := framework.Binary("image")
	if err != nil {
		t.Fatal(err)
	}
	apiserver, err := framework.Binary("kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(runBinary(t, "kube-apiserver", "--version"))
	version := strings.TrimPrefix(want, "Kubernetes ")
	tag := strings.ReplaceAll(version, "+", "_")
	const ldflags = "-X k8s.io/component-base/version.gitVersion=v1.36.3+turnstile.1 -X k8s.io/component-base/version.gitCommit=0123456789abcdef0123456789abcdef01234567" +
		" -X k8s.io/component-base/version.buildDate=2026-01-01T00:00:00Z"

	build := func(dir string) (path, id string) {
		out, err := exec.Command(tool, "-binary", apiserver, "-ldflags", strings.ReplaceAll(ldflags, "v1.36.3+turnstile.1", version),
			"-out", dir, "-repository", "example.test/turnstile").CombinedOutput()
		if err != nil {
			t.Fatalf("image: %v\n%s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return lines[0], lines[1]
	}
	path, id := build(t.TempDir())
	if filepath.Base(path) != "kube-apiserver-"+tag+".tar" {
		t.Errorf("tarball %s, want kube-apiserver-%s.tar", path, tag)
	}
	again, againID := build(t.TempDir())
	if id != againID || !sameFile(t, path, again) {
		t.Errorf("two builds differ: %s and %s", id, againID)
	}
	t.Logf("image %s, ID %s", filepath.Base(path), id)

	files := untar(t, path)
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if manifest[0].Config != id {
		t.Errorf("manifest.json names config %s, the tool reported image ID %s", manifest[0].Config, id)
	}
	if len(manifest) != 1 || len(manifest[0].Layers) != 1 || len(manifest[0].RepoTags) != 1 ||
		manifest[0].RepoTags[0] != "example.test/turnstile/kube-apiserver:"+tag {
		t.Fatalf("manifest.json: %+v", manifest)
	}
	var config struct {
		Architecture, OS string
		Config           struct {
			Entrypoint []string
			Labels     map[string]string
		}
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		}
	}
	if err := json.Unmarshal(files[manifest[0].Config], &config); err != nil {
		t.Fatalf("config %s: %v", manifest[0].Config, err)
	}
	if config.Architecture != "amd64" || config.OS != "linux" || strings.Join(config.Config.Entrypoint, " ") != "/usr/local/bin/kube-apiserver" {
		t.Errorf("config: %+v", config)
	}
	for label, value := range map[string]string{
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": "0123456789abcdef0123456789abcdef01234567",
		"org.opencontainers.image.source":   "https://github.com/turnstile-k8s/turnstile",
		"org.opencontainers.image.created":  "2026-01-01T00:00:00Z",
	} {
		if config.Config.Labels[label] != value {
			t.Errorf("label %s = %q, want %q", label, config.Config.Labels[label], value)
		}
	}

	gz, err := gzip.NewReader(bytes.NewReader(files[manifest[0].Layers[0]]))
	if err != nil {
		t.Fatalf("layer: %v", err)
	}
	layer, err := io.ReadAll(gz)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(layer)
	if len(config.RootFS.DiffIDs) != 1 || config.RootFS.DiffIDs[0] != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("diff_ids %v do not match the layer's sha256:%x", config.RootFS.DiffIDs, sum)
	}
	inLayer := untarBytes(t, layer)
	binary, ok := inLayer["usr/local/bin/kube-apiserver"]
	if !ok {
		t.Fatalf("layer has no usr/local/bin/kube-apiserver: %v", keys(inLayer))
	}
	extracted := filepath.Join(t.TempDir(), "kube-apiserver")
	if err := os.WriteFile(extracted, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(extracted, "--version").Output()
	if err != nil || strings.TrimSpace(string(out)) != want {
		t.Errorf("extracted binary --version: %q, %v; want %q", out, err, want)
	}
}

func untar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return untarBytes(t, data)
}

func untarBytes(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("tar: %v", err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = b
		}
	}
}

func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	da, errA := os.ReadFile(a)
	db, errB := os.ReadFile(b)
	return errA == nil && errB == nil && bytes.Equal(da, db)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
