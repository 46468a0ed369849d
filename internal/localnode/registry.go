// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

// registry serves the images of the nodes' tarballs over the pull side of
// the OCI distribution API, on the host's bridge address, and every node's
// containerd takes it for the images' registries (registry.k8s.io and the
// rest: registryHosts writes their hosts.toml). So pods pull for real, as
// in any cluster (imagePullPolicy Always, image volumes, AlwaysPullImages),
// and nothing leaves the machine: an image that no tarball holds is not
// found, where a real registry would have it.
//
// It serves the docker archives' files as they are, without copying them:
// nodeimages writes each layer gzip'd and named by its digest, and each
// config named by its digest; the manifests are made from the archives'
// manifest.json.
type registry struct {
	addr string
	// hosts are the registries it stands in for, as containerd names them.
	hosts     []string
	manifests map[string][]byte // "repository:reference" (tag or digest)
	blobs     map[string]blob   // by digest
	server    *http.Server
	log       *log.Logger
	logFile   io.WriteCloser
}

// blob is a file of an image tarball.
type blob struct {
	tarball      string
	offset, size int64
}

// The manifests are OCI's, as build/oci makes the images.
const (
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// hexDigest is a sha256 digest's hex part.
var hexDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)

// newRegistry indexes the tarballs' images; a later tarball's image
// replaces an earlier one's of the same name, as in importImages. With no
// tarball, it serves nothing and stands in for docker.io, registry.k8s.io
// and, for containerd 1.7 and later, every other registry (the hosts
// directory's _default), so that any pull reaches it and is logged.
// It logs each request to logFile, which close closes.
func newRegistry(tarballs []string, logFile io.WriteCloser) (*registry, error) {
	r := &registry{manifests: map[string][]byte{}, blobs: map[string]blob{}, log: log.New(logFile, "", log.LstdFlags), logFile: logFile}
	hosts := map[string]bool{}
	// owner is the registry each repository's tag came from: two
	// registries with the same repository and tag cannot share a mirror.
	owner := map[string]string{}
	for _, tarball := range tarballs {
		entries, err := r.index(tarball)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			m, err := r.manifest(tarball, e)
			if err != nil {
				return nil, err
			}
			digest := fmt.Sprintf("sha256:%x", sha256.Sum256(m))
			for _, t := range e.RepoTags {
				tag, err := name.NewTag(t)
				if err != nil {
					return nil, fmt.Errorf("%s: image name %q: %w", tarball, t, err)
				}
				host := containerdHost(tag.RegistryStr())
				key := tag.RepositoryStr() + ":" + tag.TagStr()
				if prev, ok := owner[key]; ok && prev != host {
					return nil, fmt.Errorf("%s: %s and %s/%s are both served as %s", tarball, t, prev, key, key)
				}
				owner[key], hosts[host] = host, true
				r.manifests[key] = m
				r.manifests[tag.RepositoryStr()+":"+digest] = m
			}
		}
	}
	if len(tarballs) == 0 {
		// An offline run's: every registry an image of a kubeadm
		// cluster comes from, serving nothing.
		hosts = map[string]bool{"docker.io": true, "registry.k8s.io": true, "_default": true}
	}
	for h := range hosts {
		r.hosts = append(r.hosts, h)
	}
	sort.Strings(r.hosts)
	return r, nil
}

// containerdHost is the name containerd gives a registry in its hosts
// directory: go-containerregistry calls Docker Hub index.docker.io.
func containerdHost(registry string) string {
	if registry == name.DefaultRegistry {
		return "docker.io"
	}
	return registry
}

// archiveEntry is one image of a docker archive's manifest.json.
type archiveEntry struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// index records where each file of the tarball lies and returns its
// manifest.json.
func (r *registry) index(tarball string) ([]archiveEntry, error) {
	f, err := os.Open(tarball)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	files := map[string]blob{}
	var entries []archiveEntry
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tarball, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Name == "manifest.json" {
			if err := json.NewDecoder(tr).Decode(&entries); err != nil {
				return nil, fmt.Errorf("%s: manifest.json: %w", tarball, err)
			}
			continue
		}
		// With a file underneath, the reader is at the entry's data.
		offset, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, err
		}
		files[h.Name] = blob{tarball: tarball, offset: offset, size: h.Size}
	}
	if entries == nil {
		return nil, fmt.Errorf("%s has no manifest.json: not a docker archive", tarball)
	}
	for _, e := range entries {
		for _, file := range append([]string{e.Config}, e.Layers...) {
			b, ok := files[file]
			if !ok {
				return nil, fmt.Errorf("%s: manifest.json names %s, which it does not hold", tarball, file)
			}
			d, err := fileDigest(file)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", tarball, err)
			}
			r.blobs[d] = b
		}
	}
	return entries, nil
}

// fileDigest is the digest a docker archive's file is named by:
// sha256:HEX for a config, HEX.tar.gz for a gzip'd layer.
func fileDigest(file string) (string, error) {
	hex, ok := strings.CutPrefix(file, "sha256:")
	if !ok {
		hex, ok = strings.CutSuffix(file, ".tar.gz")
	}
	if !ok || !hexDigest.MatchString(hex) {
		return "", fmt.Errorf("%s is not named by its digest (sha256:HEX for a config, HEX.tar.gz for a gzip'd layer, as nodeimages writes them)", file)
	}
	return "sha256:" + hex, nil
}

// manifest is the image manifest of one archive entry.
func (r *registry) manifest(tarball string, e archiveEntry) ([]byte, error) {
	type descriptor struct {
		MediaType string `json:"mediaType"`
		Size      int64  `json:"size"`
		Digest    string `json:"digest"`
	}
	desc := func(file, mediaType string) descriptor {
		d, _ := fileDigest(file) // index checked every name
		return descriptor{MediaType: mediaType, Size: r.blobs[d].size, Digest: d}
	}
	m := struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Config        descriptor   `json:"config"`
		Layers        []descriptor `json:"layers"`
	}{SchemaVersion: 2, MediaType: mediaTypeManifest, Config: desc(e.Config, mediaTypeConfig), Layers: []descriptor{}}
	for _, l := range e.Layers {
		m.Layers = append(m.Layers, desc(l, mediaTypeLayer))
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tarball, err)
	}
	return data, nil
}

// serve starts serving on addr's free port.
func (r *registry) serve(addr netip.Addr) error {
	l, err := net.Listen("tcp", netip.AddrPortFrom(addr, 0).String())
	if err != nil {
		return fmt.Errorf("the image registry: %w", err)
	}
	r.addr = l.Addr().String()
	r.server = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second, ErrorLog: r.log}
	go func() { _ = r.server.Serve(l) }()
	return nil
}

// close stops serving and closes the log.
func (r *registry) close() error {
	var err error
	if r.server != nil {
		err = r.server.Close()
	}
	return errors.Join(err, r.logFile.Close())
}

// ServeHTTP answers /v2/, /v2/NAME/manifests/REFERENCE and
// /v2/NAME/blobs/DIGEST, for GET and HEAD.
func (r *registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	status := r.respond(w, req)
	r.log.Printf("%s %s %d", req.Method, req.URL.Path, status)
}

func (r *registry) respond(w http.ResponseWriter, req *http.Request) int {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return registryError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", "this registry only serves pulls")
	}
	path, ok := strings.CutPrefix(req.URL.Path, "/v2/")
	if !ok {
		return registryError(w, http.StatusNotFound, "NOT_FOUND", req.URL.Path)
	}
	if path == "" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
		return http.StatusOK
	}
	if i := strings.LastIndex(path, "/manifests/"); i > 0 {
		repo, ref := path[:i], path[i+len("/manifests/"):]
		m, ok := r.manifests[repo+":"+ref]
		if !ok {
			return registryError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", fmt.Sprintf("no image %s:%s here: the nodes' registry serves only the images of their tarballs (none when the run is offline)", repo, ref))
		}
		w.Header().Set("Content-Type", mediaTypeManifest)
		w.Header().Set("Docker-Content-Digest", fmt.Sprintf("sha256:%x", sha256.Sum256(m)))
		http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(m))
		return http.StatusOK
	}
	if i := strings.LastIndex(path, "/blobs/"); i > 0 {
		digest := path[i+len("/blobs/"):]
		b, ok := r.blobs[digest]
		if !ok {
			return registryError(w, http.StatusNotFound, "BLOB_UNKNOWN", digest)
		}
		f, err := os.Open(b.tarball)
		if err != nil {
			return registryError(w, http.StatusInternalServerError, "UNKNOWN", err.Error())
		}
		defer f.Close()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Docker-Content-Digest", digest)
		http.ServeContent(w, req, "", time.Time{}, io.NewSectionReader(f, b.offset, b.size))
		return http.StatusOK
	}
	return registryError(w, http.StatusNotFound, "NAME_UNKNOWN", path)
}

// registryError writes the distribution API's error body.
func registryError(w http.ResponseWriter, status int, code, message string) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": code, "message": message}}})
	return status
}

// writeHostsDir writes containerd's hosts directory for a node: every
// registry the images come from resolves to this registry, with no
// fallback to the real one (server, the fallback, is this registry too).
// containerd 1.6 refuses a hosts.toml without a host table, and then
// falls back to the real registry: hence both.
func (r *registry) writeHostsDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	for _, host := range r.hosts {
		hosts := fmt.Sprintf(`# %[1]s's images come from the nodes' local registry, which serves the images of their tarballs.
server = "http://%[2]s"

[host."http://%[2]s"]
  capabilities = ["pull", "resolve"]
`, host, r.addr)
		if err := os.MkdirAll(filepath.Join(dir, host), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, host, "hosts.toml"), []byte(hosts), 0o644); err != nil {
			return err
		}
	}
	return nil
}
