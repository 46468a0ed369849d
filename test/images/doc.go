// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package images is a module of its own for the binaries of upstream's e2e
// test images (agnhost, its tool line), so that their test-only dependency
// graph stays out of Turnstile's go.mod. hack/pin-kubernetes.sh pins it to
// the same k8s.io/kubernetes and staging modules as our go.mod, and
// `make node-images` builds agnhost with
//
//	go build -C test/images -trimpath -o ../../_output/bin/agnhost k8s.io/kubernetes/test/images/agnhost
package images
