// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package policy

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodSecurityPolicy is a cluster-scoped policy that decides which pod and
// container security settings a pod may request, and which defaults are
// applied to pods that it admits.
type PodSecurityPolicy struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	// Spec holds the rules of the policy.
	Spec PodSecurityPolicySpec
}

// PodSecurityPolicySpec holds the rules of a PodSecurityPolicy. The field
// meanings are documented on the v1beta1 type.
type PodSecurityPolicySpec struct {
	Privileged               bool
	DefaultAddCapabilities   []api.Capability
	RequiredDropCapabilities []api.Capability
	AllowedCapabilities      []api.Capability
	Volumes                  []FSType
	HostNetwork              bool
	HostPorts                []HostPortRange
	HostPID                  bool
	HostIPC                  bool
	SELinux                  SELinuxStrategyOptions
	RunAsUser                RunAsUserStrategyOptions
	// RunAsGroup nil allows any primary group.
	RunAsGroup         *RunAsGroupStrategyOptions
	SupplementalGroups SupplementalGroupsStrategyOptions
	FSGroup            FSGroupStrategyOptions
	// ReadOnlyRootFilesystem requires (and defaults) a read-only root
	// filesystem.
	ReadOnlyRootFilesystem          bool
	DefaultAllowPrivilegeEscalation *bool
	// AllowPrivilegeEscalation is defaulted to true by the v1beta1 version.
	AllowPrivilegeEscalation *bool
	AllowedHostPaths         []AllowedHostPath
	AllowedFlexVolumes       []AllowedFlexVolume
	AllowedCSIDrivers        []AllowedCSIDriver
	AllowedUnsafeSysctls     []string
	ForbiddenSysctls         []string
	AllowedProcMountTypes    []api.ProcMountType
	// RuntimeClass nil allows any RuntimeClass.
	RuntimeClass *RuntimeClassStrategyOptions
}

// AllowedHostPath is a host path prefix hostPath volumes may use.
type AllowedHostPath struct {
	// PathPrefix is matched component by component.
	PathPrefix string
	// ReadOnly requires read-only mounts under the prefix.
	ReadOnly bool
}

// AllowAllCapabilities in AllowedCapabilities allows any capability.
var AllowAllCapabilities api.Capability = "*"

// FSType names a volume source type.
type FSType string

// The volume types a PodSecurityPolicy can allow. Image is Turnstile's
// addition for the image volume source; All ("*") includes it.
const (
	AzureFile             FSType = "azureFile"
	Flocker               FSType = "flocker"
	FlexVolume            FSType = "flexVolume"
	HostPath              FSType = "hostPath"
	EmptyDir              FSType = "emptyDir"
	GCEPersistentDisk     FSType = "gcePersistentDisk"
	AWSElasticBlockStore  FSType = "awsElasticBlockStore"
	GitRepo               FSType = "gitRepo"
	Secret                FSType = "secret"
	NFS                   FSType = "nfs"
	ISCSI                 FSType = "iscsi"
	Glusterfs             FSType = "glusterfs"
	PersistentVolumeClaim FSType = "persistentVolumeClaim"
	RBD                   FSType = "rbd"
	Cinder                FSType = "cinder"
	CephFS                FSType = "cephFS"
	DownwardAPI           FSType = "downwardAPI"
	FC                    FSType = "fc"
	ConfigMap             FSType = "configMap"
	VsphereVolume         FSType = "vsphereVolume"
	Quobyte               FSType = "quobyte"
	AzureDisk             FSType = "azureDisk"
	PhotonPersistentDisk  FSType = "photonPersistentDisk"
	StorageOS             FSType = "storageos"
	Projected             FSType = "projected"
	PortworxVolume        FSType = "portworxVolume"
	ScaleIO               FSType = "scaleIO"
	CSI                   FSType = "csi"
	Ephemeral             FSType = "ephemeral"
	Image                 FSType = "image"
	All                   FSType = "*"
)

// AllowedFlexVolume is a Flexvolume driver pods may use.
type AllowedFlexVolume struct {
	Driver string
}

// AllowedCSIDriver is a CSI driver pods may use inline.
type AllowedCSIDriver struct {
	Name string
}

// HostPortRange is an inclusive range of host ports.
type HostPortRange struct {
	Min int32
	Max int32
}

// IDRange is an inclusive range of user or group IDs.
type IDRange struct {
	Min int64
	Max int64
}

// SELinuxStrategyOptions configures the SELinux strategy.
type SELinuxStrategyOptions struct {
	Rule SELinuxStrategy
	// SELinuxOptions is the context MustRunAs requires and applies.
	SELinuxOptions *api.SELinuxOptions
}

// SELinuxStrategy names an SELinux strategy.
type SELinuxStrategy string

// SELinux strategies.
const (
	SELinuxStrategyMustRunAs SELinuxStrategy = "MustRunAs"
	SELinuxStrategyRunAsAny  SELinuxStrategy = "RunAsAny"
)

// RunAsUserStrategyOptions configures the user ID strategy.
type RunAsUserStrategyOptions struct {
	Rule   RunAsUserStrategy
	Ranges []IDRange
}

// RunAsUserStrategy names a user ID strategy.
type RunAsUserStrategy string

// User ID strategies.
const (
	RunAsUserStrategyMustRunAs        RunAsUserStrategy = "MustRunAs"
	RunAsUserStrategyMustRunAsNonRoot RunAsUserStrategy = "MustRunAsNonRoot"
	RunAsUserStrategyRunAsAny         RunAsUserStrategy = "RunAsAny"
)

// RunAsGroupStrategyOptions configures the primary group ID strategy.
type RunAsGroupStrategyOptions struct {
	Rule   RunAsGroupStrategy
	Ranges []IDRange
}

// RunAsGroupStrategy names a primary group ID strategy.
type RunAsGroupStrategy string

// Primary group ID strategies.
const (
	RunAsGroupStrategyMayRunAs  RunAsGroupStrategy = "MayRunAs"
	RunAsGroupStrategyMustRunAs RunAsGroupStrategy = "MustRunAs"
	RunAsGroupStrategyRunAsAny  RunAsGroupStrategy = "RunAsAny"
)

// FSGroupStrategyOptions configures the fsGroup strategy.
type FSGroupStrategyOptions struct {
	Rule   FSGroupStrategyType
	Ranges []IDRange
}

// FSGroupStrategyType names an fsGroup strategy.
type FSGroupStrategyType string

// fsGroup strategies.
const (
	FSGroupStrategyMayRunAs  FSGroupStrategyType = "MayRunAs"
	FSGroupStrategyMustRunAs FSGroupStrategyType = "MustRunAs"
	FSGroupStrategyRunAsAny  FSGroupStrategyType = "RunAsAny"
)

// SupplementalGroupsStrategyOptions configures the supplemental groups
// strategy.
type SupplementalGroupsStrategyOptions struct {
	Rule   SupplementalGroupsStrategyType
	Ranges []IDRange
}

// SupplementalGroupsStrategyType names a supplemental groups strategy.
type SupplementalGroupsStrategyType string

// Supplemental groups strategies.
const (
	SupplementalGroupsStrategyMayRunAs  SupplementalGroupsStrategyType = "MayRunAs"
	SupplementalGroupsStrategyMustRunAs SupplementalGroupsStrategyType = "MustRunAs"
	SupplementalGroupsStrategyRunAsAny  SupplementalGroupsStrategyType = "RunAsAny"
)

// RuntimeClassStrategyOptions restricts the RuntimeClass of pods.
type RuntimeClassStrategyOptions struct {
	// AllowedRuntimeClassNames: "*" alone allows any; empty allows none.
	AllowedRuntimeClassNames []string
	// DefaultRuntimeClassName is set on pods without one; it must be allowed.
	DefaultRuntimeClassName *string
}

// AllowAllRuntimeClassNames in AllowedRuntimeClassNames allows any
// RuntimeClass.
const AllowAllRuntimeClassNames = "*"

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodSecurityPolicyList is a list of PodSecurityPolicy objects.
type PodSecurityPolicyList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []PodSecurityPolicy
}
