// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package provenance

import (
	"bytes"
	"encoding/json"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/turnstile-k8s/turnstile/build/stamp"
)

func TestDirHash1(t *testing.T) {
	for _, tc := range []struct{ sum, want, err string }{
		// in-toto's own example (spec/v1/digest_set.md).
		{sum: "h1:Khu2En+0gcYPZ2kuIihfswbzxv/mIHXgzPZ018Oty48=", want: "2a1bb6127fb481c60f67692e22285fb306f3c6ffe62075e0ccf674d7c3adcb8f"},
		{sum: "Khu2En+0gcYPZ2kuIihfswbzxv/mIHXgzPZ018Oty48=", err: "is not h1:<base64>"},
		{sum: "h1:not base64!", err: "is not h1:<base64 of 32 bytes>"},
		{sum: "h1:AAAA", err: "is not h1:<base64 of 32 bytes>"},
	} {
		got, err := dirHash1(tc.sum)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("dirHash1(%q) = %q, %v; want %q, error containing %q", tc.sum, got, err, tc.want, tc.err)
		}
	}
}

func TestProvenanceStatement(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, err := stamp.Read(self, "-X k8s.io/component-base/version.gitVersion=v1.37.2+turnstile.1 -X k8s.io/component-base/version.gitCommit=0123abc")
	if err != nil {
		t.Fatal(err)
	}
	s.Deps = []stamp.Module{
		{Path: "k8s.io/apiserver", Version: "v0.37.2", Sum: "h1:Khu2En+0gcYPZ2kuIihfswbzxv/mIHXgzPZ018Oty48="},
		{Path: "example.test/local", Version: "(../local)"},
	}
	s.Settings = []debug.BuildSetting{{Key: "-ldflags", Value: "-s -w"}, {Key: "CGO_ENABLED", Value: "0"}, {Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"}}
	st, err := New(s, "kube-apiserver-linux-arm64", "ab12", "https://example.test/turnstile/", "make release")
	if err != nil {
		t.Fatal(err)
	}
	var first, second bytes.Buffer
	if err := Write(&first, st); err != nil {
		t.Fatal(err)
	}
	again, _ := New(s, "kube-apiserver-linux-arm64", "ab12", "https://example.test/turnstile/", "make release")
	if err := Write(&second, again); err != nil || !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Errorf("two statements of one binary differ (%v):\n%s\n%s", err, first.String(), second.String())
	}
	var got map[string]any
	if err := json.Unmarshal(first.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"_type": "https://in-toto.io/Statement/v1"`,
		`"predicateType": "https://slsa.dev/provenance/v1"`,
		`"name": "kube-apiserver-linux-arm64"`, `"sha256": "ab12"`,
		`"source": "https://example.test/turnstile.git@0123abc"`, `"command": "make release"`,
		`"goBuild": "GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o kube-apiserver-linux-arm64 ./cmd/kube-apiserver"`,
		`"uri": "git+https://example.test/turnstile.git@0123abc"`, `"gitCommit": "0123abc"`,
		`"uri": "pkg:golang/golang.org/toolchain@v0.0.1-go`,
		`"uri": "pkg:golang/k8s.io/apiserver@v0.37.2"`, `"dirHash1": "2a1bb6127fb481c60f67692e22285fb306f3c6ffe62075e0ccf674d7c3adcb8f"`,
		`"uri": "pkg:golang/example.test/local@(../local)"`,
		`"id": "https://example.test/turnstile/blob/0123abc/Makefile#release"`,
	} {
		if !strings.Contains(first.String(), want) {
			t.Errorf("the Statement lacks %s:\n%s", want, first.String())
		}
	}

	s.Deps[0].Sum = "h1:AAAA"
	if _, err := New(s, "kube-apiserver-linux-arm64", "ab12", "https://example.test/turnstile", "make release"); err == nil || !strings.Contains(err.Error(), "k8s.io/apiserver@v0.37.2") {
		t.Errorf("a module with a bad go.sum hash: %v, want an error naming it", err)
	}
}
