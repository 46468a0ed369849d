// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package assemble

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/turnstile-k8s/turnstile/build/oci"
)

// krewManifest is the krew plugin manifest the release writes for
// kubectl-psp, psp.yaml: krew names a plugin after its manifest's file.
const krewManifest = "psp.yaml"

// kubectlPSPBinary is kubectl-psp's file name on goos: kubectl finds a
// plugin on Windows only with the .exe.
func kubectlPSPBinary(goos string) string {
	if goos == "windows" {
		return "kubectl-psp.exe"
	}
	return "kubectl-psp"
}

// The krew manifest's schema (krew.googlecontainertools.github.com/v1alpha2
// Plugin, sigs.k8s.io/krew/pkg/index): the fields the release fills.
type krewPlugin struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       krewPluginSpec    `json:"spec"`
}

type krewPluginSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description"`
	Platforms        []krewPlatform `json:"platforms"`
}

type krewPlatform struct {
	Selector metav1.LabelSelector `json:"selector"`
	URI      string               `json:"uri"`
	Sha256   string               `json:"sha256"`
	Files    []krewFile           `json:"files"`
	Bin      string               `json:"bin"`
}

type krewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// releaseKubectlPSP archives the kubectl-psp binary of each platform, found
// in -kubectl-psp-dir as kubectl-psp-<os>-<arch>, into
// kubectl-psp-<os>-<arch>.tar.gz in the release (add lists each), and
// writes the krew manifest for them, whose URIs are where the release is
// published (source's releases/download/<version>/) and whose checksums
// are the archives': krew installs from the manifest with --archive
// offline, checking the archive against it. The archives are reproducible:
// fixed order, times (created) and owners, and gzip without a name or time.
func releaseKubectlPSP(c Config, version string, created time.Time, add func(name, platform string) (string, error)) error {
	plugin := krewPlugin{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   metav1.ObjectMeta{Name: strings.TrimSuffix(krewManifest, ".yaml")},
		Spec: krewPluginSpec{
			Version:          version,
			Homepage:         c.Source,
			ShortDescription: "Leave PodSecurityPolicy: which level each workload meets, and what replaces the policies",
			Description: "kubectl psp report says, for every workload, the PodSecurityPolicy that admits it, what the\n" +
				"policy changes and the strictest Pod Security Standards level it meets; convert prints the\n" +
				"replacement (Pod Security Admission labels and admission policies); verify decides workloads\n" +
				"and generated pods both ways and prints every disagreement. It writes nothing to the cluster.\n",
		},
	}
	for _, p := range c.KubectlPSPPlatforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok || goos == "" || goarch == "" {
			return fmt.Errorf("-kubectl-psp-platforms: %q is not os/arch", p)
		}
		bin := kubectlPSPBinary(goos)
		source := filepath.Join(c.KubectlPSPDir, "kubectl-psp-"+goos+"-"+goarch)
		archive := "kubectl-psp-" + goos + "-" + goarch + ".tar.gz"
		err := writeFile(filepath.Join(c.Dir, archive), func(w io.Writer) error {
			zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
			if err != nil {
				return err
			}
			if err := oci.LayerTar(zw, []oci.Entry{oci.FileFrom(bin, 0o755, source)}, created); err != nil {
				return err
			}
			return zw.Close()
		})
		if err != nil {
			return err
		}
		sum, err := add(archive, p)
		if err != nil {
			return err
		}
		plugin.Spec.Platforms = append(plugin.Spec.Platforms, krewPlatform{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"os": goos, "arch": goarch}},
			URI:      c.Source + "/releases/download/" + url.PathEscape(version) + "/" + archive,
			Sha256:   sum,
			Files:    []krewFile{{From: bin, To: "."}},
			Bin:      bin,
		})
	}
	data, err := yaml.Marshal(plugin)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(c.Dir, krewManifest), func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		return err
	}
	_, err = add(krewManifest, "")
	return err
}
