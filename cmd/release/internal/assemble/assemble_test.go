// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package assemble

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/turnstile-k8s/turnstile/build/oci"
)

const ldflags = "-X k8s.io/component-base/version.gitVersion=v1.36.3+turnstile.1 -X k8s.io/component-base/version.gitCommit=abc" +
	" -X k8s.io/component-base/version.gitTreeState=%s -X k8s.io/component-base/version.buildDate=2026-11-01T10:00:00Z"

// The test binary stands in for kube-apiserver: a Go binary for this
// machine's platform.
func binaryDir(t *testing.T, names ...string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestReadBinaries(t *testing.T) {
	here := runtime.GOOS + "/" + runtime.GOARCH
	other := "linux/riscv64"
	name := func(p string) string { return "kube-apiserver-" + strings.ReplaceAll(p, "/", "-") }
	for _, tc := range []struct {
		name      string
		files     []string
		platforms []string
		tree      string
		dirty     bool
		fips      bool
		want      string // "" for success
	}{
		{"clean", []string{name(here)}, []string{here}, "clean", false, false, ""},
		{"dirty allowed", []string{name(here)}, []string{here}, "dirty", true, false, ""},
		{"dirty", []string{name(here)}, []string{here}, "dirty", false, false, `built from a tree with uncommitted changes (gitTreeState "dirty")`},
		{"missing binary", nil, []string{here}, "clean", false, false, "no such file"},
		{"built for another platform", []string{name(other)}, []string{other}, "clean", false, false, "was built for " + here + ", not " + other},
		{"not os/arch", nil, []string{"amd64"}, "clean", false, false, `-platforms: "amd64" is not os/arch`},
		{"no platforms", nil, []string{""}, "clean", false, false, "-platforms is empty"},
		// A FIPS release wants kube-apiserver-fips-<os>-<arch>, built
		// with the module (the e2e TestReleaseFIPS releases one; the
		// test binary is built without it).
		{"FIPS name missing", []string{name(here)}, []string{here}, "clean", false, true, "kube-apiserver-fips-"},
		{"FIPS release of a plain build", []string{strings.Replace(name(here), "kube-apiserver-", "kube-apiserver-fips-", 1)}, []string{here}, "clean", false, true,
			"was built without Go's FIPS 140-3 module (GOFIPS140)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Dir: binaryDir(t, tc.files...), Platforms: tc.platforms, LDFlags: strings.ReplaceAll(ldflags, "%s", tc.tree), AllowDirty: tc.dirty, FIPS: tc.fips}
			stamps, err := readBinaries(c)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.want == "" && (len(stamps) != 1 || stamps[0].Version != "v1.36.3+turnstile.1"):
				t.Errorf("stamps %+v", stamps)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// The notes list the commits since the previous tag: every commit when there
// is none, and not the tag's own commits when the release commit is tagged.
func TestChangesSince(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.test", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	commit := func(subject string) string {
		git("commit", "-q", "--allow-empty", "-m", subject)
		return git("rev-parse", "HEAD")
	}
	subjects := func(changes []string) []string {
		var out []string
		for _, c := range changes {
			out = append(out, strings.SplitN(c, " ", 2)[1])
		}
		return out
	}
	git("init", "-q")
	commit("first")
	second := commit("second")
	check := func(at, wantSince string, want ...string) {
		t.Helper()
		changes, since, err := changesSince(repo, at)
		if err != nil {
			t.Fatal(err)
		}
		if since != wantSince || !slices.Equal(subjects(changes), want) {
			t.Errorf("changesSince(%s) = %v since %q, want %v since %q", at, subjects(changes), since, want, wantSince)
		}
	}
	check(second, "", "second", "first")
	git("tag", "v1.36.3+turnstile.1")
	check(second, "", "second", "first") // the release's own tag, on the root's child; no earlier tag
	third := commit("third")
	fourth := commit("fourth")
	check(fourth, "v1.36.3+turnstile.1", "fourth", "third")
	git("tag", "v1.36.3+turnstile.2", third)
	check(third, "v1.36.3+turnstile.1", "third")
	check(fourth, "v1.36.3+turnstile.2", "fourth")

	if _, _, err := changesSince(repo, strings.Repeat("0", 40)); err == nil || !strings.Contains(err.Error(), "is not in this repository") {
		t.Errorf("an unknown commit: %v", err)
	}
}

// The kubectl-psp archives hold the binary alone, under the name kubectl
// runs on each OS, and the krew manifest lists each archive's checksum;
// a missing binary is an error naming it.
func TestReleaseKubectlPSP(t *testing.T) {
	bins := binaryDir(t, "kubectl-psp-linux-amd64", "kubectl-psp-windows-arm64")
	c := Config{Dir: t.TempDir(), Source: "https://example.test/turnstile", KubectlPSPDir: bins, KubectlPSPPlatforms: []string{"linux/amd64", "windows/arm64"}}
	sums := map[string]string{}
	add := func(name, _ string) (string, error) {
		sum, err := oci.FileSHA256(filepath.Join(c.Dir, name))
		sums[name] = sum
		return sum, err
	}
	created := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	if err := releaseKubectlPSP(c, "v1.37.2+turnstile.1", created, add); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(c.Dir, krewManifest))
	if err != nil {
		t.Fatal(err)
	}
	var m krewPlugin
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.Metadata.Name != "psp" || m.Spec.Version != "v1.37.2+turnstile.1" || len(m.Spec.Platforms) != 2 {
		t.Fatalf("manifest %+v", m)
	}
	for i, want := range []struct{ archive, bin string }{{"kubectl-psp-linux-amd64.tar.gz", "kubectl-psp"}, {"kubectl-psp-windows-arm64.tar.gz", "kubectl-psp.exe"}} {
		p := m.Spec.Platforms[i]
		if p.Sha256 != sums[want.archive] || p.Bin != want.bin || p.URI != "https://example.test/turnstile/releases/download/v1.37.2+turnstile.1/"+want.archive {
			t.Errorf("platform %d: %+v, want %s (%s) holding %s", i, p, want.archive, sums[want.archive], want.bin)
		}
		f, err := os.Open(filepath.Join(c.Dir, want.archive))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(zr)
		h, err := tr.Next()
		if err != nil || h.Name != want.bin || h.Mode != 0o755 || !h.ModTime.Equal(created) {
			t.Errorf("%s: first entry %+v, %v; want %s, 0755, at %s", want.archive, h, err, want.bin, created)
		}
		if _, err := tr.Next(); err != io.EOF {
			t.Errorf("%s holds more than the binary: %v", want.archive, err)
		}
		f.Close()
	}

	c.KubectlPSPPlatforms = []string{"darwin/arm64"}
	if err := releaseKubectlPSP(c, "v1.37.2+turnstile.1", created, add); err == nil || !strings.Contains(err.Error(), "kubectl-psp-darwin-arm64") {
		t.Errorf("a missing binary: %v", err)
	}
}
