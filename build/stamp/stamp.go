// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package stamp says what a built kube-apiserver is without running it: its
// platform and module graph from the build information that Go embeds
// (debug/buildinfo), and its version, commit and date from the -ldflags that
// hack/ldflags.sh gave the build. A binary for another architecture cannot
// be asked with --version on the build host, and Go leaves -ldflags out of
// the build information under -trimpath (go.dev/issue/52372), so the release
// tools are handed the same -ldflags string the build used.
package stamp

import (
	"debug/buildinfo"
	"fmt"
	"runtime/debug"
	"strings"
	"time"
)

// versionPackage is where hack/ldflags.sh sets the version, as upstream's
// release build does.
const versionPackage = "k8s.io/component-base/version"

// Stamp is one binary's identity.
type Stamp struct {
	// Path is the binary's file.
	Path string
	// Version is gitVersion, for example v1.36.3+turnstile.1.
	Version string
	// Commit and TreeState are gitCommit and gitTreeState ("clean" or "dirty").
	Commit, TreeState string
	// BuildDate is buildDate, the last commit's date.
	BuildDate time.Time
	// GoVersion is the toolchain, for example go1.26.8.
	GoVersion string
	// OS and Arch are GOOS and GOARCH.
	OS, Arch string
	// FIPS140 is the Go Cryptographic Module the binary was built with
	// (GOFIPS140, for example v1.0.0-c2097c7c), which also turns FIPS
	// 140-3 mode on by default; empty for a build without it.
	FIPS140 string
	// Main is the main module's path; Deps are the modules linked in, with
	// replacements already applied (the code that was built).
	Main string
	Deps []Module
	// Settings are the build settings the binary records (-trimpath,
	// -ldflags, CGO_ENABLED, GOOS, GOARCH, GOAMD64 and the like), in the
	// order go build wrote them: how it was built, for its provenance.
	Settings []debug.BuildSetting
}

// Module is a module linked into the binary.
type Module struct {
	Path, Version string
	// Sum is the go.sum hash (h1:...), empty for replacements by a directory.
	Sum string
}

// Read reads the stamp of the binary at path that was built with ldflags.
// It fails when the binary carries no Go build information or ldflags no
// version.
func Read(path, ldflags string) (*Stamp, error) {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: reading Go build information: %w", path, err)
	}
	s := &Stamp{Path: path, GoVersion: info.GoVersion, Main: info.Main.Path, Settings: info.Settings}
	for _, kv := range info.Settings {
		switch kv.Key {
		case "GOOS":
			s.OS = kv.Value
		case "GOARCH":
			s.Arch = kv.Value
		case "GOFIPS140":
			if kv.Value != "off" {
				s.FIPS140 = kv.Value
			}
		}
	}
	vars := linkerVars(ldflags)
	s.Version, s.Commit, s.TreeState = vars[versionPackage+".gitVersion"], vars[versionPackage+".gitCommit"], vars[versionPackage+".gitTreeState"]
	if s.Version == "" {
		return nil, fmt.Errorf("-ldflags %q has no -X %s.gitVersion (pass the output of hack/ldflags.sh)", ldflags, versionPackage)
	}
	if date := vars[versionPackage+".buildDate"]; date != "" {
		if s.BuildDate, err = time.Parse(time.RFC3339, date); err != nil {
			return nil, fmt.Errorf("-ldflags: buildDate %q: %w", date, err)
		}
	}
	for _, d := range info.Deps {
		s.Deps = append(s.Deps, module(d))
	}
	return s, nil
}

// Platform is OS/Arch, as in linux/arm64.
func (s *Stamp) Platform() string { return s.OS + "/" + s.Arch }

// KubernetesVersion is the upstream release the binary is built on, its
// version without Turnstile's build metadata: v1.37.2 of
// v1.37.2+turnstile.1, the kubernetesVersion kubeadm names images after.
func (s *Stamp) KubernetesVersion() string {
	version, _, _ := strings.Cut(s.Version, "+")
	return version
}

// Dep returns the module at path, or false when it is not linked in.
func (s *Stamp) Dep(path string) (Module, bool) {
	for _, d := range s.Deps {
		if d.Path == path {
			return d, true
		}
	}
	return Module{}, false
}

// module is what was built for d: its replacement when it has one. Every
// k8s.io staging module is replaced by its published version, and that
// version, not the v0.0.0 placeholder, is what the binary contains.
func module(d *debug.Module) Module {
	m := Module{Path: d.Path, Version: d.Version, Sum: d.Sum}
	if r := d.Replace; r != nil {
		m.Version, m.Sum = r.Version, r.Sum
		if r.Version == "" { // replaced by a directory
			m.Version = "(" + r.Path + ")"
		}
	}
	return m
}

// linkerVars returns the -X name=value pairs of an -ldflags string.
func linkerVars(ldflags string) map[string]string {
	vars := map[string]string{}
	fields := strings.Fields(ldflags)
	for i := 0; i+1 < len(fields); i++ {
		if fields[i] != "-X" {
			continue
		}
		if name, value, ok := strings.Cut(fields[i+1], "="); ok {
			vars[name] = value
		}
		i++
	}
	return vars
}
