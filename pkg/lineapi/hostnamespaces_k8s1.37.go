// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !k8s_before_1.37

package lineapi

import api "k8s.io/kubernetes/pkg/apis/core"

// Kubernetes 1.37 moved hostNetwork, hostPID and hostIPC of the internal
// core API from PodSecurityContext to PodSpec, where the v1 API always had
// them.

// PodHostNamespaces returns the host namespaces the pod asks for.
func PodHostNamespaces(spec *api.PodSpec) HostNamespaces {
	return HostNamespaces{Network: spec.HostNetwork, PID: spec.HostPID, IPC: spec.HostIPC}
}

// SetPodHostNamespaces makes the pod ask for exactly h.
func SetPodHostNamespaces(spec *api.PodSpec, h HostNamespaces) {
	spec.HostNetwork, spec.HostPID, spec.HostIPC = h.Network, h.PID, h.IPC
}
