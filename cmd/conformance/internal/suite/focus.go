// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"fmt"
	"regexp"
	"strings"
)

// suiteDescription is e2e.test's ginkgo suite description: ginkgo matches a
// focus against it, then the spec's containers' texts and its own, joined
// by spaces.
const suiteDescription = "Kubernetes e2e suite"

// alternatives splits a focus at its top-level `|`, the way a user lists
// specs: "a|b|c" names three. A `|` inside parentheses or brackets, or
// escaped, does not split.
func alternatives(focus string) []string {
	var out []string
	depth, class, start := 0, false, 0
	for i := 0; i < len(focus); i++ {
		switch c := focus[i]; {
		case c == '\\':
			i++
		case class:
			class = c != ']'
		case c == '[':
			class = true
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == '|' && depth == 0:
			out = append(out, focus[start:i])
			start = i + 1
		}
	}
	return append(out, focus[start:])
}

// unmatchedAlternatives are the alternatives of focus that no spec of the
// run matched: a spec renamed upstream, not [Conformance], or cut short by
// a typo. ginkgo says nothing of them; the run does.
func unmatchedAlternatives(focus string, names []string) ([]string, error) {
	if focus == "" {
		return nil, nil
	}
	var unmatched []string
	for _, alt := range alternatives(focus) {
		re, err := regexp.Compile(alt)
		if err != nil {
			return nil, fmt.Errorf("-focus alternative %q: %w", alt, err)
		}
		matched := false
		for _, n := range names {
			if re.MatchString(n) || re.MatchString(suiteDescription+" "+n) {
				matched = true
				break
			}
		}
		if !matched {
			unmatched = append(unmatched, alt)
		}
	}
	return unmatched, nil
}

// names is every spec of the summary: passed, failed and skipped.
func (s summary) names() []string {
	var out []string
	for _, list := range [][]outcome{s.passed, s.failed, s.skipped} {
		for _, o := range list {
			out = append(out, o.name)
		}
	}
	return out
}

// focusReport is what the summary says of a focus that named more than
// it matched.
func focusReport(unmatched []string) string {
	if len(unmatched) == 0 {
		return ""
	}
	return fmt.Sprintf("\n## FOCUS named %d that matched no [Conformance] spec\n- %s\n", len(unmatched), strings.Join(unmatched, "\n- "))
}
