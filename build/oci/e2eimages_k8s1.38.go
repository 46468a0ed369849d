// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build k8s_next_1.38

package oci

// lineE2EImages are the e2e framework's images that only some lines run:
// none from v1.38, whose framework no longer runs distroless-iptables.
func lineE2EImages(func(name string, tags ...string) NodeImage) []NodeImage { return nil }
