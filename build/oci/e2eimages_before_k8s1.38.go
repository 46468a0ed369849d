// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !k8s_next_1.38

package oci

import e2eimage "k8s.io/kubernetes/test/utils/image"

// lineE2EImages are the e2e framework's images that only some lines run:
// before v1.38, distroless-iptables.
func lineE2EImages(image func(name string, tags ...string) NodeImage) []NodeImage {
	return []NodeImage{image("distroless-iptables", E2EImage(e2eimage.DistrolessIptables))}
}
