// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package images

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/turnstile-k8s/turnstile/build/oci"
)

func TestConformanceImage(t *testing.T) {
	tmp := t.TempDir()
	bin, kube, out := filepath.Join(tmp, "bin"), filepath.Join(tmp, "kubernetes"), filepath.Join(tmp, "images")
	// The module cache's files are read-only; one script is executable.
	files := map[string]os.FileMode{
		filepath.Join(kube, "cluster", "README.md"):        0o444,
		filepath.Join(kube, "cluster", "addons", "a.yaml"): 0o444,
		filepath.Join(kube, "cluster", "gce", "util.sh"):   0o555,
		filepath.Join(kube, "test", "not-in-the-image.go"): 0o444,
		filepath.Join(bin, "unrelated-binary-in-bin"):      0o755,
	}
	for _, b := range conformanceBinaries {
		files[filepath.Join(bin, b)] = 0o755
	}
	for f, mode := range files {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(filepath.Base(f)), mode); err != nil {
			t.Fatal(err)
		}
	}
	fakeRootfs(t, out)

	entries, err := conformanceEntries(bin, kube)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		got[e.Path] = e.Mode.String() + " " + filepath.Base(e.Source)
	}
	want := map[string]string{
		"usr/local/bin/ginkgo":             "-rwxr-xr-x ginkgo",
		"usr/local/bin/e2e.test":           "-rwxr-xr-x e2e.test",
		"usr/local/bin/kubectl":            "-rwxr-xr-x kubectl",
		"usr/local/bin/kubeconformance":    "-rwxr-xr-x go-runner",
		"run_e2e.sh":                       "-rwxr-xr-x go-runner",
		"gorunner":                         "-rwxr-xr-x go-runner",
		"kubernetes/cluster":               "drwxr-xr-x .",
		"kubernetes/cluster/README.md":     "-rw-r--r-- README.md",
		"kubernetes/cluster/addons":        "drwxr-xr-x .",
		"kubernetes/cluster/addons/a.yaml": "-rw-r--r-- a.yaml",
		"kubernetes/cluster/gce":           "drwxr-xr-x .",
		"kubernetes/cluster/gce/util.sh":   "-rwxr-xr-x util.sh",
	}
	if len(got) != len(want) {
		t.Errorf("%d entries, want %d: %v", len(got), len(want), got)
	}
	for path, w := range want {
		if got[path] != w {
			t.Errorf("%s: %q, want %q", path, got[path], w)
		}
	}

	var buf bytes.Buffer
	if err := RunConformance(&buf, out, bin, kube, "v1.37.2"); err != nil {
		t.Fatal(err)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(filepath.Join(out, oci.ConformanceImageArchive)) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 {
		t.Fatalf("the archive holds %d images, want one", len(m))
	}
	tags := slices.Sorted(slices.Values(m[0].RepoTags))
	if want := []string{"registry.k8s.io/conformance-" + runtime.GOARCH + ":v1.37.2", "registry.k8s.io/conformance:v1.37.2"}; !slices.Equal(tags, want) {
		t.Errorf("the image's names %q, want upstream's %q", tags, want)
	}
	img, err := tarball.ImageFromPath(filepath.Join(out, oci.ConformanceImageArchive), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.Config.Entrypoint, " ") != "kubeconformance" || !strings.Contains(strings.Join(cfg.Config.Env, "\n"), "RESULTS_DIR=/tmp/results") {
		t.Errorf("config %+v, want upstream's entrypoint and environment", cfg.Config)
	}

	if err := os.Remove(filepath.Join(bin, "go-runner")); err != nil {
		t.Fatal(err)
	}
	if err := RunConformance(&buf, out, bin, kube, "v1.37.2"); err == nil || !strings.Contains(err.Error(), "go-runner") {
		t.Errorf("without go-runner: %v", err)
	}
	if err := RunConformance(&buf, out, bin, kube, ""); err == nil || !strings.Contains(err.Error(), "-kubernetes-version") {
		t.Errorf("without a version: %v", err)
	}
}
