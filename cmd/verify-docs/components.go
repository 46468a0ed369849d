// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/turnstile-k8s/turnstile/build/oci"
)

// componentsPage is the home of every component version the project pins:
// verify-docs writes it (-write, make update-docs) from the go.mod files and build/oci, and
// refuses it when it differs from what they say, so that it cannot go stale.
const componentsPage = "docs/reference/components.md"

// pinned is one component version the project builds or names, with where
// it comes from.
type pinned struct {
	component string // as docs name it: etcd, CoreDNS, containerd, ...
	version   string // as docs write it, without a leading v: 3.7.3, 1.37.0-2
	what      string // the row's description
	source    string // the file it is read from
}

// goModVersion is the version go.mod at path requires of module, without
// its leading v.
func goModVersion(root, path, module string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(module) + `\s+v(\S+)`).FindSubmatch(data)
	if m == nil {
		return "", fmt.Errorf("%s requires no %s", path, module)
	}
	return string(m[1]), nil
}

// pinnedComponents reads every component version from its source: for
// each supported line (main's first) and each preview, its Kubernetes,
// etcd, CoreDNS and the etcd image its kubeadm names; the nodes' containerd
// and CNI plugins; and the images the local nodes import.
func pinnedComponents(root string, l lines) ([]pinned, error) {
	var all []pinned
	for i, line := range append(append([]string{}, l.order...), l.preview...) {
		name := "line " + line
		if i >= len(l.order) {
			name = "preview " + line
		}
		mod, coredns := "go.mod", "build/coredns/go.mod"
		if i > 0 {
			mod, coredns = "lines/"+line+"/go.mod", "lines/"+line+"/build/coredns/go.mod"
		}
		for _, c := range []struct{ component, module, path, what string }{
			{"Kubernetes", "k8s.io/kubernetes", mod, name + ": the Kubernetes release it builds"},
			{"etcd", "go.etcd.io/etcd/server/v3", mod, name + ": the etcd `make` builds (test clusters, embedded etcd)"},
			{"CoreDNS", "github.com/coredns/coredns", coredns, name + ": the CoreDNS of the local nodes' image"},
		} {
			v, err := goModVersion(root, c.path, c.module)
			if err != nil {
				return nil, err
			}
			all = append(all, pinned{c.component, v, c.what, c.path})
			if c.component == "Kubernetes" {
				etcd, err := kubeadmEtcdImage(v)
				if err != nil {
					return nil, err
				}
				all = append(all, pinned{"etcd", etcd, name + ": the etcd image (`registry.k8s.io/etcd:" + etcd + "`) its kubeadm runs", "k8s.io/kubernetes@v" + v + "'s kubeadm"})
			}
		}
	}
	all = append(all, pinned{"Kubernetes", strings.TrimPrefix(l.anchor, "v"), "the release whose own PodSecurityPolicy plugin `make bench-psp` measures ours against", anchorModule})
	for _, c := range []struct{ component, module, what string }{
		{"containerd", "github.com/containerd/containerd/v2", "the real nodes' containerd"},
		{"CNI plugins", "github.com/containernetworking/plugins", "the real nodes' CNI plugins (bridge, host-local, loopback, portmap)"},
	} {
		v, err := goModVersion(root, "build/containerd/go.mod", c.module)
		if err != nil {
			return nil, err
		}
		all = append(all, pinned{c.component, v, c.what, "build/containerd/go.mod"})
	}
	for _, img := range oci.NodeImages() {
		for _, tag := range img.Tags {
			i := strings.LastIndex(tag, ":")
			name := tag[strings.LastIndex(tag[:i], "/")+1 : i]
			all = append(all, pinned{name, strings.TrimPrefix(tag[i+1:], "v"), "image `" + tag + "`, which `make node-images` builds for the local nodes", "build/oci"})
		}
	}
	return all, nil
}

// kubeadmEtcdImage is the tag of the etcd image kubeadm of Kubernetes
// version runs, from its constants in the module cache (go mod download
// fetches the module when it is not there).
func kubeadmEtcdImage(version string) (string, error) {
	// Outside the module, so that neither its go line nor a line's GOFLAGS
	// (-modfile) applies: the module's files are all that is read.
	cmd := exec.Command("go", "mod", "download", "-json", "k8s.io/kubernetes@v"+version)
	cmd.Dir, cmd.Env = os.TempDir(), append(os.Environ(), "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download k8s.io/kubernetes@v%s: %w", version, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", fmt.Errorf("go mod download k8s.io/kubernetes@v%s: %w", version, err)
	}
	data, err := os.ReadFile(filepath.Join(mod.Dir, "cmd/kubeadm/app/constants/constants.go"))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`DefaultEtcdVersion = "([^"]+)"`).FindSubmatch(data)
	if m == nil {
		return "", fmt.Errorf("k8s.io/kubernetes@v%s's kubeadm constants name no DefaultEtcdVersion", version)
	}
	return string(m[1]), nil
}

// componentsMarkdown is componentsPage's text.
func componentsMarkdown(all []pinned) string {
	var b strings.Builder
	b.WriteString("<!-- Generated by `make update-docs` from the files in its last column; do not edit. -->\n\n")
	b.WriteString("# Component versions\n\n")
	b.WriteString("Every version of a component that Turnstile builds, pins or names, read from the file that pins\n")
	b.WriteString("it. Other pages link here rather than restate a version: `make verify` refuses one stated\n")
	b.WriteString("elsewhere.\n\n")
	b.WriteString("| component | version | what | from |\n|---|---|---|---|\n")
	for _, p := range all {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", p.component, p.version, p.what, p.source)
	}
	return b.String()
}

// componentMention is a component named with a version in prose: "etcd
// v3.7.3", "CoreDNS 1.14.6", "agnhost:2.66.1".
var componentMention = regexp.MustCompile(`(?i)\b(etcd|coredns|containerd|cni plugins|agnhost|pause|busybox)(?::| v| )v?(\d+\.\d+(?:\.\d+)?(?:-\d+)?)\b`)

// restatedVersions reports each component version in a page's prose that
// is pinned (a restatement: componentsPage is its home) or of a pinned
// version's minor but not pinned (stale). A version of another minor
// (containerd 1.6) is a fact about that release, not ours, and passes.
// Evidence pages record the versions a run had, so only stale ones fail
// there.
func restatedVersions(file, prose string, k kind, all []pinned) []string {
	if file == componentsPage {
		return nil
	}
	var problems []string
	for i, line := range strings.Split(prose, "\n") {
		for _, m := range componentMention.FindAllStringSubmatch(line, -1) {
			component, version := strings.ToLower(m[1]), m[2]
			exact, minor := false, false
			for _, p := range all {
				if strings.ToLower(p.component) != component {
					continue
				}
				if p.version == version {
					exact = true
				} else if minorOf(p.version) == minorOf(version) {
					minor = true
				}
			}
			switch {
			case exact && k != evidence:
				problems = append(problems, fmt.Sprintf("%s:%d: %q: a component version's home is %s; link there", file, i+1, m[0], componentsPage))
			case !exact && minor:
				problems = append(problems, fmt.Sprintf("%s:%d: %q: no file pins this version (%s lists what is pinned)", file, i+1, m[0], componentsPage))
			}
		}
	}
	return problems
}

// minorOf is "3.7" of "3.7.3" and of "3.7.0-0".
func minorOf(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + strings.SplitN(parts[1], "-", 2)[0]
}

// checkComponentsPage reports componentsPage when it is not what the
// sources say.
func checkComponentsPage(root string, all []pinned) []string {
	data, err := os.ReadFile(filepath.Join(root, componentsPage))
	if err != nil || string(data) != componentsMarkdown(all) {
		return []string{fmt.Sprintf("%s is not what the go.mod files and build/oci say (run make update-docs)", componentsPage)}
	}
	return nil
}
