// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	kubeversion "k8s.io/component-base/version"

	"github.com/turnstile-k8s/turnstile/internal/process"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// The release as an operator installs it from a registry: make publish
// pushes it to a CNCF distribution registry on loopback (test/registry's
// module), signed and attested with the key make test-release made for
// make release (TURNSTILE_RELEASE_SIGNING_KEY, its password in
// COSIGN_PASSWORD), and the real cosign, with the public key alone and no
// network, verifies the images (the air-gap bundles' too, under kubeadm's
// names), the attestations and SHA256SUMS, and so do the commands of
// docs/tasks/verify-a-release.md; then cosign fails them after a byte of
// the image, of SHA256SUMS or of its signature changes, and under another
// key.
func TestReleasePublish(t *testing.T) {
	key := os.Getenv("TURNSTILE_RELEASE_SIGNING_KEY")
	if key == "" {
		t.Skip("no signed release: make test-release makes a key, signs the release and runs this")
	}
	t.Parallel()
	dir := releaseDir(t)
	pub := strings.TrimSuffix(key, ".key") + ".pub"
	bin, home := mustBinary(t, "cosign"), t.TempDir()
	cosign := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		// No TUF root, no Rekor, no Fulcio: nothing here may reach them.
		cmd.Env = append(os.Environ(), "HOME="+home, "SIGSTORE_NO_CACHE=1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	offline := []string{"--key", pub, "--insecure-ignore-tlog=true"}

	// Each signed file (SHA256SUMS; each air-gap bundle's image list,
	// when the release has bundles) passes verify-blob, and fails it with
	// a byte of the file or of its signature changed.
	signed := []string{"SHA256SUMS"}
	if releaseAirGap {
		for _, p := range releasePlatforms {
			signed = append(signed, "airgap-images-"+strings.ReplaceAll(p, "/", "-")+".txt")
		}
	}
	for _, name := range signed {
		t.Run(name+" is signed", func(t *testing.T) {
			bundle := filepath.Join(dir, name+".sigstore.json")
			if out, err := cosign(append([]string{"verify-blob", "--bundle", bundle}, append(offline, filepath.Join(dir, name))...)...); err != nil {
				t.Fatalf("cosign verify-blob %s: %v\n%s", name, err, out)
			}
			planted := t.TempDir()
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			data[0] ^= 1
			mustWriteFile(t, filepath.Join(planted, name), data)
			if out, err := cosign(append([]string{"verify-blob", "--bundle", bundle}, append(offline, filepath.Join(planted, name))...)...); err == nil || !strings.Contains(out, "invalid signature") {
				t.Errorf("cosign verify-blob on %s with a byte changed: %v, want it to fail with an invalid signature:\n%s", name, err, out)
			}
			signature := plantedSignature(t, bundle)
			if out, err := cosign(append([]string{"verify-blob", "--bundle", signature}, append(offline, filepath.Join(dir, name))...)...); err == nil || !strings.Contains(out, "invalid signature") {
				t.Errorf("cosign verify-blob with a byte of %s's signature changed: %v, want it to fail with an invalid signature:\n%s", name, err, out)
			}
		})
	}

	registry, requests := startRegistry(t)
	repo := registry + "/turnstile"
	digests, bundled := publishAll(t, repo, dir, key)
	if len(digests) != len(releasePlatforms)+1 {
		t.Fatalf("make publish printed %d digests, want the index's and one per platform (%v): %v", len(digests), releasePlatforms, digests)
	}
	index := digests["index"]
	version := strings.TrimPrefix(strings.TrimSpace(runBinary(t, "kube-apiserver", "--version")), "Kubernetes ")
	tagged := repo + "/kube-apiserver:" + strings.ReplaceAll(version, "+", "_")
	if _, indexDigest, _ := strings.Cut(index, "@"); !strings.Contains(readFile(t, filepath.Join(dir, "RELEASE-NOTES.md")), indexDigest) {
		t.Errorf("the pushed index %s is not the digest RELEASE-NOTES.md names", index)
	}

	t.Run("cosign verify", func(t *testing.T) {
		for what, ref := range digests {
			if out, err := cosign(append([]string{"verify"}, append(offline, ref)...)...); err != nil {
				t.Errorf("cosign verify %s (%s): %v\n%s", ref, what, err, out)
			}
		}
		if out, err := cosign(append([]string{"verify"}, append(offline, tagged)...)...); err != nil {
			t.Errorf("cosign verify %s: %v\n%s", tagged, err, out)
		}
	})

	t.Run("cosign verify-attestation", func(t *testing.T) {
		head, err := exec.Command("git", "rev-parse", "HEAD").Output()
		if err != nil {
			t.Fatal(err)
		}
		commit := strings.TrimSpace(string(head))
		for _, ref := range []string{digests["linux/amd64"], tagged} {
			out, err := cosign(append([]string{"verify-attestation", "--type", "slsaprovenance1"}, append(offline, ref)...)...)
			if err != nil {
				t.Errorf("cosign verify-attestation --type slsaprovenance1 %s: %v\n%s", ref, err, out)
				continue
			}
			statement := attestedStatement(t, out, "https://slsa.dev/provenance/v1")
			for _, want := range []string{commit, "pkg:golang/k8s.io/apiserver@", "dirHash1", "make release", "pkg:golang/golang.org/toolchain@"} {
				if !strings.Contains(statement, want) {
					t.Errorf("%s: the provenance attested lacks %q:\n%s", ref, want, statement)
				}
			}
			out, err = cosign(append([]string{"verify-attestation", "--type", "spdxjson"}, append(offline, ref)...)...)
			if err != nil {
				t.Errorf("cosign verify-attestation --type spdxjson %s: %v\n%s", ref, err, out)
				continue
			}
			if sbom := attestedStatement(t, out, "https://spdx.dev/Document"); !strings.Contains(sbom, "k8s.io/kubernetes") {
				t.Errorf("%s: the SBOM attested lists no k8s.io/kubernetes:\n%s", ref, sbom)
			}
		}
	})

	// Every image of each air-gap bundle, under kubeadm's name in the
	// registry (what kubeadm --image-repository <repo> pulls) and by the
	// digest the bundle's signed image list names, is signed; and under its
	// tag is an index of the platforms, signed too.
	t.Run("every image of the air-gap bundles is pushed and signed", func(t *testing.T) {
		if !releaseAirGap {
			t.Skip("the release has no air-gap bundles (AIRGAP=)")
		}
		tags := map[string]bool{}
		for _, p := range releasePlatforms {
			list := filepath.Join(dir, "airgap-images-"+strings.ReplaceAll(p, "/", "-")+".txt")
			for _, line := range strings.Fields(readFile(t, list)) {
				named, digest, ok := strings.Cut(line, "@")
				if !ok {
					t.Fatalf("%s: %q is not NAME:TAG@DIGEST", list, line)
				}
				image := named[strings.LastIndex(named, "/")+1:]
				ref := repo + "/" + image[:strings.Index(image, ":")] + "@" + digest
				if image == "kube-apiserver:"+strings.ReplaceAll(version, "+", "_") {
					// The release's own tag: the release's index, verified above.
					if digests[p] != ref {
						t.Errorf("%s names %s, make publish pushed the release's %s image as %s", list, line, p, digests[p])
					}
					continue
				}
				if bundled[image+" "+p] != ref {
					t.Errorf("%s names %s: make publish printed %q for %s %s, want %s", list, line, bundled[image+" "+p], image, p, ref)
				}
				if out, err := cosign(append([]string{"verify"}, append(offline, ref)...)...); err != nil {
					t.Errorf("cosign verify %s (%s, %s): %v\n%s", ref, image, p, err, out)
				}
				tags[image] = true
			}
		}
		if len(tags) != 7 {
			t.Errorf("the bundles' lists name %d images besides the release's own tag, want kubeadm's 7: %v", len(tags), tags)
		}
		for image := range tags {
			tagged := repo + "/" + image
			if out, err := cosign(append([]string{"verify"}, append(offline, tagged)...)...); err != nil {
				t.Errorf("cosign verify %s (the index of its platforms): %v\n%s", tagged, err, out)
			}
			if bundled[image+" index"] == "" {
				t.Errorf("make publish printed no index for %s", image)
			}
		}
	})

	// docs/tasks/verify-a-release.md, as written, with this test's key,
	// release and registry in place of the reader's.
	t.Run("the task page verifies the release", func(t *testing.T) {
		if !releaseAirGap {
			t.Skip("docs/tasks/verify-a-release.md verifies an air-gap bundle's images; the release has none (AIRGAP=)")
		}
		pageTag := kubeversion.Get().GitVersion + "_turnstile.1" // what the page names
		r := runTaskPage(t, "../../docs/tasks/verify-a-release.md", time.Minute, taskOptions{
			replace: map[string]string{
				"$PWD/cosign.pub": pub, "$PWD/_output/release": dir, "registry.example.com/turnstile": repo,
				pageTag: strings.ReplaceAll(version, "+", "_"),
			},
			env: []string{"PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH"), "HOME=" + home, "SIGSTORE_NO_CACHE=1"},
		})
		if out := strings.Join(r.outputs, ""); !strings.Contains(out, "every file is as SHA256SUMS lists it") || !strings.Contains(out, "is signed") {
			t.Errorf("the page's commands did not say every file and image checked out:\n%s", out)
		}
	})

	t.Run("a changed image or another key fails", func(t *testing.T) {
		// A byte changed in the amd64 image's manifest, pushed under a tag
		// of its own: the registry serves it, cosign finds no signature.
		ref := digests["linux/amd64"]
		manifest, mediaType := getManifest(t, ref)
		changed := append(bytes.TrimRight(manifest, "\n "), ' ')
		changedRef := repo + "/kube-apiserver:changed"
		putManifest(t, changedRef, mediaType, changed)
		if out, err := cosign(append([]string{"verify"}, append(offline, changedRef)...)...); err == nil || !strings.Contains(out, "no signatures found") {
			t.Errorf("cosign verify of an image with a byte changed: %v, want no signatures found:\n%s", err, out)
		}
		if out, err := cosign(append([]string{"verify-attestation", "--type", "slsaprovenance1"}, append(offline, changedRef)...)...); err == nil || !strings.Contains(out, "no matching attestations") {
			t.Errorf("cosign verify-attestation of an image with a byte changed: %v, want no matching attestations:\n%s", err, out)
		}
		other := t.TempDir()
		if out, err := cosign("generate-key-pair", "--output-key-prefix", filepath.Join(other, "other")); err != nil {
			t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
		}
		if out, err := cosign("verify", "--key", filepath.Join(other, "other.pub"), "--insecure-ignore-tlog=true", ref); err == nil || !strings.Contains(out, "signatures do not match") {
			t.Errorf("cosign verify under another key: %v, want the signatures not to match:\n%s", err, out)
		}
	})

	t.Run("the FIPS release publishes too", func(t *testing.T) {
		fips := os.Getenv("TURNSTILE_RELEASE_FIPS_DIR")
		if fips == "" {
			t.Skip("no FIPS release: make test-release builds one (make release FIPS=1)")
		}
		digests := publish(t, repo+"/fips", fips, key)
		index, ok := digests["index"]
		if !ok || len(digests) != 2 {
			t.Fatalf("make publish of the FIPS release printed %v, want its index and this machine's image", digests)
		}
		if out, err := cosign(append([]string{"verify"}, append(offline, index)...)...); err != nil {
			t.Errorf("cosign verify %s: %v\n%s", index, err, out)
		}
		out, err := cosign(append([]string{"verify-attestation", "--type", "slsaprovenance1"}, append(offline, index)...)...)
		if err != nil {
			t.Fatalf("cosign verify-attestation %s: %v\n%s", index, err, out)
		}
		if st := attestedStatement(t, out, "https://slsa.dev/provenance/v1"); !strings.Contains(st, "make release FIPS=1") || !strings.Contains(st, "GOFIPS140="+certifiedFIPSModule) {
			t.Errorf("the FIPS image's provenance does not name make release FIPS=1 and GOFIPS140=%s:\n%s", certifiedFIPSModule, st)
		}
	})

	// Everything cosign and make publish asked for went to the registry on
	// loopback: its log has requests, and nothing else was reachable.
	if n := requests(); n == 0 {
		t.Errorf("the registry logged no request")
	}
}

// publish runs make publish of the release in dir to repo, signed with
// key, and returns the digests it printed of the release's image
// ("<repo>/kube-apiserver@sha256:... <what>" lines) by what they are:
// "index", or a platform. The air-gap bundles' lines ("... bundle <what>")
// are bundled's.
func publish(t *testing.T, repo, dir, key string) map[string]string {
	digests, _ := publishAll(t, repo, dir, key)
	return digests
}

// publishAll is publish, and the digests make publish printed of the
// air-gap bundles' images, by what it says they are ("kube-proxy:v1.37.2
// linux/arm64", "kube-proxy:v1.37.2 index").
func publishAll(t *testing.T, repo, dir, key string) (release, bundled map[string]string) {
	t.Helper()
	cmd := exec.Command("make", "-C", "../..", "--no-print-directory", "publish", "REGISTRY="+repo, "RELEASE_DIR="+dir, "RELEASE_SIGNING_KEY="+key)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("make publish RELEASE_DIR=%s: %v\n%s%s", dir, err, stdout.String(), stderr.String())
	}
	release, bundled = map[string]string{}, map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		ref, what, ok := strings.Cut(line, "\t")
		if !ok || !strings.Contains(ref, "@sha256:") {
			continue
		}
		if image, ok := strings.CutPrefix(what, "bundle "); ok {
			if i := strings.Index(image, " index "); i >= 0 {
				image = image[:i] + " index"
			}
			bundled[image] = ref
			continue
		}
		if strings.HasPrefix(what, "index ") {
			what = "index"
		}
		release[what] = ref
	}
	return release, bundled
}

// startRegistry runs the CNCF distribution registry on a free loopback
// port, storing in a temporary directory, until the test ends; it returns
// its host:port and a count of the requests it has logged.
func startRegistry(t *testing.T) (string, func() int) {
	t.Helper()
	port, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	config := fmt.Sprintf("version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", filepath.Join(dir, "storage"), addr)
	mustWriteFile(t, filepath.Join(dir, "config.yml"), []byte(config))
	p, err := process.StartDisposable("registry", filepath.Join(dir, "registry.log"), []string{mustBinary(t, "registry"), "serve", filepath.Join(dir, "config.yml")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(syscall.SIGTERM, 10*time.Second)
		if t.Failed() {
			t.Logf("registry log:\n%s", p.Tail(40))
		}
	})
	err = p.WaitUntil(context.Background(), 30*time.Second, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v2/", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /v2/: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return addr, func() int {
		data, _ := os.ReadFile(p.Log)
		return bytes.Count(data, []byte("HTTP/1.1\""))
	}
}

// getManifest reads the manifest of repo@digest from the registry, over
// the distribution API.
func getManifest(t *testing.T, ref string) ([]byte, string) {
	t.Helper()
	host, rest, _ := strings.Cut(ref, "/")
	repo, digest, _ := strings.Cut(rest, "@")
	req, err := http.NewRequest(http.MethodGet, "http://"+host+"/v2/"+repo+"/manifests/"+digest, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v\n%s", req.URL, resp.Status, err, body)
	}
	return body, resp.Header.Get("Content-Type")
}

// putManifest pushes manifest as repo:tag.
func putManifest(t *testing.T, ref, mediaType string, manifest []byte) {
	t.Helper()
	host, rest, _ := strings.Cut(ref, "/")
	i := strings.LastIndex(rest, ":")
	req, err := http.NewRequest(http.MethodPut, "http://"+host+"/v2/"+rest[:i]+"/manifests/"+rest[i+1:], bytes.NewReader(manifest))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mediaType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("PUT %s: %s\n%s", req.URL, resp.Status, body)
	}
}

// attestedStatement finds, in cosign verify-attestation's output (one DSSE
// envelope per line), the in-toto statement with predicateType and returns
// it.
func attestedStatement(t *testing.T, out, predicateType string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		var envelope struct {
			Payload string `json:"payload"`
		}
		if json.Unmarshal([]byte(line), &envelope) != nil || envelope.Payload == "" {
			continue
		}
		payload, err := base64.StdEncoding.DecodeString(envelope.Payload)
		if err != nil {
			continue
		}
		var st struct {
			PredicateType string `json:"predicateType"`
		}
		if json.Unmarshal(payload, &st) == nil && st.PredicateType == predicateType {
			return string(payload)
		}
	}
	t.Fatalf("cosign verify-attestation printed no statement of type %s:\n%s", predicateType, out)
	return ""
}

// plantedSignature writes a copy of the Sigstore bundle at path with a
// byte of its signature changed, and returns the copy's path.
func plantedSignature(t *testing.T, path string) string {
	t.Helper()
	var bundle map[string]any
	if err := json.Unmarshal([]byte(readFile(t, path)), &bundle); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	sig, _ := bundle["messageSignature"].(map[string]any)
	b64, _ := sig["signature"].(string)
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) == 0 {
		t.Fatalf("%s: no messageSignature.signature: %v", path, err)
	}
	raw[len(raw)/2] ^= 1
	sig["signature"] = base64.StdEncoding.EncodeToString(raw)
	data, err := json.Marshal(bundle)
	if err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(t.TempDir(), "SHA256SUMS.sigstore.json")
	mustWriteFile(t, planted, data)
	return planted
}

func mustWriteFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustBinary(t *testing.T, name string) string {
	t.Helper()
	bin, err := framework.Binary(name)
	if err != nil {
		t.Fatalf("%s is not built (make test-release builds it): %v", name, err)
	}
	return bin
}
