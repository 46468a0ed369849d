// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// krewPlugin is the part of a krew plugin manifest that the test checks.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version   string `json:"version"`
		Platforms []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			Sha256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// checkKubectlPSPRelease checks the release's kubectl-psp archives and krew
// manifest: a platform for each archive, with the archive's checksum and
// its URI under the release's version, each archive holding the binary
// alone; then, where make test-release built krew, the real krew installs
// kubectl-psp from the manifest and this machine's archive into a scratch
// KREW_ROOT, kubectl runs it as `kubectl psp`, and krew refuses an archive
// with a byte changed.
func checkKubectlPSPRelease(t *testing.T, dir, version string, sums map[string]string) {
	data, err := os.ReadFile(filepath.Join(dir, "psp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m krewPlugin
	if err := yaml.Unmarshal(data, &m); err != nil { // the fields checked here; krew validates the rest
		t.Fatalf("psp.yaml: %v", err)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "psp" || m.Spec.Version != version {
		t.Errorf("psp.yaml is %s %s %q at %q, want a krew v1alpha2 Plugin psp at %s", m.APIVersion, m.Kind, m.Metadata.Name, m.Spec.Version, version)
	}
	var platforms []string
	for _, p := range m.Spec.Platforms {
		goos, goarch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		platforms = append(platforms, goos+"/"+goarch)
		archive := "kubectl-psp-" + goos + "-" + goarch + ".tar.gz"
		if p.Sha256 != sums[archive] {
			t.Errorf("psp.yaml: %s/%s has sha256 %s, SHA256SUMS %s", goos, goarch, p.Sha256, sums[archive])
		}
		if want := "/releases/download/" + url.PathEscape(version) + "/" + archive; !strings.HasSuffix(p.URI, want) {
			t.Errorf("psp.yaml: %s/%s uri %s, want it to end in %s", goos, goarch, p.URI, want)
		}
		bin := "kubectl-psp"
		if goos == "windows" {
			bin += ".exe"
		}
		if p.Bin != bin {
			t.Errorf("psp.yaml: %s/%s bin %q, want %q", goos, goarch, p.Bin, bin)
		}
		if names := tarGzNames(t, filepath.Join(dir, archive)); !slices.Equal(names, []string{bin}) {
			t.Errorf("%s holds %v, want %s alone", archive, names, bin)
		}
	}
	if !slices.Equal(platforms, releaseKubectlPSPPlatforms) {
		t.Errorf("psp.yaml's platforms are %v, want %v", platforms, releaseKubectlPSPPlatforms)
	}

	t.Run("krew installs it", func(t *testing.T) {
		krew, err := framework.Binary("krew")
		if err != nil {
			t.Skipf("krew is not built (make test-release builds it from test/krew's module): %v", err)
		}
		archive := filepath.Join(dir, "kubectl-psp-"+runtime.GOOS+"-"+runtime.GOARCH+".tar.gz")
		root := t.TempDir()
		install := func(archive string) (string, error) {
			cmd := exec.Command(krew, "install", "--manifest="+filepath.Join(dir, "psp.yaml"), "--archive="+archive)
			// No upgrade check (it would ask GitHub) and no index: krew
			// reads none for --manifest.
			cmd.Env = append(os.Environ(), "KREW_ROOT="+root, "KREW_NO_UPGRADE_CHECK=1", "HOME="+root)
			out, err := cmd.CombinedOutput()
			return string(out), err
		}

		planted := filepath.Join(t.TempDir(), filepath.Base(archive))
		data, err := os.ReadFile(archive)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)/2] ^= 0xff
		if err := os.WriteFile(planted, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := install(planted); err == nil || !strings.Contains(out, "checksum does not match") {
			t.Errorf("krew installed an archive with a byte changed: %v\n%s", err, out)
		}

		if out, err := install(archive); err != nil {
			t.Fatalf("krew install: %v\n%s", err, out)
		}
		kubectl, err := framework.Binary("kubectl")
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(kubectl, "psp", "--help")
		cmd.Env = append(os.Environ(), "PATH="+filepath.Join(root, "bin"))
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Leave PodSecurityPolicy") {
			t.Errorf("kubectl psp --help after krew install: %v\n%s", err, out)
		}
	})
}

// tarGzNames lists the entries of a .tar.gz.
func tarGzNames(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		names = append(names, h.Name)
	}
}
