// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sbom describes a built binary as an SPDX 2.3 document: the binary
// itself, with its checksum, commit and platform, and every Go module linked
// into it at the version that was built, with its package URL, plus the Go
// standard library at the toolchain's version. It is made from the build
// information that Go embeds in the binary (read by build/stamp), so it
// lists exactly what the binary contains: not go.mod's whole graph, which
// also holds test and tool dependencies.
//
// The document is reproducible: its namespace and creation time depend only
// on the binary.
package sbom

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx"
	"github.com/spdx/tools-golang/spdx/v2/common"

	"github.com/turnstile-k8s/turnstile/build/stamp"
)

// Binary is the binary to describe.
type Binary struct {
	*stamp.Stamp
	// Name is the file's name in the release, for example
	// kube-apiserver-linux-amd64.
	Name string
	// SHA256 is the file's checksum, in hex.
	SHA256 string
	// Source is the repository's URL, for the download location.
	Source string
}

const noAssertion = "NOASSERTION"

// Document is the SPDX document for b.
func Document(b Binary) *spdx.Document {
	binaryID := common.ElementID("Package-" + b.Name)
	doc := &spdx.Document{
		SPDXVersion:       spdx.Version,
		DataLicense:       spdx.DataLicense,
		SPDXIdentifier:    "DOCUMENT",
		DocumentName:      b.Name,
		DocumentNamespace: strings.TrimSuffix(b.Source, "/") + "/spdx/" + b.Name + "-" + b.SHA256,
		CreationInfo: &spdx.CreationInfo{
			Creators: []common.Creator{{CreatorType: "Tool", Creator: "turnstile-build-release"}},
			Created:  b.BuildDate.UTC().Format("2006-01-02T15:04:05Z"),
		},
	}
	doc.Packages = append(doc.Packages, &spdx.Package{
		PackageName:             "kube-apiserver",
		PackageSPDXIdentifier:   binaryID,
		PackageVersion:          b.Version,
		PackageFileName:         b.Name,
		PackageDownloadLocation: "git+" + strings.TrimSuffix(b.Source, "/") + ".git@" + b.Commit,
		PackageChecksums:        []common.Checksum{{Algorithm: common.SHA256, Value: b.SHA256}},
		PackageLicenseConcluded: noAssertion,
		PackageLicenseDeclared:  noAssertion,
		PackageCopyrightText:    noAssertion,
		PrimaryPackagePurpose:   "APPLICATION",
		BuiltDate:               doc.CreationInfo.Created,
		PackageComment: "Turnstile's kube-apiserver, module " + b.Main + ", built with " + b.GoVersion +
			" for " + b.Platform() + " from commit " + b.Commit + " (tree " + b.TreeState + ")",
	})
	doc.Relationships = append(doc.Relationships, &spdx.Relationship{
		RefA: common.MakeDocElementID("", "DOCUMENT"), RefB: common.MakeDocElementID("", string(binaryID)), Relationship: "DESCRIBES",
	})
	deps := append([]stamp.Module{{Path: "stdlib", Version: b.GoVersion}}, b.Deps...)
	for _, m := range deps {
		id := common.ElementID("Package-go-module-" + idUnsafe.ReplaceAllString(m.Path+"-"+m.Version, "-"))
		p := &spdx.Package{
			PackageName:             m.Path,
			PackageSPDXIdentifier:   id,
			PackageVersion:          m.Version,
			PackageDownloadLocation: noAssertion,
			PackageLicenseConcluded: noAssertion,
			PackageLicenseDeclared:  noAssertion,
			PackageCopyrightText:    noAssertion,
			PrimaryPackagePurpose:   "LIBRARY",
			PackageExternalReferences: []*spdx.PackageExternalReference{{
				Category: common.CategoryPackageManager, RefType: common.TypePackageManagerPURL, Locator: purl(m),
			}},
		}
		if m.Sum != "" {
			p.PackageComment = "go.sum " + m.Sum
		}
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, &spdx.Relationship{
			RefA: common.MakeDocElementID("", string(binaryID)), RefB: common.MakeDocElementID("", string(id)), Relationship: "DEPENDS_ON",
		})
	}
	return doc
}

// Write writes doc as indented JSON.
func Write(w io.Writer, doc *spdx.Document) error {
	return spdxjson.Write(doc, w, spdxjson.Indent("  "))
}

// idUnsafe matches what an SPDX identifier may not hold (letters, digits,
// '.' and '-' only).
var idUnsafe = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// purl is the module's package URL (github.com/package-url/purl-spec, type
// golang): pkg:golang/k8s.io/kubernetes@v1.36.3.
func purl(m stamp.Module) string {
	return "pkg:golang/" + purlEscape(m.Path) + "@" + purlEscape(m.Version)
}

// purlEscape percent-encodes what a purl's name and version may not hold
// as is; '/' stays, as the namespace separator.
func purlEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("/.-_~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
