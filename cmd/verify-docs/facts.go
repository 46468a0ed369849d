// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Facts that drift when they are written twice: a Kubernetes version that no
// line builds any more, make test's time told on a second page, a measured
// figure copied from the page that measured it. Each has one home (the
// lines' go.mod files, README.md, the page with the figure's commit and
// command); everywhere else links to it.

// lines is what the supported Kubernetes lines pin: the versions a doc may
// name, and the minor after main's, whose releases the bump and the canary
// docs name before any line has it.
type lines struct {
	versions  map[string]bool // "v1.37.2"
	order     []string        // "1.37", "1.36": main's first
	preview   []string        // "1.38": the next minor's pre-release, if any
	anchor    string          // "v1.24.17": the release make bench-psp measures against (anchorModule)
	nextMinor int             // 38
}

// supportedLines asks hack/line.sh, which knows where each line's go.mod is.
func supportedLines(root string) (lines, error) {
	l := lines{versions: map[string]bool{}}
	lineSh := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(root, "hack", "line.sh"), args...).Output()
		if err != nil {
			return "", fmt.Errorf("hack/line.sh %s: %w", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	preview, err := lineSh("preview")
	if err != nil {
		return l, err
	}
	l.preview = strings.Fields(preview)
	list, err := lineSh("list")
	if err != nil {
		return l, err
	}
	for i, minor := range strings.Fields(list) {
		v, err := lineSh("version", minor)
		if err != nil {
			return l, err
		}
		l.versions[v] = true
		l.order = append(l.order, minor)
		if i == 0 { // main's line comes first
			n, err := strconv.Atoi(strings.TrimPrefix(minor, "1."))
			if err != nil {
				return l, fmt.Errorf("hack/line.sh list: main's line %q is not 1.Y", minor)
			}
			l.nextMinor = n + 1
		}
	}
	v, err := goModVersion(root, anchorModule, "k8s.io/kubernetes")
	if err != nil {
		return l, err
	}
	l.anchor = "v" + v
	l.versions[l.anchor] = true
	return l, nil
}

// anchorModule pins the old release whose own PodSecurityPolicy make
// bench-psp measures ours against: docs may name its version.
const anchorModule = "test/psp124/go.mod"

// kubeVersion matches a version with its prefix: the word before it (a
// module path, a project's name) or the image it tags.
var kubeVersion = regexp.MustCompile(`(\S*?)(\s*)\bv([01])\.(\d+)\.(\d+)(-(?:alpha|beta|rc)\.\d+)?\b`)

// staleVersions reports every Kubernetes version in doc that no supported
// line pins: v1.Y.Z (and a staging module's v0.Y.Z) with a minor from 1.20
// on, not a module's or an image's of another project. make bump moves every
// doc's versions with the line (hack/bump.sh).
func staleVersions(file, doc string, l lines) []string {
	var problems []string
	for i, line := range strings.Split(doc, "\n") {
		for _, m := range kubeVersion.FindAllStringSubmatch(line, -1) {
			prefix, major, minorText, patch, pre := m[1], m[3], m[4], m[5], m[6]
			minor, _ := strconv.Atoi(minorText)
			if minor < 20 || minor > l.nextMinor+5 || !isKubernetes(prefix, major) {
				continue
			}
			v := fmt.Sprintf("v1.%d.%s%s", minor, patch, pre)
			if l.versions[v] || minor == l.nextMinor {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s:%d: %s is no supported line's Kubernetes version (%s): name the line instead, or the version the line pins (make bump moves it in every doc)",
				file, i+1, strings.TrimSpace(m[0][len(m[1])+len(m[2]):]), l))
		}
	}
	return problems
}

// isKubernetes says whether a version after prefix is Kubernetes': v1 unless
// another project's module or image names it; v0 only for a k8s.io staging
// module, or alone (the staging modules "at v0.37.2").
func isKubernetes(prefix, major string) bool {
	prefix = strings.Trim(prefix, "`\"'(*[")
	if image, _, ok := strings.Cut(prefix, ":"); ok && image != "" {
		// An image's tag: Kubernetes' for its components' images only.
		base := image[strings.LastIndex(image, "/")+1:]
		return major == "1" && (strings.HasPrefix(base, "kube-") || base == "turnstile")
	}
	isPath := strings.Contains(prefix, "/") && strings.Contains(prefix, ".")
	switch {
	case !isPath:
		return true
	case major == "0":
		// A staging module; k8s.io's others (klog, utils, kube-openapi)
		// have versions of their own that the minor filter leaves out.
		return strings.HasPrefix(prefix, "k8s.io/")
	default:
		return prefix == "k8s.io/kubernetes"
	}
}

func (l lines) String() string {
	return "supported: " + strings.Join(slices.Sorted(maps.Keys(l.versions)), ", ")
}

// makeTestTimeHome is the one page that says how long make test takes.
const makeTestTimeHome = "README.md"

var (
	sentenceEnd = regexp.MustCompile(`[.;:!?|](\s+|$)`)
	duration    = regexp.MustCompile(`\b\d[\d,]*(\.\d+)? ?(s|seconds?|min|minutes?|h|hours?)\b`)
)

// figure is a measured number with its unit, precise enough (three
// significant digits) that two pages showing it are one copying the other.
// README.md may state no percentage or ratio another page has: those are
// the measuring page's (make test's time is the README's own).
var (
	figure      = regexp.MustCompile(`\b(\d[\d,]*\.\d{2,}|\d[\d,]+\.\d+|\d{1,3}(,\d{3})+|\d{3,}) ?(×|%|s|ms|µs|ns|MiB|KiB|GiB)(\W|$)`)
	shortFigure = regexp.MustCompile(`\b\d+(\.\d+)? ?(×|%)`)
)

// restatedFigures reports each figure that more than one page states: every
// page but the first (in path order) that has it.
func restatedFigures(docs map[string]string) []string {
	where := map[string][]string{}
	note := func(f, file string, line int) {
		for _, at := range where[f] {
			if strings.HasPrefix(at, file+":") {
				return
			}
		}
		where[f] = append(where[f], fmt.Sprintf("%s:%d", file, line))
	}
	readme := map[string]bool{}
	for _, m := range shortFigure.FindAllString(docs[makeTestTimeHome], -1) {
		readme[normalize(m)] = true
	}
	for _, file := range slices.Sorted(maps.Keys(docs)) {
		for i, line := range strings.Split(docs[file], "\n") {
			for _, m := range figure.FindAllStringSubmatch(line, -1) {
				note(normalize(m[0]), file, i+1)
			}
			for _, m := range shortFigure.FindAllString(line, -1) {
				if f := normalize(m); readme[f] {
					note(f, file, i+1)
				}
			}
		}
	}
	var problems []string
	for _, f := range slices.Sorted(maps.Keys(where)) {
		at := where[f]
		for _, again := range at[1:] {
			problems = append(problems, fmt.Sprintf("%s: %s is restated from %s: state a figure on one page (with its commit and command) and link to it", again, f, at[0]))
		}
	}
	slices.Sort(problems)
	return problems
}

// normalize makes "1.003 ×" and "1.003×" one figure.
func normalize(f string) string {
	f = strings.TrimRightFunc(f, func(r rune) bool {
		return !(r == '×' || r == '%' || r >= 'a' && r <= 'z' || r == 'µ' || r >= 'A' && r <= 'Z')
	})
	return strings.ReplaceAll(f, " ", "")
}
