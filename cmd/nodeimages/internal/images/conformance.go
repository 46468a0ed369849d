// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package images

import (
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"runtime"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/cmd/nodeimages/internal/debian"
)

// conformanceBinaries are what upstream's conformance image holds, built
// into -bin by make conformance-image: e2e.test, ginkgo and kubectl of the
// pinned release, and go-runner (test/conformance/image/go-runner).
var conformanceBinaries = []string{"e2e.test", "ginkgo", "kubectl", "go-runner"}

// conformanceEnv is test/conformance/image/Dockerfile's ENV, in its order.
var conformanceEnv = []string{
	envPath,
	`E2E_FOCUS=\[Conformance\]`,
	"E2E_SKIP=",
	"E2E_PROVIDER=local",
	"E2E_PARALLEL=1",
	"E2E_VERBOSITY=4",
	"RESULTS_DIR=/tmp/results",
	"KUBECONFIG=",
}

// RunConformance writes upstream's conformance image of version into
// -out/conformance.tar, on the e2e images' Debian root file system (kept in
// -out by make e2e-images; made here if it is not).
func RunConformance(w io.Writer, out, bin, kubernetes, version string) error {
	if kubernetes == "" || version == "" {
		return fmt.Errorf("-conformance needs -kubernetes (the k8s.io/kubernetes module's directory) and -kubernetes-version")
	}
	if err := need(bin, conformanceBinaries...); err != nil {
		return err
	}
	rootfs, err := debian.Tarball(w, out, "debian", debian.RootfsArgs())
	if err != nil {
		return err
	}
	entries, err := conformanceEntries(bin, kubernetes)
	if err != nil {
		return err
	}
	return buildAll(w, out, []spec{{
		image:  oci.ConformanceImage(version, runtime.GOARCH),
		rootfs: rootfs,
		layers: [][]oci.Entry{entries},
		config: oci.Config{Env: conformanceEnv, Entrypoint: []string{"kubeconformance"}, Created: created},
	}})
}

// conformanceEntries are the files test/conformance/image/Dockerfile
// copies: the Kubernetes tree's cluster/ as /kubernetes/cluster (e2e.test's
// --repo-root), the three binaries in /usr/local/bin, and go-runner as
// kubeconformance, the entrypoint, and as the legacy /run_e2e.sh and
// /gorunner.
func conformanceEntries(bin, kubernetes string) ([]oci.Entry, error) {
	binary := func(dest, name string) oci.Entry { return oci.FileFrom(dest, 0o755, filepath.Join(bin, name)) }
	entries := []oci.Entry{
		binary("usr/local/bin/ginkgo", "ginkgo"),
		binary("usr/local/bin/e2e.test", "e2e.test"),
		binary("usr/local/bin/kubectl", "kubectl"),
		binary("usr/local/bin/kubeconformance", "go-runner"),
		binary("run_e2e.sh", "go-runner"),
		binary("gorunner", "go-runner"),
	}
	cluster := filepath.Join(kubernetes, "cluster")
	err := filepath.WalkDir(cluster, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(kubernetes, path)
		if err != nil {
			return err
		}
		dest := filepath.ToSlash(filepath.Join("kubernetes", rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			entries = append(entries, oci.Dir(dest, 0o755))
		case d.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s: a symbolic link, which the module cache does not hold", path)
		case info.Mode()&0o111 != 0:
			// The module cache makes files read-only; the image has
			// them as a checkout would.
			entries = append(entries, oci.FileFrom(dest, 0o755, path))
		default:
			entries = append(entries, oci.FileFrom(dest, 0o644, path))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the Kubernetes tree's cluster/: %w", err)
	}
	return entries, nil
}
