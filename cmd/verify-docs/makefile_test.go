// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"regexp"
	"strings"
	"testing"
)

func TestMakeMarkdown(t *testing.T) {
	terms := []glossaryTerm{{term: "the guard", anchor: "the-guard", use: regexp.MustCompile(`(?i)(^|[^\w-])the guard(s|es)?($|[^\w-])`)}}
	tests := []struct {
		name     string
		makefile string
		want     []string // in the page
		wantErr  string
	}{
		{
			name:     "a target and a documented variable",
			makefile: "## NODES: Real worker nodes for `make run`.\nNODES ?= 0\nrun: build ## A local cluster behind the guard.\n\t@true\n",
			want:     []string{"| `make run` | A local cluster behind the guard. |", "| `NODES` | `0` | Real worker nodes for `make run`. |", "[the guard](../glossary.md#the-guard)"},
		},
		{
			name:     "an empty default, a pipe in a text",
			makefile: "## REGISTRY: Where to push: a|b.\nREGISTRY ?=\n",
			want:     []string{"| `REGISTRY` | (empty) | Where to push: a\\|b. |"},
		},
		{name: "a variable without its line", makefile: "# a comment is not a help text\nPORT ?= 6443\n", wantErr: "Makefile:2: PORT"},
		{name: "another variable's line", makefile: "## PORT: The port.\nOTHER := 1\nPORT ?= 6443\n", wantErr: "Makefile:3: PORT"},
		{name: "internal variables need none", makefile: "OUT := _output\nBIN = $(OUT)/bin\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := makeMarkdown(tt.makefile, terms)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(page, w) {
					t.Errorf("the page lacks %q:\n%s", w, page)
				}
			}
			if strings.Contains(tt.makefile, "the guard") && len(unlinkedTerms(makePage, page, terms)) > 0 {
				t.Errorf("the page uses a glossary word unlinked: %v", unlinkedTerms(makePage, page, terms))
			}
		})
	}
}
