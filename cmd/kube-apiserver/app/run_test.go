// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package app

import (
	"crypto/sha256"
	"encoding/hex"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/version"
)

// The aggregator creates the APIService v1beta1.policy only while upstream's
// linked priority table still lists policy/v1beta1.
func TestAPIVersionPrioritiesListPolicyV1beta1(t *testing.T) {
	if len(apiVersionPriorities) == 0 {
		t.Fatal("upstream's apiVersionPriorities is empty: the go:linkname no longer finds it")
	}
	if _, ok := apiVersionPriorities[schema.GroupVersion{Group: "policy", Version: "v1beta1"}]; !ok {
		t.Error("upstream's apiVersionPriorities lacks policy/v1beta1")
	}
}

// upstreamRunDigests are the digests of upstream's Run and
// CreateServerChain that run and createServerChain follow, on each
// supported line (lines/README.md).
var upstreamRunDigests = map[string]string{
	// v1.38.0-beta.0: Run logs the build through the context's logger
	// (runsteps_k8s1.38.go, a held pair).
	"1.38": "1132d1fd1f5bebcedb1027cc0e84be4ee07e9bd1a77fd35ef1d96de606399d28",
	"1.37": "fb122f864c7117d658bba7ff2f379487f54b43a6c5a95f908f6839e04d3bb7de",
	"1.36": "3848b43c9b5c61477047c631db49e44de80ca86732b194a5cfa19ccea4121094",
}

// run and createServerChain follow upstream's Run and CreateServerChain step
// for step. This fails when upstream changes either function, so that a
// Kubernetes bump revisits ours: check the change, then update the digest.
func TestUpstreamRunUnchanged(t *testing.T) {
	want, ok := upstreamRunDigests[version.DefaultKubeBinaryVersion]
	if !ok {
		t.Errorf("upstreamRunDigests has no entry for line %s", version.DefaultKubeBinaryVersion)
	}
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(strings.TrimSpace(string(dir)), "cmd/kube-apiserver/app/server.go")
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	found := 0
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && (fn.Name.Name == "Run" || fn.Name.Name == "CreateServerChain") {
			if err := format.Node(h, fset, fn); err != nil {
				t.Fatal(err)
			}
			found++
		}
	}
	if found != 2 {
		t.Fatalf("%s: found %d of Run and CreateServerChain", file, found)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Errorf("upstream's Run or CreateServerChain changed (digest %s, want %s): bring run and createServerChain in line, then update the digest", got, want)
	}
}
