// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// glossaryPage defines the words the docs use in a sense of their own, each
// under a heading of its own ("### the cost guard"; several terms of one
// entry are separated by commas).
const glossaryPage = "docs/glossary.md"

// commonWords are glossary terms that are also plain English ("the first
// line", "each side"): a page may use them in their plain sense first, so
// their first use is not held to a link. Every other term is.
var commonWords = map[string]bool{
	"line": true, "tier": true, "profile": true, "counts": true, "decorated": true,
	"pair": true, "turn": true, "side": true, "within": true, "over": true, "undecided": true,
}

// glossaryTerm is a term the glossary defines and the anchor of its entry.
type glossaryTerm struct {
	term, anchor string
	use          *regexp.Regexp
}

// glossaryTerms reads glossaryPage's entries, leaving out commonWords.
func glossaryTerms(root string) ([]glossaryTerm, error) {
	data, err := os.ReadFile(filepath.Join(root, glossaryPage))
	if err != nil {
		return nil, err
	}
	var terms []glossaryTerm
	for _, line := range strings.Split(string(data), "\n") {
		heading, ok := strings.CutPrefix(line, "### ")
		if !ok {
			continue
		}
		for _, term := range strings.Split(heading, ",") {
			term = strings.TrimSpace(term)
			if commonWords[term] {
				continue
			}
			terms = append(terms, glossaryTerm{term, slug(heading),
				regexp.MustCompile(`(?i)(^|[^\w-])` + regexp.QuoteMeta(term) + `(s|es)?($|[^\w-])`)})
		}
	}
	return terms, nil
}

var codeSpan = regexp.MustCompile("`[^`]*`")

// unlinkedTerms reports each glossary term whose first use on a page (in
// its prose, outside code and headings) is not a link to its glossary entry.
func unlinkedTerms(file, prose string, terms []glossaryTerm) []string {
	if file == glossaryPage {
		return nil
	}
	var problems []string
	for _, t := range terms {
		for i, line := range strings.Split(prose, "\n") {
			if strings.HasPrefix(line, "#") {
				continue
			}
			// Blank out code spans, keeping offsets, so that a flag or an
			// argument (`-same-pods`) is not taken for a use.
			line = codeSpan.ReplaceAllStringFunc(line, func(s string) string { return strings.Repeat(" ", len(s)) })
			loc := t.use.FindStringIndex(line)
			if loc == nil {
				continue
			}
			linked := false
			for _, l := range markdownLink.FindAllStringSubmatchIndex(line, -1) {
				if l[2] <= loc[0]+1 && loc[1]-1 <= l[3] && strings.HasSuffix(line[l[4]:l[5]], "glossary.md#"+t.anchor) {
					linked = true
				}
			}
			if !linked {
				problems = append(problems, fmt.Sprintf("%s:%d: %q is first used without a link to its definition: [%s](%s#%s)", file, i+1, t.term, t.term, relTo(file, glossaryPage), t.anchor))
			}
			break
		}
	}
	return problems
}

// relTo is the relative link from page to target, both relative to the
// repository.
func relTo(page, target string) string {
	rel, err := filepath.Rel(filepath.Dir(page), target)
	if err != nil {
		return target
	}
	return filepath.ToSlash(rel)
}
