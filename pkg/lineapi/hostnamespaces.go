// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package lineapi

// HostNamespaces are the host's namespaces a pod may share.
type HostNamespaces struct {
	Network, PID, IPC bool
}
