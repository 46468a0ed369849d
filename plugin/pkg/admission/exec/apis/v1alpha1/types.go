// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// SchemeGroupVersion is the configuration's group and version.
var SchemeGroupVersion = schema.GroupVersion{Group: "exec.admission.turnstile.dev", Version: "v1alpha1"}

// ExecConfiguration holds opt-in changes to the historic decision. All are
// off by default: perContainer admits execs that upstream denied, and the
// others deny requests that upstream admitted.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ExecConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// PerContainer decides "privileged" on the container the exec or attach
	// targets instead of on the whole pod, so a plain sidecar of a pod with
	// one privileged container can be reached. Host namespaces are pod-wide
	// and still deny. When the target cannot be told (no container named and
	// several containers), the whole pod is judged, as upstream did.
	PerContainer bool `json:"perContainer,omitempty"`

	// TreatHostProcessAsPrivileged counts a Windows HostProcess container
	// (securityContext.windowsOptions.hostProcess, on the container or the
	// pod) as privileged: it runs as a process on the host with the host's
	// privileges. Upstream ignored it.
	TreatHostProcessAsPrivileged bool `json:"treatHostProcessAsPrivileged,omitempty"`

	// CoverPortForward judges pods/portforward with the same checks as exec
	// and attach. Port-forwarding into a pod on the host's network reaches
	// every port the node listens on, loopback included (the kubelet's
	// healthz, kube-proxy's metrics, a control plane node's etcd). Upstream
	// judged exec and attach only.
	CoverPortForward bool `json:"coverPortForward,omitempty"`

	// CoverNodeProxy judges the kubelet's exec, attach and run endpoints
	// (and portForward, with CoverPortForward) reached through the nodes/proxy
	// subresource, against the pod the proxied path names: a user allowed
	// nodes/proxy otherwise execs into any pod on the node without passing
	// pods/exec admission. It cannot see requests sent to the kubelet's port
	// directly; only RBAC on nodes/proxy closes that (docs/security.md).
	CoverNodeProxy bool `json:"coverNodeProxy,omitempty"`

	// RequirePodSecurityLevel, when baseline or restricted, also refuses
	// every request the plugin judges into a pod that fails that Pod
	// Security Standards level, judged by Pod Security Admission's own
	// checks at their latest version. A pod that mounts the node's / or
	// its container runtime's socket, or holds CAP_SYS_ADMIN, is the node
	// as much as a privileged container is, and upstream's checks name
	// them all. The refusal names the checks the pod fails. Empty (the
	// default): the plugin's own checks only, as upstream.
	RequirePodSecurityLevel string `json:"requirePodSecurityLevel,omitempty"`
}

// PodSecurityLevels are the levels RequirePodSecurityLevel takes.
var PodSecurityLevels = []string{"baseline", "restricted"}

// Validate checks the fields.
func Validate(c *ExecConfiguration) error {
	if l := c.RequirePodSecurityLevel; l != "" && !slices.Contains(PodSecurityLevels, l) {
		return field.NotSupported(field.NewPath("requirePodSecurityLevel"), l, PodSecurityLevels)
	}
	return nil
}
