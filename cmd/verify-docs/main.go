// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command verify-docs checks that the Markdown in the repository cannot rot
// silently: every relative link and anchor resolves, every `make <target>`
// a doc names is a target of the Makefile, and every flag a doc gives to
// one of our binaries is one that binary accepts (its -h says so), every
// task page is short, states no measured figure and names the test that
// runs its commands (tasks.go), every page of docs/ is indexed under its kind
// and a figure is stated on a page of its kind only (kinds.go), and
// every registry.k8s.io image a doc's command runs is one the local nodes
// are given (build/oci): a pull of any other fails there. It also keeps each
// fact in one place (facts.go, components.go): no Kubernetes version a line
// no longer pins, a suite's time on its home page only, no figure on two
// pages, a component version on the generated docs/reference/components.md
// only. And the files that name the restored plugins outside Go code agree
// with pkg/admission/restored (restored.go).
//
// Only code (inline spans and fenced blocks) is read for make targets and
// flags: that is what a reader copies. `make verify` runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/pkg/admission/restored"
)

func main() {
	root := flag.String("root", ".", "the repository: its Markdown files, Makefile")
	bin := flag.String("bin", "_output/bin", "directory of our built binaries, whose -h lists the flags they accept")
	write := flag.Bool("write", false, "write "+componentsPage+" from the go.mod files and build/oci, "+makePage+" from the Makefile and the tables generated from "+resultsDir+", and check nothing (make update-docs; make bump runs it)")
	flag.Parse()
	targets, err := makeTargets(filepath.Join(*root, "Makefile"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "verify-docs: %v\n", err)
		os.Exit(1)
	}
	supported, err := supportedLines(*root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "verify-docs: %v\n", err)
		os.Exit(1)
	}
	components, err := pinnedComponents(*root, supported)
	if err != nil {
		fmt.Fprintf(os.Stderr, "verify-docs: %v\n", err)
		os.Exit(1)
	}
	if *write {
		page, err := readMakePage(*root)
		if err == nil {
			err = os.WriteFile(filepath.Join(*root, componentsPage), []byte(componentsMarkdown(components)), 0o644)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(*root, makePage), []byte(page), 0o644)
		}
		if err == nil {
			err = writeResults(*root)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "verify-docs: %v\n", err)
			os.Exit(1)
		}
		return
	}
	problems, n, err := check(*root, rules{targets: targets, flags: helpFlags(*bin), images: localImages(), lines: supported, components: components})
	if err != nil {
		fmt.Fprintf(os.Stderr, "verify-docs: %v\n", err)
		os.Exit(1)
	}
	stale, err := restoredLists(*root, restored.Plugins)
	if err != nil {
		fmt.Fprintf(os.Stderr, "verify-docs: %v\n", err)
		os.Exit(1)
	}
	problems = append(problems, stale...)
	for _, p := range problems {
		fmt.Fprintf(os.Stderr, "verify-docs: %s\n", p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	fmt.Printf("verify-docs: ok: %d Markdown files, %d relative links, %d make commands, %d flags given to our binaries, %d images\n", n.files, n.links, n.makes, n.flags, n.images)
}

// ourBinaries are the programs this repository builds that docs give flags
// to; upstream's tools (kubectl, kubeadm) document their own.
// The Makefile's DOC_BINARIES builds them for `make verify`.
var ourBinaries = []string{"kube-apiserver", "local-up", "conformance", "bench", "image", "release", "nodeimages"}

// rules is what the docs are checked against.
type rules struct {
	targets map[string]bool // the Makefile's targets
	flags   flagsOf
	images  map[string]bool // the images local nodes have
	lines   lines           // the Kubernetes versions docs may name
	// components are the component versions the project pins, whose home
	// is componentsPage.
	components []pinned
}

// localImages is every name of every image the local nodes import.
func localImages() map[string]bool {
	images := map[string]bool{}
	for _, img := range append(oci.NodeImages(), oci.E2EImages()...) {
		for _, tag := range img.Tags {
			images[tag] = true
		}
	}
	return images
}

// flagsOf returns the flags a binary accepts, or an error saying why it
// cannot tell.
type flagsOf func(binary string) (map[string]bool, error)

// helpFlags reads each binary's flags from its -h in dir, once.
func helpFlags(dir string) flagsOf {
	cache := map[string]map[string]bool{}
	return func(binary string) (map[string]bool, error) {
		if f, ok := cache[binary]; ok {
			return f, nil
		}
		path := filepath.Join(dir, binary)
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("%s is not built (make verify builds it): %w", path, err)
		}
		// Go's flag package exits 0 on -h and cobra prints help; either
		// way the text is what counts.
		out, _ := exec.Command(path, "-h").CombinedOutput()
		cache[binary] = parseHelp(string(out))
		return cache[binary], nil
	}
}

var helpFlag = regexp.MustCompile(`(?m)^\s+(?:-([a-zA-Z]), )?--?([a-zA-Z0-9][a-zA-Z0-9-]*)`)

// parseHelp collects the flags of Go's flag package (`  -name value`) and
// of pflag (`      --name string`, `  -v, --v Level`).
func parseHelp(help string) map[string]bool {
	flags := map[string]bool{"h": true, "help": true}
	for _, m := range helpFlag.FindAllStringSubmatch(help, -1) {
		flags[m[2]] = true
		if m[1] != "" {
			flags[m[1]] = true // pflag's shorthand
		}
	}
	return flags
}

var targetRule = regexp.MustCompile(`(?m)^([a-zA-Z0-9][a-zA-Z0-9 ._/$()-]*?)\s*::?(?:[^=]|$)`)

// makeTargets is every explicit target of the Makefile.
func makeTargets(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	targets := map[string]bool{}
	for _, m := range targetRule.FindAllStringSubmatch(string(data), -1) {
		for _, t := range strings.Fields(m[1]) {
			targets[t] = true
		}
	}
	return targets, nil
}

// counts is how much a check looked at: a check that finds nothing to
// check passes vacuously, and says so.
type counts struct{ files, links, makes, flags, images int }

// check returns every problem in the Markdown under root, sorted.
func check(root string, r rules) ([]string, counts, error) {
	var n counts
	files, err := markdownFiles(root)
	if err != nil {
		return nil, n, err
	}
	n.files = len(files)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		anchors[path] = headingAnchors(string(data))
		return anchors[path], nil
	}
	var rels []string
	for _, file := range files {
		rel, _ := filepath.Rel(root, file)
		rels = append(rels, filepath.ToSlash(rel))
	}
	kinds, problems, err := pageKinds(root, rels)
	if err != nil {
		return nil, n, err
	}
	if r.components != nil {
		problems = append(problems, checkComponentsPage(root, r.components)...)
		problems = append(problems, checkMakePage(root)...)
		problems = append(problems, checkResults(root)...)
	}
	terms, err := glossaryTerms(root)
	if err != nil && !os.IsNotExist(err) {
		return nil, n, err
	}
	textOf := map[string]string{} // each doc without its fenced blocks
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, n, err
		}
		rel, _ := filepath.Rel(root, file)
		prose, code := split(string(data))
		problems = append(problems, datedHeadings(rel, string(data))...)
		if filepath.Dir(rel) == taskDir {
			problems = append(problems, checkTaskPage(root, rel, string(data))...)
		}
		problems = append(problems, staleVersions(rel, string(data), r.lines)...)
		text := splitFencesOnly(string(data))
		k := kindOf(rel, kinds)
		problems = append(problems, misplacedFigures(rel, text, k)...)
		problems = append(problems, restatedVersions(rel, text, k, r.components)...)
		problems = append(problems, unlinkedTerms(rel, text, terms)...)
		textOf[rel] = text
		for _, l := range links(prose) {
			if !strings.Contains(l.target, "://") {
				n.links++
			}
			if p := checkLink(file, l.target, anchorsOf); p != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s", rel, l.line, l.target, p))
			}
		}
		for _, c := range code {
			for _, cmd := range commands(c.text) {
				problems = append(problems, checkCommand(rel, c.line+cmd.line, cmd.words, r, &n)...)
			}
		}
	}
	problems = append(problems, restatedFigures(textOf)...)
	sort.Strings(problems)
	return slices.Compact(problems), n, nil
}

func markdownFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "_output" || d.Name() == "vendor" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			files = append(files, path)
		}
		return nil
	})
	return files, err
}

// snippet is code from a doc, with the line it starts on.
type snippet struct {
	line int
	text string
}

var inlineCode = regexp.MustCompile("`+[^`]+`+")

// split separates a doc into its prose (code replaced by spaces, so that
// line numbers hold) and its code: fenced blocks and inline spans.
func split(doc string) (string, []snippet) {
	var prose strings.Builder
	var code []snippet
	var block *snippet
	var fence string
	for i, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		if block == nil && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
			fence = trimmed[:3]
			block = &snippet{line: i + 2}
			prose.WriteString("\n")
			continue
		}
		if block != nil {
			if strings.HasPrefix(trimmed, fence) {
				code = append(code, *block)
				block = nil
			} else {
				block.text += line + "\n"
			}
			prose.WriteString("\n")
			continue
		}
		for _, span := range inlineCode.FindAllString(line, -1) {
			code = append(code, snippet{line: i + 1, text: strings.Trim(span, "`")})
		}
		prose.WriteString(inlineCode.ReplaceAllStringFunc(line, func(s string) string { return strings.Repeat(" ", len(s)) }) + "\n")
	}
	return prose.String(), code
}

type link struct {
	line   int
	target string
}

var linkPattern = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)

func links(prose string) []link {
	var out []link
	for i, line := range strings.Split(prose, "\n") {
		for _, m := range linkPattern.FindAllStringSubmatch(line, -1) {
			out = append(out, link{line: i + 1, target: m[1]})
		}
	}
	return out
}

// checkLink says what is wrong with a relative link from file, or "".
func checkLink(file, target string, anchorsOf func(string) (map[string]bool, error)) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	path, anchor, _ := strings.Cut(target, "#")
	dest := file
	if path != "" {
		dest = filepath.Join(filepath.Dir(file), path)
		if _, err := os.Stat(dest); err != nil {
			return "no such file"
		}
	}
	if anchor == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	a, err := anchorsOf(dest)
	if err != nil {
		return err.Error()
	}
	if !a[anchor] {
		return fmt.Sprintf("no heading in %s has the anchor #%s", filepath.Base(dest), anchor)
	}
	return ""
}

var date = regexp.MustCompile(`\b(19|20)\d\d-\d\d(-\d\d)?\b|(?i)\b(January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.? (\d{1,2}, )?(19|20)\d\d\b`)

// datedHeadings reports every heading titled by a date: a doc says what
// is true now, and the date a finding was made belongs to git.
func datedHeadings(file, doc string) []string {
	prose := splitFencesOnly(doc)
	var problems []string
	for _, line := range strings.Split(prose, "\n") {
		if m := heading.FindStringSubmatch(line); m != nil && date.MatchString(m[1]) {
			problems = append(problems, fmt.Sprintf("%s: heading %q is titled by a date (say what holds now; git keeps when)", file, m[1]))
		}
	}
	return problems
}

var heading = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)

// headingAnchors is the anchors GitHub gives a doc's headings: lower case,
// punctuation but hyphens and underscores dropped, spaces as hyphens, and
// -1, -2 for repeats.
func headingAnchors(doc string) map[string]bool {
	prose := splitFencesOnly(doc)
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(prose, -1) {
		a := slug(m[1])
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// splitFencesOnly is doc with its fenced blocks blanked (a `# comment` in a
// shell block is no heading), inline code kept and line numbers unchanged.
func splitFencesOnly(doc string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(doc, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			in = !in
			line = ""
		}
		if in {
			line = ""
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// markdownLink is a link: its text, then its target.
var markdownLink = regexp.MustCompile(`\[([^\]]*)\]\(([^)]*)\)`)

func slug(text string) string {
	text = markdownLink.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// command is one command line from code: its words, and the line of the
// snippet it starts on, from 0.
type command struct {
	line  int
	words []string
}

var separators = regexp.MustCompile(`&&|\|\||[;|]|\$\(`)

// commands splits code into command lines (backslash continuations
// joined, shell operators and command substitutions splitting, comments
// dropped), each without a leading prompt, sudo or environment
// assignments.
func commands(code string) []command {
	var out []command
	lines := strings.Split(code, "\n")
	for i := 0; i < len(lines); i++ {
		start, line := i, lines[i]
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, "\\") + " " + lines[i]
		}
		if c := strings.Index(line, " #"); c >= 0 {
			line = line[:c]
		}
		for _, part := range separators.Split(line, -1) {
			words := strings.Fields(part)
			for len(words) > 0 && (words[0] == "$" || words[0] == "sudo" || words[0] == "-E" || words[0] == "time" ||
				strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-")) {
				words = words[1:]
			}
			if len(words) > 0 {
				out = append(out, command{line: start, words: words})
			}
		}
	}
	return out
}

var targetName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// checkCommand checks a make invocation's targets and the flags given to
// one of our binaries.
func checkCommand(file string, line int, cmd []string, r rules, n *counts) []string {
	name := cmd[0]
	var problems []string
	for i, w := range cmd {
		image, ok := strings.CutPrefix(w, "--image=")
		if !ok && w == "--image" && i+1 < len(cmd) {
			image, ok = cmd[i+1], true
		}
		if ok && strings.HasPrefix(image, "registry.k8s.io/") {
			n.images++
			if !r.images[image] {
				problems = append(problems, fmt.Sprintf("%s:%d: image %s is not one the local nodes have (build/oci: make node-images, make e2e-images), so its pull fails there", file, line, image))
			}
		}
	}
	if name == "make" {
		for i := 1; i < len(cmd); i++ {
			w := strings.Trim(cmd[i], `"'`)
			switch {
			case w == "-C" || w == "-f":
				i++
			case strings.HasPrefix(w, "-") || strings.Contains(w, "="):
			case targetName.MatchString(w):
				n.makes++
				if !r.targets[w] {
					problems = append(problems, fmt.Sprintf("%s:%d: `make %s`: the Makefile has no target %q", file, line, w, w))
				}
			default:
				// a file target (_output/bin/kubectl) or prose after it
				return problems
			}
		}
		return problems
	}
	binary := filepath.Base(name)
	if !slices.Contains(ourBinaries, binary) || (name != binary && !strings.Contains(name, "bin/")) {
		return problems
	}
	var accepted map[string]bool
	for _, w := range cmd[1:] {
		if !strings.HasPrefix(w, "-") || w == "-" || w == "--" {
			continue
		}
		f, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
		f = strings.Trim(f, `"',.)`)
		if f == "" || !targetName.MatchString(strings.ToLower(f)) {
			continue
		}
		n.flags++
		if accepted == nil {
			var err error
			if accepted, err = r.flags(binary); err != nil {
				return append(problems, fmt.Sprintf("%s:%d: %s: %v", file, line, binary, err))
			}
		}
		if !accepted[f] {
			problems = append(problems, fmt.Sprintf("%s:%d: `%s ... %s`: %s does not accept -%s (its -h does not list it)", file, line, binary, w, binary, f))
		}
	}
	return problems
}
