// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build k8s_before_1.37

package lineapi

import api "k8s.io/kubernetes/pkg/apis/core"

// Before Kubernetes 1.37 the internal core API kept hostNetwork, hostPID and
// hostIPC in the pod's SecurityContext.

// PodHostNamespaces returns the host namespaces the pod asks for.
func PodHostNamespaces(spec *api.PodSpec) HostNamespaces {
	if spec.SecurityContext == nil {
		return HostNamespaces{}
	}
	sc := spec.SecurityContext
	return HostNamespaces{Network: sc.HostNetwork, PID: sc.HostPID, IPC: sc.HostIPC}
}

// SetPodHostNamespaces makes the pod ask for exactly h.
func SetPodHostNamespaces(spec *api.PodSpec, h HostNamespaces) {
	if spec.SecurityContext == nil {
		if h == (HostNamespaces{}) {
			return
		}
		spec.SecurityContext = &api.PodSecurityContext{}
	}
	sc := spec.SecurityContext
	sc.HostNetwork, sc.HostPID, sc.HostIPC = h.Network, h.PID, h.IPC
}
