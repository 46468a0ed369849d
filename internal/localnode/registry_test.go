// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnstile-k8s/turnstile/build/oci"
)

// testArchive writes a docker archive as nodeimages does, of one image
// under the names refs, with one file whose content is data.
func testArchive(t *testing.T, path, data string, refs ...string) {
	t.Helper()
	layer, err := oci.Layer([]oci.Entry{oci.File("data", 0o644, []byte(data))}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	img, err := oci.NewImage(oci.Config{Cmd: []string{"/data"}}, layer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oci.WriteDockerArchiveTags(path, img, refs...); err != nil {
		t.Fatal(err)
	}
}

// nopCloser lets a test's log go nowhere.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// The registry serves every image of the tarballs by tag and by digest,
// each blob matching its digest, the later tarball's image for a name two
// tarballs hold, and the distribution API's errors for the rest.
func TestRegistry(t *testing.T) {
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first.tar"), filepath.Join(dir, "second.tar")
	testArchive(t, first, "old", "registry.k8s.io/pause:3.10.2", "registry.k8s.io/e2e-test-images/busybox:1.37.0-1")
	testArchive(t, second, "new", "registry.k8s.io/e2e-test-images/busybox:1.37.0-1", "docker.io/library/nginx:1.27")
	r, err := newRegistry([]string{first, second}, nopCloser{io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.serve(netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Fatal(err)
	}
	defer r.close()
	if got := strings.Join(r.hosts, " "); got != "docker.io registry.k8s.io" {
		t.Errorf("hosts %q, want docker.io and registry.k8s.io", got)
	}

	get := func(method, path string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+r.addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	// pull fetches an image as containerd does and returns its one
	// layer's gzip'd bytes.
	pull := func(repo, ref string) []byte {
		t.Helper()
		resp, body := get(http.MethodGet, "/v2/"+repo+"/manifests/"+ref)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != mediaTypeManifest {
			t.Fatalf("%s:%s: %s %q: %s", repo, ref, resp.Status, resp.Header.Get("Content-Type"), body)
		}
		digest := fmt.Sprintf("sha256:%x", sha256.Sum256(body))
		if got := resp.Header.Get("Docker-Content-Digest"); got != digest {
			t.Errorf("%s:%s: Docker-Content-Digest %s, want %s", repo, ref, got, digest)
		}
		var m struct {
			Config struct{ Digest string }
			Layers []struct {
				Digest string
				Size   int64
			}
		}
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		var layer []byte
		for i, d := range append([]string{m.Config.Digest}, m.Layers[0].Digest) {
			resp, blob := get(http.MethodGet, "/v2/"+repo+"/blobs/"+d)
			if resp.StatusCode != http.StatusOK || fmt.Sprintf("sha256:%x", sha256.Sum256(blob)) != d {
				t.Fatalf("blob %s: %s, content's digest sha256:%x", d, resp.Status, sha256.Sum256(blob))
			}
			if i == 1 {
				if int64(len(blob)) != m.Layers[0].Size {
					t.Errorf("layer %s: %d bytes, the manifest says %d", d, len(blob), m.Layers[0].Size)
				}
				layer = blob
			}
		}
		// By digest, as containerd asks once it resolved the tag.
		if resp, _ := get(http.MethodHead, "/v2/"+repo+"/manifests/"+digest); resp.StatusCode != http.StatusOK {
			t.Errorf("%s@%s: %s", repo, digest, resp.Status)
		}
		return layer
	}
	pause := pull("pause", "3.10.2")
	busybox := pull("e2e-test-images/busybox", "1.37.0-1")
	nginx := pull("library/nginx", "1.27")
	if string(busybox) == string(pause) || string(busybox) != string(nginx) {
		t.Error("busybox is not the later tarball's image")
	}

	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{http.MethodGet, "/v2/", http.StatusOK, ""},
		{http.MethodGet, "/v2/e2e-test-images/busybox/manifests/9.9", http.StatusNotFound, "MANIFEST_UNKNOWN"},
		{http.MethodGet, "/v2/pause/blobs/sha256:" + strings.Repeat("0", 64), http.StatusNotFound, "BLOB_UNKNOWN"},
		{http.MethodPut, "/v2/pause/manifests/3.10.2", http.StatusMethodNotAllowed, "UNSUPPORTED"},
		{http.MethodGet, "/v1/pause", http.StatusNotFound, "NOT_FOUND"},
	} {
		resp, body := get(tc.method, tc.path)
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.code) {
			t.Errorf("%s %s: %s %s, want %d %s", tc.method, tc.path, resp.Status, body, tc.status, tc.code)
		}
	}

	hosts := filepath.Join(dir, "certs.d")
	if err := r.writeHostsDir(hosts); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"docker.io", "registry.k8s.io"} {
		data, err := os.ReadFile(filepath.Join(hosts, h, "hosts.toml"))
		if err != nil || !strings.Contains(string(data), "server = \"http://"+r.addr+"\"\n") || !strings.Contains(string(data), "[host.\"http://"+r.addr+"\"]\n") {
			t.Errorf("%s's hosts.toml: %v %q", h, err, data)
		}
	}
}

// One name served from two registries would be ambiguous.
func TestRegistryRefusesAmbiguousNames(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	testArchive(t, a, "a", "registry.k8s.io/library/nginx:1.27")
	testArchive(t, b, "b", "docker.io/library/nginx:1.27")
	if _, err := newRegistry([]string{a, b}, nopCloser{io.Discard}); err == nil || !strings.Contains(err.Error(), "library/nginx:1.27") {
		t.Errorf("got %v, want an error naming library/nginx:1.27", err)
	}
}

// An offline run's registry serves nothing, stands in for kubeadm's
// registries and every other (containerd's _default), and logs each pull.
func TestOfflineRegistry(t *testing.T) {
	logFile, err := os.Create(filepath.Join(t.TempDir(), "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRegistry(nil, logFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.serve(netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Fatal(err)
	}
	defer r.close()
	if got := strings.Join(r.hosts, " "); got != "_default docker.io registry.k8s.io" {
		t.Errorf("hosts %q", got)
	}
	resp, err := http.Get("http://" + r.addr + "/v2/pause/manifests/3.10.2")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The request is logged once answered.
	var log []byte
	for range 50 {
		if log, _ = os.ReadFile(logFile.Name()); strings.Contains(string(log), "GET /v2/pause/manifests/3.10.2 404") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(log), "GET /v2/pause/manifests/3.10.2 404") {
		t.Errorf("status %d, log %q", resp.StatusCode, log)
	}
	hosts := t.TempDir()
	if err := r.writeHostsDir(hosts); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(hosts, "_default", "hosts.toml")); err != nil || !strings.Contains(string(data), `server = "http://`+r.addr+`"`) {
		t.Errorf("_default/hosts.toml: %v\n%s", err, data)
	}
}
