// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package sbom

import (
	"bytes"
	"strings"
	"testing"
	"time"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdxlib"

	"github.com/turnstile-k8s/turnstile/build/stamp"
)

var binary = Binary{
	Stamp: &stamp.Stamp{
		Version: "v1.36.3+turnstile.1", Commit: "0123abc", TreeState: "clean",
		BuildDate: time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC), GoVersion: "go1.26.8", OS: "linux", Arch: "arm64",
		Main: "github.com/turnstile-k8s/turnstile",
		Deps: []stamp.Module{
			{Path: "k8s.io/kubernetes", Version: "v1.36.3", Sum: "h1:k"},
			{Path: "go.etcd.io/etcd/server/v3", Version: "v3.6.8", Sum: "h1:e"},
			{Path: "github.com/MakeNowJust/heredoc", Version: "v1.0.0+incompatible"},
		},
	},
	Name:   "kube-apiserver-linux-arm64",
	SHA256: strings.Repeat("ab", 32),
	Source: "https://github.com/turnstile-k8s/turnstile",
}

// The document is valid SPDX that the SPDX library reads back: one
// described package, the binary, which depends on the standard library and
// on every module, each with its version and package URL.
func TestDocumentRoundTrips(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, Document(binary)); err != nil {
		t.Fatal(err)
	}
	doc, err := spdxjson.Read(&buf)
	if err != nil {
		t.Fatalf("reading the document back: %v", err)
	}
	if err := spdxlib.ValidateDocument(doc); err != nil {
		t.Errorf("invalid: %v", err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.DataLicense != "CC0-1.0" || doc.CreationInfo.Created != "2026-11-01T10:00:00Z" ||
		doc.DocumentNamespace != "https://github.com/turnstile-k8s/turnstile/spdx/kube-apiserver-linux-arm64-"+binary.SHA256 {
		t.Errorf("document header %+v %+v", doc, doc.CreationInfo)
	}
	described, err := spdxlib.GetDescribedPackageIDs(doc)
	if err != nil || len(described) != 1 {
		t.Fatalf("described packages %v, %v", described, err)
	}
	purls := map[string]string{}
	dependsOn := 0
	for _, r := range doc.Relationships {
		if r.Relationship == "DEPENDS_ON" && r.RefA.ElementRefID == described[0] {
			dependsOn++
		}
	}
	for _, p := range doc.Packages {
		if p.PackageSPDXIdentifier == described[0] {
			if p.PackageVersion != binary.Version || p.PackageChecksums[0].Value != binary.SHA256 ||
				p.PackageDownloadLocation != "git+https://github.com/turnstile-k8s/turnstile.git@0123abc" {
				t.Errorf("binary package %+v", p)
			}
			continue
		}
		purls[p.PackageName+" "+p.PackageVersion] = p.PackageExternalReferences[0].Locator
	}
	want := map[string]string{
		"stdlib go1.26.8":                                    "pkg:golang/stdlib@go1.26.8",
		"k8s.io/kubernetes v1.36.3":                          "pkg:golang/k8s.io/kubernetes@v1.36.3",
		"go.etcd.io/etcd/server/v3 v3.6.8":                   "pkg:golang/go.etcd.io/etcd/server/v3@v3.6.8",
		"github.com/MakeNowJust/heredoc v1.0.0+incompatible": "pkg:golang/github.com/MakeNowJust/heredoc@v1.0.0%2Bincompatible",
	}
	for k, v := range want {
		if purls[k] != v {
			t.Errorf("%s: purl %q, want %q", k, purls[k], v)
		}
	}
	if len(purls) != len(want) || dependsOn != len(want) {
		t.Errorf("%d module packages and %d DEPENDS_ON, want %d: %v", len(purls), dependsOn, len(want), purls)
	}
}

func TestDocumentIsReproducible(t *testing.T) {
	var a, b bytes.Buffer
	if err := Write(&a, Document(binary)); err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, Document(binary)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two documents for one binary differ")
	}
}

func TestPurlEscape(t *testing.T) {
	for in, want := range map[string]string{
		"k8s.io/api":          "k8s.io/api",
		"v0.0.0-2024_01~x":    "v0.0.0-2024_01~x",
		"v1.0.0+incompatible": "v1.0.0%2Bincompatible",
		"(../local dir)":      "%28../local%20dir%29",
	} {
		if got := purlEscape(in); got != want {
			t.Errorf("purlEscape(%q) = %q, want %q", in, got, want)
		}
	}
}
