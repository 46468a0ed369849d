// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package psptesting holds the PodSecurityPolicy fixtures of the conformance
// v1.24 decision cases (docs/podsecuritypolicy.md), shared by the tests of the providers
// and of the admission plugin. Only tests import it.
package psptesting

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
)

// Restrictive is the conformance fixture "restrictive": no privilege
// escalation, UID, GID, fsGroup and supplemental groups 999, SELinux level
// s9:z0,z1, and nothing else allowed (no volumes, host namespaces, ports or
// capabilities).
func Restrictive() *policy.PodSecurityPolicy {
	only999 := []policy.IDRange{{Min: 999, Max: 999}}
	return &policy.PodSecurityPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "restrictive"},
		Spec: policy.PodSecurityPolicySpec{
			AllowPrivilegeEscalation: ptr.To(false),
			RunAsUser:                policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAs, Ranges: only999},
			RunAsGroup:               &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyMustRunAs, Ranges: only999},
			SELinux: policy.SELinuxStrategyOptions{
				Rule:           policy.SELinuxStrategyMustRunAs,
				SELinuxOptions: &api.SELinuxOptions{Level: "s9:z0,z1"},
			},
			FSGroup:            policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMustRunAs, Ranges: only999},
			SupplementalGroups: policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMustRunAs, Ranges: only999},
		},
	}
}

// Permissive is the conformance fixture "permissive", named "privileged":
// privilege escalation, host namespaces, every host port, volume type and
// capability, and RunAsAny everywhere. Like upstream's fixture it leaves
// privileged false.
func Permissive() *policy.PodSecurityPolicy {
	return &policy.PodSecurityPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "privileged"},
		Spec: policy.PodSecurityPolicySpec{
			AllowPrivilegeEscalation: ptr.To(true),
			HostIPC:                  true,
			HostNetwork:              true,
			HostPID:                  true,
			HostPorts:                []policy.HostPortRange{{Min: 0, Max: 65536}},
			Volumes:                  []policy.FSType{policy.All},
			AllowedCapabilities:      []api.Capability{policy.AllowAllCapabilities},
			RunAsUser:                policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyRunAsAny},
			RunAsGroup:               &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyRunAsAny},
			SELinux:                  policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyRunAsAny},
			FSGroup:                  policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyRunAsAny},
			SupplementalGroups:       policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyRunAsAny},
		},
	}
}

// Named returns psp renamed.
func Named(psp *policy.PodSecurityPolicy, name string) *policy.PodSecurityPolicy {
	psp.Name = name
	return psp
}

// GoodPod is the conformance fixture goodPod: namespace "namespace",
// service account "default", an empty pod security context and one
// container test-c with an empty security context.
func GoodPod() *api.Pod {
	return &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "namespace"},
		Spec: api.PodSpec{
			ServiceAccountName: "default",
			SecurityContext:    &api.PodSecurityContext{},
			Containers:         []api.Container{{Name: "test-c", SecurityContext: &api.SecurityContext{}}},
		},
	}
}

// VolumeSources returns a volume source of every volume type a policy can
// name ("*" excluded), with the source's fields left empty.
func VolumeSources() map[policy.FSType]api.VolumeSource {
	return map[policy.FSType]api.VolumeSource{
		policy.AzureFile:             {AzureFile: &api.AzureFileVolumeSource{}},
		policy.Flocker:               {Flocker: &api.FlockerVolumeSource{}},
		policy.FlexVolume:            {FlexVolume: &api.FlexVolumeSource{}},
		policy.HostPath:              {HostPath: &api.HostPathVolumeSource{}},
		policy.EmptyDir:              {EmptyDir: &api.EmptyDirVolumeSource{}},
		policy.GCEPersistentDisk:     {GCEPersistentDisk: &api.GCEPersistentDiskVolumeSource{}},
		policy.AWSElasticBlockStore:  {AWSElasticBlockStore: &api.AWSElasticBlockStoreVolumeSource{}},
		policy.GitRepo:               {GitRepo: &api.GitRepoVolumeSource{}},
		policy.Secret:                {Secret: &api.SecretVolumeSource{}},
		policy.NFS:                   {NFS: &api.NFSVolumeSource{}},
		policy.ISCSI:                 {ISCSI: &api.ISCSIVolumeSource{}},
		policy.Glusterfs:             {Glusterfs: &api.GlusterfsVolumeSource{}},
		policy.PersistentVolumeClaim: {PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{}},
		policy.RBD:                   {RBD: &api.RBDVolumeSource{}},
		policy.Cinder:                {Cinder: &api.CinderVolumeSource{}},
		policy.CephFS:                {CephFS: &api.CephFSVolumeSource{}},
		policy.DownwardAPI:           {DownwardAPI: &api.DownwardAPIVolumeSource{}},
		policy.FC:                    {FC: &api.FCVolumeSource{}},
		policy.ConfigMap:             {ConfigMap: &api.ConfigMapVolumeSource{}},
		policy.VsphereVolume:         {VsphereVolume: &api.VsphereVirtualDiskVolumeSource{}},
		policy.Quobyte:               {Quobyte: &api.QuobyteVolumeSource{}},
		policy.AzureDisk:             {AzureDisk: &api.AzureDiskVolumeSource{}},
		policy.PhotonPersistentDisk:  {PhotonPersistentDisk: &api.PhotonPersistentDiskVolumeSource{}},
		policy.StorageOS:             {StorageOS: &api.StorageOSVolumeSource{}},
		policy.Projected:             {Projected: &api.ProjectedVolumeSource{}},
		policy.PortworxVolume:        {PortworxVolume: &api.PortworxVolumeSource{}},
		policy.ScaleIO:               {ScaleIO: &api.ScaleIOVolumeSource{}},
		policy.CSI:                   {CSI: &api.CSIVolumeSource{}},
		policy.Ephemeral:             {Ephemeral: &api.EphemeralVolumeSource{}},
		policy.Image:                 {Image: &api.ImageVolumeSource{}},
	}
}

// TeamPolicy is a restricted policy whose UIDs and groups start at uid.
func TeamPolicy(name string, uid int64) *policy.PodSecurityPolicy {
	ranges := []policy.IDRange{{Min: uid, Max: uid + 999}}
	return &policy.PodSecurityPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			policy.SeccompAllowedProfilesAnnotationKey: "runtime/default",
			policy.SeccompDefaultProfileAnnotationKey:  "runtime/default",
		}},
		Spec: policy.PodSecurityPolicySpec{
			RequiredDropCapabilities: []api.Capability{"ALL"},
			Volumes:                  []policy.FSType{policy.ConfigMap, policy.EmptyDir, policy.Projected, policy.Secret, policy.DownwardAPI, policy.PersistentVolumeClaim},
			RunAsUser:                policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAs, Ranges: ranges},
			SELinux:                  policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyRunAsAny},
			SupplementalGroups:       policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMayRunAs, Ranges: ranges},
			FSGroup:                  policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMustRunAs, Ranges: ranges},
			AllowPrivilegeEscalation: ptr.To(false),
		},
	}
}
