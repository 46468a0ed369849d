// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package assemble

import (
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/turnstile-k8s/turnstile/build/stamp"
)

const notesFile = "RELEASE-NOTES.md"

// releaseNotes is RELEASE-NOTES.md: what the release is built from, its
// artifacts, and the commits since the previous tag.
type releaseNotes struct {
	stamp     *stamp.Stamp
	platforms []string
	tag       name.Tag
	// repository is the images' repository as the release was given it
	// (turnstile-k8s): kubeadm's imageRepository.
	repository string
	digest     string
	artifacts  []artifact
	// changes are "<short hash> <subject>" lines, newest first; since is
	// the previous tag, or "" when there is none.
	changes []string
	since   string
}

func (n releaseNotes) write(w io.Writer) error {
	s := n.stamp
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("# Turnstile %s", s.Version)
	p("")
	p("Upstream's kube-apiserver from **Kubernetes %s** with every documented admission controller built in.", dep(s, "k8s.io/kubernetes"))
	p("")
	p("- Kubernetes: k8s.io/kubernetes %s, staging modules (k8s.io/apiserver and the rest) %s", dep(s, "k8s.io/kubernetes"), dep(s, "k8s.io/apiserver"))
	p("- etcd client and embedded etcd: go.etcd.io/etcd/server/v3 %s", dep(s, "go.etcd.io/etcd/server/v3"))
	p("- Go: %s; platforms: %s", s.GoVersion, strings.Join(n.platforms, ", "))
	if s.FIPS140 != "" {
		p("- FIPS 140-3: built with the Go Cryptographic Module %s (GOFIPS140), with FIPS 140-3 mode on by default (GODEBUG fips140=on); the apiserver logs the mode and the module's version when it starts", s.FIPS140)
	} else {
		p("- FIPS 140-3: not built with the Go Cryptographic Module (make release FIPS=1 builds a release that is)")
	}
	tree := ""
	if s.TreeState != "clean" {
		tree = fmt.Sprintf(" (tree %s: this build cannot be reproduced from the commit)", s.TreeState)
	}
	p("- Commit: %s, %s%s", s.Commit, s.BuildDate.UTC().Format("2006-01-02 15:04:05 UTC"), tree)
	p("")
	p("## Image")
	p("")
	p("`%s`, image index `%s`:", n.tag.String(), n.digest)
	p("")
	p("```sh")
	p("ctr -n k8s.io images import --all-platforms kube-apiserver-%s.oci.tar   # containerd, every platform", n.tag.TagStr())
	p("docker load -i kube-apiserver-%s-linux-$(dpkg --print-architecture).tar   # Docker, this machine's platform", n.tag.TagStr())
	p("```")
	p("")
	if slices.ContainsFunc(n.artifacts, func(a artifact) bool { return strings.HasPrefix(a.name, "airgap-images-") }) {
		version := s.KubernetesVersion()
		p("## Air-gap install")
		p("")
		p("Every image `kubeadm init` and `kubeadm join` run for %s, ours the kube-apiserver, in one archive per platform, with its list of names and digests (`airgap-images-<os>-<arch>.txt`). On each node, with containerd's sandbox image set to the bundle's pause (docs/release.md):", version)
		p("")
		p("```sh")
		p("ctr -n k8s.io images import airgap-images-linux-$(dpkg --print-architecture).oci.tar")
		p("kubeadm init --image-repository %s --kubernetes-version %s   # nothing is pulled", n.repository, version)
		p("```")
		p("")
	}
	if slices.ContainsFunc(n.artifacts, func(a artifact) bool { return a.name == krewManifest }) {
		p("## kubectl psp")
		p("")
		p("The kubectl plugin for leaving PodSecurityPolicy, for each desktop platform, and its krew manifest:")
		p("")
		p("```sh")
		p("kubectl krew install --manifest=%s --archive=kubectl-psp-linux-amd64.tar.gz   # your desktop's archive; from these files, offline", krewManifest)
		p("kubectl psp --help")
		p("```")
		p("")
	}
	p("## Artifacts")
	p("")
	p("| file | platform | SHA-256 |")
	p("|---|---|---|")
	for _, a := range n.artifacts {
		p("| %s | %s | `%s` |", a.name, a.platform, a.sha256)
	}
	p("")
	p("Check them with `sha256sum -c SHA256SUMS`.")
	p("")
	if n.since == "" {
		p("## Changes (every commit: there is no earlier tag)")
	} else {
		p("## Changes since %s", n.since)
	}
	p("")
	for _, c := range n.changes {
		hash, subject, _ := strings.Cut(c, " ")
		p("- %s (%s)", subject, hash)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// changesSince lists the commits of the git repository at repo from the previous tag to commit, without
// merges, newest first. The previous tag is the newest tag reachable from
// commit's parent when commit itself is tagged (the release's own tag),
// else from commit.
func changesSince(repo, commit string) (changes []string, since string, err error) {
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).Output()
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return strings.TrimSpace(string(out)), err
	}
	if _, err := git("cat-file", "-e", commit+"^{commit}"); err != nil {
		return nil, "", fmt.Errorf("commit %q of the binaries is not in this repository: %w", commit, err)
	}
	from := commit
	if tags, _ := git("tag", "--points-at", commit); tags != "" {
		from = commit + "^"
	}
	// No tag (or a tagged root commit): every commit.
	since, _ = git("describe", "--tags", "--abbrev=0", from)
	span := commit
	if since != "" {
		span = since + ".." + commit
	}
	log, err := git("log", "--no-merges", "--format=%h %s", span)
	if err != nil {
		return nil, "", err
	}
	if log != "" {
		changes = strings.Split(log, "\n")
	}
	return changes, since, nil
}

func dep(s *stamp.Stamp, path string) string {
	if m, ok := s.Dep(path); ok {
		return m.Version
	}
	return "(not linked)"
}
