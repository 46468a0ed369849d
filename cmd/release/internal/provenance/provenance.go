// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package provenance writes the SLSA v1 provenance of a release's binary,
// as an in-toto statement, from what the binary records of its build.
package provenance

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/turnstile-k8s/turnstile/build/stamp"
)

// The in-toto and SLSA types a provenance statement names
// (https://slsa.dev/spec/v1.0/provenance).
const (
	statementType  = "https://in-toto.io/Statement/v1"
	provenanceType = "https://slsa.dev/provenance/v1"
)

// Statement is an in-toto v1 statement whose predicate is SLSA v1
// provenance: what `cosign attest --type slsaprovenance1` attaches to an
// image (with the image as the subject) and what a verifier of the binary
// alone reads.
type Statement struct {
	Type          string               `json:"_type"`
	Subject       []resourceDescriptor `json:"subject"`
	PredicateType string               `json:"predicateType"`
	Predicate     provenance           `json:"predicate"`
}

type provenance struct {
	BuildDefinition buildDefinition `json:"buildDefinition"`
	RunDetails      runDetails      `json:"runDetails"`
}

type buildDefinition struct {
	BuildType            string               `json:"buildType"`
	ExternalParameters   externalParameters   `json:"externalParameters"`
	InternalParameters   internalParameters   `json:"internalParameters"`
	ResolvedDependencies []resourceDescriptor `json:"resolvedDependencies"`
}

// externalParameters are what the person who ran the release chose: the
// source and its commit, the command, the platform.
type externalParameters struct {
	Source   string `json:"source"`
	Command  string `json:"command"`
	Platform string `json:"platform"`
}

// internalParameters are what the Makefile chose: the go build command
// that command ran, and the settings go build recorded in the binary.
type internalParameters struct {
	GoBuild       string            `json:"goBuild"`
	BuildSettings map[string]string `json:"buildSettings"`
}

type runDetails struct {
	Builder builder `json:"builder"`
}

type builder struct {
	ID string `json:"id"`
}

type resourceDescriptor struct {
	Name   string            `json:"name,omitempty"`
	URI    string            `json:"uri,omitempty"`
	Digest map[string]string `json:"digest,omitempty"`
}

// New is the SLSA v1 provenance of the binary s, whose
// file is name with the given sha256: built from source at s.Commit by
// `make release` (command), with the toolchain and every module it links
// as resolved dependencies, each module with its go.sum hash as an in-toto
// dirHash1. It has no time in it, so a rebuild writes the same bytes.
func New(s *stamp.Stamp, name, sha256, source, command string) (*Statement, error) {
	source = strings.TrimSuffix(source, "/")
	settings := map[string]string{}
	for _, kv := range s.Settings {
		settings[kv.Key] = kv.Value
	}
	deps := []resourceDescriptor{
		{Name: "source", URI: "git+" + source + ".git@" + s.Commit, Digest: map[string]string{"gitCommit": s.Commit}},
		// The toolchain as GOTOOLCHAIN fetches it for the machine that ran
		// the build: the module golang.org/toolchain.
		{Name: "go", URI: "pkg:golang/golang.org/toolchain@v0.0.1-" + strings.Fields(s.GoVersion)[0] + "." + runtime.GOOS + "-" + runtime.GOARCH},
	}
	for _, m := range s.Deps {
		d := resourceDescriptor{URI: "pkg:golang/" + m.Path + "@" + m.Version}
		if m.Sum != "" {
			h, err := dirHash1(m.Sum)
			if err != nil {
				return nil, fmt.Errorf("%s: module %s@%s: %w", s.Path, m.Path, m.Version, err)
			}
			d.Digest = map[string]string{"dirHash1": h}
		}
		deps = append(deps, d)
	}
	var env []string
	for _, k := range []string{"GOOS", "GOARCH", "CGO_ENABLED", "GOFIPS140"} {
		if v, ok := settings[k]; ok {
			env = append(env, k+"="+v)
		}
	}
	goBuild := strings.Join(env, " ") + " go build -trimpath -ldflags '" + settings["-ldflags"] + "' -o " + name + " ./cmd/kube-apiserver"
	return &Statement{
		Type:          statementType,
		Subject:       []resourceDescriptor{{Name: name, Digest: map[string]string{"sha256": sha256}}},
		PredicateType: provenanceType,
		Predicate: provenance{
			BuildDefinition: buildDefinition{
				BuildType:            source + "/blob/" + s.Commit + "/docs/release.md#provenance",
				ExternalParameters:   externalParameters{Source: source + ".git@" + s.Commit, Command: command, Platform: s.Platform()},
				InternalParameters:   internalParameters{GoBuild: goBuild, BuildSettings: settings},
				ResolvedDependencies: deps,
			},
			RunDetails: runDetails{Builder: builder{ID: source + "/blob/" + s.Commit + "/Makefile#release"}},
		},
	}, nil
}

// dirHash1 turns a go.sum hash (h1:<base64>) into in-toto's dirHash1
// (the same sha256, in lowercase hexadecimal).
func dirHash1(sum string) (string, error) {
	b64, ok := strings.CutPrefix(sum, "h1:")
	if !ok {
		return "", fmt.Errorf("go.sum hash %q is not h1:<base64>", sum)
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != 32 {
		return "", fmt.Errorf("go.sum hash %q is not h1:<base64 of 32 bytes>", sum)
	}
	return hex.EncodeToString(raw), nil
}

func Write(w io.Writer, st *Statement) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(st)
}
