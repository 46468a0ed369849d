// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package lineapi holds the few places where the upstream APIs Turnstile
// compiles against differ between the Kubernetes lines it supports (see
// lines/README.md), so that the rest of the tree is one source for every
// line.
//
// Each difference is a pair of files named after the release that made it:
// NAME_k8s1.37.go serves main and every later line, NAME_before_k8s1.37.go
// the older lines. The Makefile builds an older line with the build tag
// k8s_before_1.Y for every minor after it up to main's, as Go's own release
// tags work, so that a file's constraint never changes when a line is
// added or main moves on. A difference goes when its older line is dropped.
package lineapi
