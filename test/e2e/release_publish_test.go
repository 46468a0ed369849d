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

	"github.com/turnstile-k8s/turnstile/internal/process"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// The release as an operator installs it from a registry: make publish
// pushes it to a CNCF distribution registry on loopback (test/registry's
// module), signed and attested with the key make test-release made for
// make release (TURNSTILE_RELEASE_SIGNING_KEY, its password in
// COSIGN_PASSWORD), and the real cosign, with the public key alone and no
// network, verifies the images, the attestations and SHA256SUMS; then
// fails them after a byte of the image, of SHA256SUMS or of its signature
// changes, and under another key.
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
	digests := publish(t, repo, dir, key)
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
// key, and returns the digests it printed ("<repo>/kube-apiserver@sha256:...
// <what>" lines) by what they are: "index", or a platform.
func publish(t *testing.T, repo, dir, key string) map[string]string {
	t.Helper()
	cmd := exec.Command("make", "-C", "../..", "--no-print-directory", "publish", "REGISTRY="+repo, "RELEASE_DIR="+dir, "RELEASE_SIGNING_KEY="+key)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("make publish RELEASE_DIR=%s: %v\n%s%s", dir, err, stdout.String(), stderr.String())
	}
	digests := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		ref, what, ok := strings.Cut(line, "\t")
		if !ok || !strings.Contains(ref, "@sha256:") {
			continue
		}
		if strings.HasPrefix(what, "index ") {
			what = "index"
		}
		digests[what] = ref
	}
	return digests
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
