// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdxlib"

	"github.com/turnstile-k8s/turnstile/internal/process"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// releasePlatforms are the platforms of the release under test, as make's
// PLATFORMS: TURNSTILE_RELEASE_PLATFORMS, which make test-e2e sets to this
// machine's alone and make test-release to both (the arm64 cross-build of a
// cold cache takes 15 minutes), or both when unset.
var releasePlatforms = func() []string {
	if p := strings.Fields(os.Getenv("TURNSTILE_RELEASE_PLATFORMS")); len(p) > 0 {
		return p
	}
	return []string{"linux/amd64", "linux/arm64"}
}()

// releaseKubectlPSPPlatforms are the desktops the release under test has
// kubectl-psp for, as make's KUBECTL_PSP_PLATFORMS:
// TURNSTILE_RELEASE_KUBECTL_PSP_PLATFORMS (make test-e2e: this machine's),
// or all six when unset.
var releaseKubectlPSPPlatforms = func() []string {
	if p := strings.Fields(os.Getenv("TURNSTILE_RELEASE_KUBECTL_PSP_PLATFORMS")); len(p) > 0 {
		return p
	}
	return []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"}
}()

// releaseAirGap reports whether the release under test has air-gap bundles
// (TURNSTILE_RELEASE_AIRGAP, which make test-release sets; make test-e2e's
// release is made without them, AIRGAP=).
var releaseAirGap = os.Getenv("TURNSTILE_RELEASE_AIRGAP") != ""

// releaseRebuild reports whether the release is built a second time and
// compared byte for byte (TURNSTILE_RELEASE_REBUILD, which make test-release
// sets): the rebuild is a minute and a quarter of both cores, which make
// test's budget leaves to make test-release.
var releaseRebuild = os.Getenv("TURNSTILE_RELEASE_REBUILD") != ""

// releasesArm64 reports whether the release under test has an arm64 build.
func releasesArm64() bool { return slices.Contains(releasePlatforms, "linux/arm64") }

const arm64Skip = "this release is for this machine only (make test's); make test-release builds linux/arm64 too and runs it under qemu"

// `make release` output (make test-e2e builds it first), checked as a user
// installing it would: the checksums with sha256sum, the binaries by what
// they report (the arm64 one under qemu), the image index and archives by
// what a loader reads, the SBOM with the SPDX library, and the whole release
// built a second time from the same commit, byte for byte.
func TestRelease(t *testing.T) {
	t.Parallel() // long and independent of the others: see "Running in parallel" in README.md
	dir := releaseDir(t)
	version := strings.TrimPrefix(strings.TrimSpace(runBinary(t, "kube-apiserver", "--version")), "Kubernetes ")
	tag := strings.ReplaceAll(version, "+", "_")
	sums := checkSHA256SUMS(t, dir)
	want := []string{"kube-apiserver-" + tag + ".oci.tar", "RELEASE-NOTES.md"}
	for _, p := range releasePlatforms {
		p = strings.ReplaceAll(p, "/", "-")
		want = append(want, "kube-apiserver-"+p, "kube-apiserver-"+p+".spdx.json", "kube-apiserver-"+p+".provenance.json", "kube-apiserver-"+tag+"-"+p+".tar")
		if releaseAirGap {
			want = append(want, "airgap-images-"+p+".oci.tar", "airgap-images-"+p+".txt")
		}
	}
	want = append(want, "psp.yaml")
	for _, p := range releaseKubectlPSPPlatforms {
		want = append(want, "kubectl-psp-"+strings.ReplaceAll(p, "/", "-")+".tar.gz")
	}
	for _, name := range want {
		if _, ok := sums[name]; !ok {
			t.Errorf("SHA256SUMS lists no %s", name)
		}
	}
	if len(sums) != len(want) {
		t.Errorf("SHA256SUMS lists %d files, want %d: %v", len(sums), len(want), want)
	}

	t.Run("kubectl-psp for krew", func(t *testing.T) { checkKubectlPSPRelease(t, dir, version, sums) })

	t.Run("binaries report the version", func(t *testing.T) {
		out, err := exec.Command(filepath.Join(dir, "kube-apiserver-linux-amd64"), "--version").Output()
		if err != nil || strings.TrimSpace(string(out)) != "Kubernetes "+version {
			t.Errorf("amd64 --version: %q, %v; want Kubernetes %s", out, err, version)
		}
		if !releasesArm64() {
			t.Log(arm64Skip)
			return
		}
		qemu := qemuAarch64(t)
		out, err = exec.Command(qemu, filepath.Join(dir, "kube-apiserver-linux-arm64"), "--version").Output()
		if err != nil || strings.TrimSpace(string(out)) != "Kubernetes "+version {
			t.Errorf("arm64 --version under %s: %q, %v; want Kubernetes %s", qemu, out, err, version)
		}
	})

	t.Run("air-gap bundles", func(t *testing.T) {
		if !releaseAirGap {
			t.Skip("this release has no air-gap bundle (make test-e2e's); make test-release checks them")
		}
		for _, p := range releasePlatforms {
			base := "airgap-images-" + strings.ReplaceAll(p, "/", "-")
			list := readAirGapList(t, filepath.Join(dir, base+".txt"))
			files := untar(t, filepath.Join(dir, base+".oci.tar"))
			var top ociIndex
			mustUnmarshal(t, files["index.json"], &top)
			if len(top.Manifests) != len(list) {
				t.Fatalf("%s: index.json lists %d images, the list %d", base, len(top.Manifests), len(list))
			}
			for i, m := range top.Manifests {
				if name := m.Annotations["io.containerd.image.name"]; name != list[i].name || m.Digest != list[i].digest {
					t.Errorf("%s: image %d is %s at %s; the list says %s at %s", base, i, name, m.Digest, list[i].name, list[i].digest)
				}
				var manifest struct{ Config struct{ Digest string } }
				mustUnmarshal(t, blob(t, files, m.Digest), &manifest)
				var config imageConfig
				mustUnmarshal(t, blob(t, files, manifest.Config.Digest), &config)
				if config.OS+"/"+config.Architecture != p {
					t.Errorf("%s: %s is for %s/%s", base, list[i].name, config.OS, config.Architecture)
				}
			}
			// Ours is the release's image of that platform, under kubeadm's name and the release's tag.
			if first, last := list[0], list[len(list)-1]; !strings.HasSuffix(last.name, "/kube-apiserver:"+tag) || first.digest != last.digest {
				t.Errorf("%s: kube-apiserver %s, the release's %s", base, first, last)
			}
		}
	})

	t.Run("image index lists every platform", func(t *testing.T) {
		files := untar(t, filepath.Join(dir, "kube-apiserver-"+tag+".oci.tar"))
		var layoutFile struct{ ImageLayoutVersion string }
		if err := json.Unmarshal(files["oci-layout"], &layoutFile); err != nil || layoutFile.ImageLayoutVersion != "1.0.0" {
			t.Errorf("oci-layout %s: %v", files["oci-layout"], err)
		}
		var top ociIndex
		mustUnmarshal(t, files["index.json"], &top)
		if len(top.Manifests) != 1 || top.Manifests[0].MediaType != "application/vnd.oci.image.index.v1+json" {
			t.Fatalf("index.json %+v, want one image index", top)
		}
		if name := top.Manifests[0].Annotations["io.containerd.image.name"]; name != "docker.io/turnstile-k8s/kube-apiserver:"+tag {
			t.Errorf("io.containerd.image.name %q", name)
		}
		var index ociIndex
		mustUnmarshal(t, blob(t, files, top.Manifests[0].Digest), &index)
		var platforms []string
		for _, m := range index.Manifests {
			platform := m.Platform.OS + "/" + m.Platform.Architecture
			platforms = append(platforms, platform)
			var manifest struct {
				Config struct{ Digest string }
				Layers []struct{ Digest string }
			}
			mustUnmarshal(t, blob(t, files, m.Digest), &manifest)
			var config imageConfig
			mustUnmarshal(t, blob(t, files, manifest.Config.Digest), &config)
			if config.OS+"/"+config.Architecture != platform || config.Config.Labels["org.opencontainers.image.version"] != version {
				t.Errorf("%s: config is for %s/%s, version label %q", platform, config.OS, config.Architecture, config.Config.Labels["org.opencontainers.image.version"])
			}
			if len(manifest.Layers) != 1 {
				t.Fatalf("%s: %d layers", platform, len(manifest.Layers))
			}
			binary := layerFile(t, blob(t, files, manifest.Layers[0].Digest), "usr/local/bin/kube-apiserver")
			want := sums["kube-apiserver-"+strings.ReplaceAll(platform, "/", "-")]
			if got := sha256Hex(binary); got != want {
				t.Errorf("%s: the image's binary has sha256 %s, the released binary %s", platform, got, want)
			}
		}
		if !slices.Equal(platforms, releasePlatforms) {
			t.Errorf("image index platforms %v, want %v", platforms, releasePlatforms)
		}
	})

	t.Run("docker archives", func(t *testing.T) {
		for _, platform := range releasePlatforms {
			files := untar(t, filepath.Join(dir, "kube-apiserver-"+tag+"-"+strings.ReplaceAll(platform, "/", "-")+".tar"))
			var manifest []struct {
				Config   string
				RepoTags []string
				Layers   []string
			}
			mustUnmarshal(t, files["manifest.json"], &manifest)
			if len(manifest) != 1 || !slices.Equal(manifest[0].RepoTags, []string{"turnstile-k8s/kube-apiserver:" + tag}) {
				t.Fatalf("%s: manifest.json %+v", platform, manifest)
			}
			var config imageConfig
			mustUnmarshal(t, files[manifest[0].Config], &config)
			if config.OS+"/"+config.Architecture != platform {
				t.Errorf("%s: config is for %s/%s", platform, config.OS, config.Architecture)
			}
		}
	})

	t.Run("SBOM lists the module graph", func(t *testing.T) {
		want := goModRequires(t, "k8s.io/kubernetes", "go.etcd.io/etcd/server/v3", "go.etcd.io/etcd/client/v3", celModule(t))
		for _, platform := range releasePlatforms {
			name := "kube-apiserver-" + strings.ReplaceAll(platform, "/", "-")
			f, err := os.Open(filepath.Join(dir, name+".spdx.json"))
			if err != nil {
				t.Fatal(err)
			}
			doc, err := spdxjson.Read(f)
			f.Close()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := spdxlib.ValidateDocument(doc); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			versions := map[string]string{}
			for _, p := range doc.Packages {
				versions[p.PackageName] = p.PackageVersion
				if p.PackageName == "kube-apiserver" && (p.PackageVersion != version || len(p.PackageChecksums) != 1 || p.PackageChecksums[0].Value != sums[name]) {
					t.Errorf("%s: binary package %s %v, want %s with sha256 %s", name, p.PackageVersion, p.PackageChecksums, version, sums[name])
				}
				if p.PackageVersion == "v0.0.0" {
					t.Errorf("%s: %s at the placeholder v0.0.0, not the replacement that was built", name, p.PackageName)
				}
			}
			for path, v := range want {
				if versions[path] != v {
					t.Errorf("%s: SBOM has %s %q, go.mod requires %s", name, path, versions[path], v)
				}
			}
			if want := goListModule(t, "{{with .Replace}}{{.Version}}{{end}}", "k8s.io/apiserver"); want == "" || versions["k8s.io/apiserver"] != want {
				t.Errorf("%s: k8s.io/apiserver %q, want the staging replacement %q", name, versions["k8s.io/apiserver"], want)
			}
			t.Logf("%s: %d packages", name, len(doc.Packages))
		}
	})

	t.Run("release notes", func(t *testing.T) {
		notes, err := os.ReadFile(filepath.Join(dir, "RELEASE-NOTES.md"))
		if err != nil {
			t.Fatal(err)
		}
		subject, err := exec.Command("git", "log", "-1", "--no-merges", "--format=%s").Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"# Turnstile " + version, "**Kubernetes " + moduleVersion(t, "k8s.io/kubernetes") + "**",
			"go.etcd.io/etcd/server/v3 " + moduleVersion(t, "go.etcd.io/etcd/server/v3"),
			strings.Join(releasePlatforms, ", "), "- " + strings.TrimSpace(string(subject)),
			sums["kube-apiserver-"+strings.ReplaceAll(releasePlatforms[len(releasePlatforms)-1], "/", "-")],
		} {
			if !bytes.Contains(notes, []byte(want)) {
				t.Errorf("RELEASE-NOTES.md lacks %q:\n%s", want, notes)
			}
		}
	})

	t.Run("a second build is byte-identical", func(t *testing.T) {
		if !releaseRebuild {
			t.Skip("make test-release builds the release twice and compares it (TURNSTILE_RELEASE_REBUILD)")
		}
		again := t.TempDir()
		airgap := ""
		if releaseAirGap {
			airgap = "1"
		}
		cmd := exec.Command("make", "-C", "../..", "--no-print-directory", "release", "ALLOW_DIRTY=1", "RELEASE_DIR="+again, "RELEASE_LINES=", "AIRGAP="+airgap,
			"PLATFORMS="+strings.Join(releasePlatforms, " "), "KUBECTL_PSP_PLATFORMS="+strings.Join(releaseKubectlPSPPlatforms, " "))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make release: %v\n%s", err, out)
		}
		againSums := checkSHA256SUMS(t, again)
		if len(againSums) != len(sums) {
			t.Errorf("the second build has %d files, the first %d", len(againSums), len(sums))
		}
		for name, sum := range sums {
			if againSums[name] != sum {
				t.Errorf("%s differs: %s, then %s", name, sum, againSums[name])
			}
		}
	})

	t.Run("containerd imports and runs the image", func(t *testing.T) {
		ctr := startContainerd(t)
		ctr("images", "import", "--all-platforms", filepath.Join(dir, "kube-apiserver-"+tag+".oci.tar"))
		listed := ctr("images", "ls")
		name := "docker.io/turnstile-k8s/kube-apiserver:" + tag
		if platforms := strings.Join(releasePlatforms, ","); !strings.Contains(listed, name) || !strings.Contains(listed, platforms) {
			t.Fatalf("ctr images ls after importing the index, want %s for %s:\n%s", name, platforms, listed)
		}
		out := ctr("run", "--rm", "--platform", "linux/amd64", name, "turnstile-version", "/usr/local/bin/kube-apiserver", "--version")
		if strings.TrimSpace(out) != "Kubernetes "+version {
			t.Errorf("the image's entrypoint in a container printed %q, want Kubernetes %s", out, version)
		}
		ctr("images", "rm", name)
		ctr("images", "import", filepath.Join(dir, "kube-apiserver-"+tag+"-linux-amd64.tar"))
		if listed := ctr("images", "ls"); !strings.Contains(listed, name) {
			t.Errorf("ctr images ls after importing the docker archive, want %s:\n%s", name, listed)
		}
	})
}

// The release's arm64 binary serves: under qemu, with etcd embedded, it
// becomes ready, reports linux/arm64 in /version, and stores an object.
func TestReleaseArm64ServesUnderQemu(t *testing.T) {
	t.Parallel() // long and independent of the others: see "Running in parallel" in README.md
	if !releasesArm64() {
		t.Skip(arm64Skip)
	}
	qemu := qemuAarch64(t)
	dir := t.TempDir()
	began := time.Now()
	s, err := framework.StartAPIServer(framework.APIServerConfig{
		Command:      []string{qemu, filepath.Join(releaseDir(t), "kube-apiserver-linux-arm64")},
		Dir:          filepath.Join(dir, "arm64"),
		PKI:          pki,
		Args:         []string{"--embedded-etcd-data-dir=" + filepath.Join(dir, "etcd")},
		ReadyTimeout: 5 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ready under qemu in %s", time.Since(began).Round(time.Second))
	c, err := s.Client("e2e-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimPrefix(strings.TrimSpace(runBinary(t, "kube-apiserver", "--version")), "Kubernetes ")
	if info.Platform != "linux/arm64" || info.GitVersion != want {
		t.Errorf("/version: %s on %s, want %s on linux/arm64", info.GitVersion, info.Platform, want)
	}
	ctx := context.Background()
	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "arm64"}, Data: map[string]string{"served": "under qemu"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if cm, err := c.CoreV1().ConfigMaps("default").Get(ctx, "arm64", metav1.GetOptions{}); err != nil || cm.Data["served"] != "under qemu" {
		t.Errorf("reading the configmap back: %v, %v", cm, err)
	}
	if err := s.Stop(syscall.SIGTERM); err != nil {
		t.Errorf("stop: %v\n%s", err, s.Tail(30))
	}
}

// releaseDir is where `make release` wrote: TURNSTILE_RELEASE_DIR, which
// `make test-e2e` sets, or the repository's _output/release.
func releaseDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TURNSTILE_RELEASE_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "_output", "release")
	}
	if _, err := os.Stat(filepath.Join(dir, "SHA256SUMS")); err != nil {
		t.Fatalf("no release in %s (run `make release ALLOW_DIRTY=1` or `make test-e2e`): %v", dir, err)
	}
	return dir
}

// qemuAarch64 is the user-mode emulator that runs a static arm64 binary on
// this machine, or skips the test saying how to get it.
func qemuAarch64(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"qemu-aarch64-static", "qemu-aarch64"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Skip("qemu-aarch64-static not found, so the arm64 binary cannot run here: install Debian's qemu-user-static (make test-e2e installs it when it runs as root or with passwordless sudo)")
	return ""
}

// checkSHA256SUMS runs `sha256sum -c` in dir, checks that it lists every
// other file there, and returns the sums by file name.
func checkSHA256SUMS(t *testing.T, dir string) map[string]string {
	t.Helper()
	cmd := exec.Command("sha256sum", "--check", "--strict", "SHA256SUMS")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum -c SHA256SUMS in %s: %v\n%s", dir, err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		sum, name, _ := strings.Cut(sc.Text(), "  ")
		sums[name] = sum
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		// SHA256SUMS.sigstore.json is SHA256SUMS's signature (make release
		// RELEASE_SIGNING_KEY=), which cannot be listed in what it signs;
		// the air-gap lists' signatures are made with it.
		if _, ok := sums[e.Name()]; !ok && e.Name() != "SHA256SUMS" && !strings.HasSuffix(e.Name(), ".sigstore.json") {
			t.Errorf("%s is in the release but not in SHA256SUMS", e.Name())
		}
	}
	return sums
}

// startContainerd runs a containerd of its own, on a socket and state
// under a temporary directory, with no CRI plugin (nothing listens on the
// network), and returns a function that runs ctr against it. It skips the
// test when containerd is not installed.
func startContainerd(t *testing.T) func(args ...string) string {
	t.Helper()
	containerd, err := exec.LookPath("containerd")
	if err != nil {
		t.Skip("containerd not found: install Debian's containerd package (make test-e2e installs it when it runs as root or with passwordless sudo)")
	}
	ctrBin, err := exec.LookPath("ctr")
	if err != nil {
		t.Skip("ctr not found: it comes with Debian's containerd package")
	}
	dir, err := os.MkdirTemp("", "ctrd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "containerd.sock")
	config := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(config, []byte(`version = 2
root = "`+filepath.Join(dir, "root")+`"
state = "`+filepath.Join(dir, "state")+`"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "`+socket+`"
[ttrpc]
  address = "`+socket+`.ttrpc"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	// containerd 1.6 and ctr keep shim sockets, FIFOs and runc's state under
	// /run/containerd whatever the configuration says. Remove what the test
	// adds there: all of it when the directory is new, else the runc state
	// of the test's namespace (a containerd of the host's may use the rest).
	const hostState = "/run/containerd"
	_, statErr := os.Stat(hostState)
	hadHostState := statErr == nil
	p, err := process.Start("containerd", filepath.Join(dir, "containerd.log"), []string{containerd, "--config", config})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
			t.Logf("containerd stop: %v", err)
		}
		leftover := hostState
		if hadHostState {
			leftover = filepath.Join(hostState, "runc", "turnstile-e2e")
		}
		if err := os.RemoveAll(leftover); err != nil {
			t.Errorf("removing %s: %v", leftover, err)
		}
	})
	ctr := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, ctrBin, append([]string{"--address", socket, "--namespace", "turnstile-e2e"}, args...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err != nil {
			return stdout.String(), &ctrError{args: args, err: err, stderr: stderr.String()}
		}
		return stdout.String(), nil
	}
	if err := p.WaitUntil(context.Background(), time.Minute, func(context.Context) error {
		_, err := ctr("version")
		return err
	}); err != nil {
		t.Fatalf("containerd did not come up: %v\n%s", err, p.Tail(20))
	}
	return func(args ...string) string {
		t.Helper()
		out, err := ctr(args...)
		if err != nil {
			t.Fatalf("%v\ncontainerd log:\n%s", err, p.Tail(20))
		}
		return out
	}
}

type ctrError struct {
	args   []string
	err    error
	stderr string
}

func (e *ctrError) Error() string {
	return "ctr " + strings.Join(e.args, " ") + ": " + e.err.Error() + ": " + e.stderr
}

type ociIndex struct {
	Manifests []struct {
		MediaType   string
		Digest      string
		Annotations map[string]string
		Platform    struct{ OS, Architecture string }
	}
}

type imageConfig struct {
	Architecture, OS string
	Config           struct{ Labels map[string]string }
}

func mustUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%v in %.200s", err, data)
	}
}

// blob is the OCI layout's blob for digest, checked against it.
func blob(t *testing.T, files map[string][]byte, digest string) []byte {
	t.Helper()
	algo, hexSum, _ := strings.Cut(digest, ":")
	data, ok := files["blobs/"+algo+"/"+hexSum]
	if !ok {
		t.Fatalf("the layout has no blob %s", digest)
	}
	if sha256Hex(data) != hexSum {
		t.Fatalf("blob %s does not match its digest", digest)
	}
	return data
}

// layerFile is the file at path in a gzipped layer tarball.
func layerFile(t *testing.T, layer []byte, path string) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(gz); err != nil {
		t.Fatal(err)
	}
	files := untarBytes(t, buf.Bytes())
	data, ok := files[path]
	if !ok {
		t.Fatalf("the layer has no %s: %v", path, keys(files))
	}
	return data
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// goModRequires returns the versions go.mod requires for paths.
// celModule is the CEL module go.mod requires: github.com/google/cel-go
// until Kubernetes v1.38, cel.dev/cel-go from it.
func celModule(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"cel.dev/cel-go", "github.com/google/cel-go"} {
		if strings.Contains(string(data), "\t"+m+" ") {
			return m
		}
	}
	t.Fatal("go.mod requires neither cel.dev/cel-go nor github.com/google/cel-go")
	return ""
}

func goModRequires(t *testing.T, paths ...string) map[string]string {
	t.Helper()
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 2 && slices.Contains(paths, fields[0]) {
			want[fields[0]] = fields[1]
		}
	}
	if len(want) != len(paths) {
		t.Fatalf("go.mod requires %v, want versions for all of %v", want, paths)
	}
	return want
}
