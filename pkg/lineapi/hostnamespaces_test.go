// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package lineapi

import (
	"testing"

	api "k8s.io/kubernetes/pkg/apis/core"
)

func TestHostNamespacesRoundTrip(t *testing.T) {
	for _, h := range []HostNamespaces{{}, {Network: true}, {PID: true}, {IPC: true}, {Network: true, PID: true, IPC: true}} {
		var spec api.PodSpec
		SetPodHostNamespaces(&spec, h)
		if got := PodHostNamespaces(&spec); got != h {
			t.Errorf("set %+v, read back %+v", h, got)
		}
		SetPodHostNamespaces(&spec, HostNamespaces{})
		if got := PodHostNamespaces(&spec); got != (HostNamespaces{}) {
			t.Errorf("cleared %+v, read back %+v", h, got)
		}
	}
}
