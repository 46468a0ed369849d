// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package volumes checks a pod's volumes against a PodSecurityPolicy: the
// allowed volume types, host path prefixes, Flexvolume drivers and inline
// CSI drivers.
package volumes

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/core/pods"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/errs"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/hostpath"
)

// Strategy checks volumes.
type Strategy struct {
	types      []policy.FSType
	allowAll   bool
	hostPaths  []policy.AllowedHostPath
	flexes     []policy.AllowedFlexVolume
	csiDrivers []policy.AllowedCSIDriver
}

// New builds the strategy from the policy.
func New(spec *policy.PodSecurityPolicySpec) *Strategy {
	return &Strategy{
		types:      spec.Volumes,
		allowAll:   slices.Contains(spec.Volumes, policy.All),
		hostPaths:  spec.AllowedHostPaths,
		flexes:     spec.AllowedFlexVolumes,
		csiDrivers: spec.AllowedCSIDrivers,
	}
}

// Validate checks every volume of the pod.
func (s *Strategy) Validate(c *errs.Collector, pod *api.Pod) {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		fsType, ok := TypeOf(v)
		if !ok {
			c.Add(func() *field.Error {
				return field.Invalid(field.NewPath("spec", "volumes").Index(i), "", fmt.Sprintf("unknown volume type for volume: %#v", v.VolumeSource))
			})
			continue
		}
		if !s.allowAll && !slices.Contains(s.types, fsType) &&
			!(fsType == policy.Projected && slices.Contains(s.types, policy.Secret) && isServiceAccountToken(v.Projected)) {
			c.Add(func() *field.Error {
				return field.Invalid(field.NewPath("spec", "volumes").Index(i), string(fsType), fmt.Sprintf("%s volumes are not allowed to be used", fsType))
			})
			continue
		}
		switch fsType {
		case policy.HostPath:
			allowed, readOnly := hostpath.Allows(s.hostPaths, v.HostPath.Path)
			if !allowed {
				c.Add(func() *field.Error {
					return field.Invalid(field.NewPath("spec", "volumes").Index(i).Child("hostPath", "pathPrefix"), v.HostPath.Path, "is not allowed to be used")
				})
			} else if readOnly {
				readOnlyMounts(c, pod, v.Name)
			}
		case policy.FlexVolume:
			if len(s.flexes) > 0 && !slices.ContainsFunc(s.flexes, func(f policy.AllowedFlexVolume) bool { return f.Driver == v.FlexVolume.Driver }) {
				c.Add(func() *field.Error {
					return field.Invalid(field.NewPath("spec", "volumes").Index(i).Child("driver"), v.FlexVolume.Driver, "Flexvolume driver is not allowed to be used")
				})
			}
		case policy.CSI:
			if len(s.csiDrivers) > 0 && !slices.ContainsFunc(s.csiDrivers, func(d policy.AllowedCSIDriver) bool { return d.Name == v.CSI.Driver }) {
				c.Add(func() *field.Error {
					return field.Invalid(field.NewPath("spec", "volumes").Index(i).Child("csi", "driver"), v.CSI.Driver, "Inline CSI driver is not allowed to be used")
				})
			}
		}
	}
}

// readOnlyMounts adds an error for each mount of the named volume, in any
// container, that is not read-only.
func readOnlyMounts(c *errs.Collector, pod *api.Pod, volume string) {
	pods.VisitContainersWithPath(&pod.Spec, field.NewPath("spec"), func(ctr *api.Container, path *field.Path) bool {
		for j, m := range ctr.VolumeMounts {
			if m.Name == volume && !m.ReadOnly {
				c.Add(func() *field.Error {
					return field.Invalid(path.Child("volumeMounts").Index(j).Child("readOnly"), m.ReadOnly, "must be read-only")
				})
			}
		}
		return true
	})
}

// isServiceAccountToken reports whether a projected volume holds only what
// the ServiceAccount admission plugin projects: the token, the cluster's CA
// bundle and the namespace.
func isServiceAccountToken(p *api.ProjectedVolumeSource) bool {
	for _, src := range p.Sources {
		switch {
		case src.ServiceAccountToken != nil:
			if src.ServiceAccountToken.Path != "token" || src.ServiceAccountToken.Audience != "" {
				return false
			}
		case src.ConfigMap != nil:
			if src.ConfigMap.Name != "kube-root-ca.crt" {
				return false
			}
		case src.DownwardAPI != nil:
			for _, item := range src.DownwardAPI.Items {
				if item.Path != "namespace" || item.FieldRef == nil || item.FieldRef.APIVersion != "v1" || item.FieldRef.FieldPath != "metadata.namespace" {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// TypeOf names the volume's source, false for a source this package does
// not know.
func TypeOf(v *api.Volume) (policy.FSType, bool) {
	src := &v.VolumeSource
	switch {
	case src.HostPath != nil:
		return policy.HostPath, true
	case src.EmptyDir != nil:
		return policy.EmptyDir, true
	case src.GCEPersistentDisk != nil:
		return policy.GCEPersistentDisk, true
	case src.AWSElasticBlockStore != nil:
		return policy.AWSElasticBlockStore, true
	case src.GitRepo != nil:
		return policy.GitRepo, true
	case src.Secret != nil:
		return policy.Secret, true
	case src.NFS != nil:
		return policy.NFS, true
	case src.ISCSI != nil:
		return policy.ISCSI, true
	case src.Glusterfs != nil:
		return policy.Glusterfs, true
	case src.PersistentVolumeClaim != nil:
		return policy.PersistentVolumeClaim, true
	case src.RBD != nil:
		return policy.RBD, true
	case src.Quobyte != nil:
		return policy.Quobyte, true
	case src.FlexVolume != nil:
		return policy.FlexVolume, true
	case src.Cinder != nil:
		return policy.Cinder, true
	case src.CephFS != nil:
		return policy.CephFS, true
	case src.Flocker != nil:
		return policy.Flocker, true
	case src.DownwardAPI != nil:
		return policy.DownwardAPI, true
	case src.FC != nil:
		return policy.FC, true
	case src.AzureFile != nil:
		return policy.AzureFile, true
	case src.ConfigMap != nil:
		return policy.ConfigMap, true
	case src.VsphereVolume != nil:
		return policy.VsphereVolume, true
	case src.AzureDisk != nil:
		return policy.AzureDisk, true
	case src.PhotonPersistentDisk != nil:
		return policy.PhotonPersistentDisk, true
	case src.Projected != nil:
		return policy.Projected, true
	case src.PortworxVolume != nil:
		return policy.PortworxVolume, true
	case src.ScaleIO != nil:
		return policy.ScaleIO, true
	case src.StorageOS != nil:
		return policy.StorageOS, true
	case src.CSI != nil:
		return policy.CSI, true
	case src.Ephemeral != nil:
		return policy.Ephemeral, true
	case src.Image != nil:
		return policy.Image, true
	}
	return "", false
}
