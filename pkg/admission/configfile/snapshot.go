// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package configfile

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/kubernetes/plugin/pkg/admission/imagepolicy"
	"k8s.io/kubernetes/plugin/pkg/admission/podnodeselector"
)

// Snapshot is the admission configuration as read at one moment: the
// file's bytes and those of every file its entries name by path. Everything
// this package says of a configuration it says of a snapshot, and reads
// nothing more: a reload validates a snapshot and applies the same one, so
// a file written while the apiserver reads it cannot make it apply bytes it
// never checked; at worst the next look sees a change and reloads again.
type Snapshot struct {
	// File is the configuration file, as given to the flag.
	File string
	// files holds each file read, keyed by path as resolved (and mapped),
	// with its bytes or why it could not be read.
	files map[string]content
	// paths is where each entry's path was read, keyed by the path as the
	// entry wrote it.
	paths map[string]string
}

type content struct {
	data []byte
	err  error
}

// Read takes a snapshot of file and of the files its entries name by path.
// mapPath, when not nil, maps an absolute path that an entry names to where
// the file is on this machine (`--validate-only --from-manifest` maps the
// container's paths to the host's). It never fails: a file it cannot read
// is kept with its error, which Problems reports.
func Read(file string, mapPath func(string) string) *Snapshot {
	if mapPath == nil {
		mapPath = func(p string) string { return p }
	}
	s := &Snapshot{File: file, files: map[string]content{}, paths: map[string]string{}}
	data, err := readFile(file)
	s.files[file] = content{data, err}
	if err != nil {
		return s
	}
	for _, e := range entries(data) {
		if e.Path == "" {
			continue
		}
		if _, done := s.paths[e.Path]; done {
			continue
		}
		resolved := resolve(file, e.Path)
		if filepath.IsAbs(e.Path) {
			resolved = mapPath(resolved)
		}
		s.paths[e.Path] = resolved
		if _, done := s.files[resolved]; !done {
			data, err := readFile(resolved)
			s.files[resolved] = content{data, err}
		}
	}
	return s
}

// entries are the plugin entries of an AdmissionConfiguration as upstream's
// loader decodes it; none for a file that does not decode as one.
func entries(data []byte) []apiserver.AdmissionPluginConfiguration {
	obj, _ := runtime.Decode(configCodecs.UniversalDecoder(), data)
	if config, ok := obj.(*apiserver.AdmissionConfiguration); ok {
		return config.Plugins
	}
	return nil
}

// main is the configuration file's bytes, or why it could not be read.
func (s *Snapshot) main() ([]byte, error) {
	c := s.files[s.File]
	return c.data, c.err
}

// entryFile is the file an entry's path names, as resolved and read.
func (s *Snapshot) entryFile(p string) (resolved string, data []byte, err error) {
	resolved, ok := s.paths[p]
	if !ok {
		// Read saw every entry's path; one it did not see is a bug here.
		return resolve(s.File, p), nil, fmt.Errorf("path %q was not read with the configuration file", p)
	}
	c := s.files[resolved]
	return resolved, c.data, c.err
}

// Digest is one hash over every file of the snapshot, and the errors of
// those that could not be read, so that a repaired file is a change too.
func (s *Snapshot) Digest() []byte {
	contents := make(map[string][]byte, len(s.files))
	for p, c := range s.files {
		contents[p] = c.data
		if c.err != nil {
			contents[p] = []byte("error: " + c.err.Error())
		}
	}
	return Digest(contents)
}

// Digest is one hash over named contents, in the names' order.
func Digest(contents map[string][]byte) []byte {
	h := sha256.New()
	for _, name := range sortedKeys(contents) {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(contents[name]))
		h.Write(contents[name])
	}
	return h.Sum(nil)
}

// inline reports an entry that gives its configuration inline.
func inline(e apiserver.AdmissionPluginConfiguration) bool {
	if e.Configuration == nil {
		return false
	}
	raw := bytes.TrimSpace(e.Configuration.Raw)
	return len(raw) != 0 && string(raw) != "null"
}

// PluginConfigs returns the configuration each of plugins gets, exactly
// the bytes upstream's loader (k8s.io/apiserver/pkg/admission's
// ReadAdmissionConfiguration and ConfigFor) would hand the plugin's factory,
// taken from the snapshot; a plugin without one is absent. Call it after
// Problems found none.
func (s *Snapshot) PluginConfigs(plugins []string) (map[string][]byte, error) {
	data, err := s.main()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", Flag, s.File, err)
	}
	configs := map[string][]byte{}
	obj, err := runtime.Decode(configCodecs.UniversalDecoder(), data)
	if err != nil {
		typeless := runtime.IsMissingVersion(err) || runtime.IsMissingKind(err) || runtime.IsNotRegisteredError(err)
		if _, legacy := legacyKeys(data); !typeless || !legacy {
			return nil, fmt.Errorf("%s %s: %w", Flag, s.File, err)
		}
		// Upstream gives a legacy file whole to the two plugins that read one.
		for _, name := range plugins {
			if name == imagepolicy.PluginName || name == podnodeselector.PluginName {
				configs[name] = data
			}
		}
		return configs, nil
	}
	config, ok := obj.(*apiserver.AdmissionConfiguration)
	if !ok {
		return nil, fmt.Errorf("%s %s: %s is not an admission configuration", Flag, s.File, typeMeta(data))
	}
	want := sets.New(plugins...)
	for _, e := range config.Plugins {
		if _, seen := configs[e.Name]; seen || !want.Has(e.Name) {
			continue // upstream reads the first entry
		}
		switch {
		case e.Configuration != nil:
			configs[e.Name] = e.Configuration.Raw
		case e.Path != "":
			_, data, err := s.entryFile(e.Path)
			if err != nil {
				return nil, fmt.Errorf("%s %s: plugin %s: %w", Flag, s.File, e.Name, err)
			}
			configs[e.Name] = data
		}
	}
	return configs, nil
}

// EntrySources says where each plugin entry takes its configuration from:
// "path <resolved path>" or "inline".
func (s *Snapshot) EntrySources() map[string]string {
	data, err := s.main()
	if err != nil {
		return nil
	}
	sources := map[string]string{}
	for _, e := range entries(data) {
		if _, seen := sources[e.Name]; seen || e.Name == "" {
			continue // upstream reads the first entry
		}
		switch {
		case e.Path != "":
			sources[e.Name] = "path " + s.paths[e.Path]
		case inline(e):
			sources[e.Name] = "inline"
		}
	}
	return sources
}

// WritableByOthers describes each file of the snapshot that someone other
// than its owner may change: a file its group or everyone may write, or one
// in a directory its group or everyone may write without the sticky bit
// (anyone there can rename another file over it). The apiserver applies
// what it finds in them within a second, so whoever can write them decides
// admission (docs/security.md). It looks at modes only, never at contents.
func (s *Snapshot) WritableByOthers() []string {
	var found []string
	for _, f := range sortedKeys(s.files) {
		if info, err := os.Stat(f); err == nil && info.Mode().Perm()&0o022 != 0 {
			found = append(found, fmt.Sprintf("%s is writable by its group or everyone (mode %#o)", f, info.Mode().Perm()))
		}
		dir := filepath.Dir(f)
		if info, err := os.Stat(dir); err == nil && info.Mode().Perm()&0o022 != 0 && info.Mode()&os.ModeSticky == 0 {
			found = append(found, fmt.Sprintf("%s is in %s, which its group or everyone may write (mode %#o)", f, dir, info.Mode().Perm()))
		}
	}
	return found
}
