// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package configfile

import (
	"fmt"
	"regexp"
	"strconv"

	yaml "go.yaml.in/yaml/v3"
)

// duplicate is a field given twice in one map of a YAML or JSON document.
// Upstream's YAML decoding keeps the last value silently; the strict decoders
// reject the whole document with a line number. Finding them ourselves gives
// the field's path, and the plugin it belongs to.
type duplicate struct {
	path        string
	first, line int
}

func (d duplicate) Error() string {
	return fmt.Sprintf("%s: Duplicate value: the field is given twice (lines %d and %d)", d.path, d.first, d.line)
}

// duplicates returns every duplicate field of data's first document, in
// document order, and the parsed document. A document that does not parse
// has none; the decoders that follow report its syntax error.
func duplicates(data []byte) ([]duplicate, *yaml.Node) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, nil
	}
	var dups []duplicate
	walkDuplicates(&root, "", &dups)
	return dups, &root
}

func walkDuplicates(n *yaml.Node, path string, dups *[]duplicate) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walkDuplicates(c, path, dups)
		}
	case yaml.MappingNode:
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, value := n.Content[i], n.Content[i+1]
			if key.Tag == "!!merge" {
				continue // "<<: *anchor" may be overridden by design
			}
			child := key.Value
			if path != "" {
				child = path + "." + key.Value
			}
			if first, ok := seen[key.Value]; ok {
				*dups = append(*dups, duplicate{path: child, first: first, line: key.Line})
			} else {
				seen[key.Value] = key.Line
			}
			walkDuplicates(value, child, dups)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			walkDuplicates(c, path+"["+strconv.Itoa(i)+"]", dups)
		}
	}
	// Aliases are not followed: their target is checked where it is defined.
}

var entryPath = regexp.MustCompile(`^plugins\[(\d+)\]`)

// entryOf returns the index and name of the AdmissionConfiguration entry
// that a field path lies in, if any.
func entryOf(root *yaml.Node, path string) (int, string, bool) {
	m := entryPath.FindStringSubmatch(path)
	if m == nil {
		return 0, "", false
	}
	i, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, "", false
	}
	name := "?"
	if entry := child(child(root, "plugins"), i); entry != nil {
		if n := child(entry, "name"); n != nil && n.Kind == yaml.ScalarNode {
			name = n.Value
		}
	}
	return i, name, true
}

// child returns a map's value for a string key, or a sequence's element for
// an int, or nil.
func child(n *yaml.Node, key any) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	switch k := key.(type) {
	case string:
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k {
					return n.Content[i+1]
				}
			}
		}
	case int:
		if n.Kind == yaml.SequenceNode && k >= 0 && k < len(n.Content) {
			return n.Content[k]
		}
	}
	return nil
}
