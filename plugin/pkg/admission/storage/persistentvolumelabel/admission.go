// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package persistentvolumelabel restores the PersistentVolumeLabel admission
// plugin that upstream removed in v1.31. It gives a new PersistentVolume the
// zone and region labels of the disk behind it, and a node affinity that
// keeps pods using it in that zone. The historic plugin asked an in-tree
// cloud provider; those are gone, so the labels come from the plugin's
// configuration instead: rules, derivations and an optional lookup webhook
// (see apis/v1alpha1). Everything after the lookup is upstream's last
// version, message for message.
package persistentvolumelabel

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"

	"k8s.io/apiserver/pkg/admission"
	cloudvolume "k8s.io/cloud-provider/volume"
	volumehelpers "k8s.io/cloud-provider/volume/helpers"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/turnstile-k8s/turnstile/pkg/admission/descriptor"
	"github.com/turnstile-k8s/turnstile/pkg/admission/pluginconfig"
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/storage/persistentvolumelabel/apis/v1alpha1"
)

// PluginName is the name users enable.
const PluginName = "PersistentVolumeLabel"

// The zone and region label keys of each style. The zone keys hold "__"
// separated zone lists.
const (
	gaZone     = "topology.kubernetes.io/zone"
	gaRegion   = "topology.kubernetes.io/region"
	betaZone   = "failure-domain.beta.kubernetes.io/zone"
	betaRegion = "failure-domain.beta.kubernetes.io/region"
)

// Descriptor is how Turnstile wires the plugin (pkg/admission/descriptor):
// where upstream last ran it, its configuration's check (building it),
// reloadable.
var Descriptor = descriptor.Plugin{
	Name:       PluginName,
	Register:   Register,
	After:      "ExtendedResourceToleration",
	Check:      pluginconfig.CheckByBuilding(NewFromConfig),
	Reloadable: true,
}

// Register adds the plugin to a registry.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(config io.Reader) (admission.Interface, error) {
		p, err := NewFromConfig(config)
		if err != nil {
			return nil, err
		}
		klog.InfoS("PersistentVolumeLabel is deprecated upstream (removed in v1.31); CSI drivers label volumes with their topology")
		return p, nil
	})
}

// NewFromConfig returns the plugin configured by its entry in the admission
// configuration file; config is nil when there is none. It is also the
// strict check that pkg/admission/configfile runs before the server starts.
func NewFromConfig(config io.Reader) (*Plugin, error) {
	l, err := load(config)
	if err != nil {
		return nil, err
	}
	return New(l), nil
}

// labeler finds the labels of a volume that the plugin may look up. Nil
// labels and a nil error mean the volume stays unlabelled.
type labeler interface {
	labels(ctx context.Context, v volume) (map[string]string, error)
}

// Plugin is the admission plugin.
type Plugin struct {
	*admission.Handler
	labeler labeler
}

var _ admission.MutationInterface = &Plugin{}

// New returns the plugin asking l for labels.
func New(l labeler) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create), labeler: l}
}

// Admit labels a new PersistentVolume and adds the matching node affinity.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != api.Resource("persistentvolumes") {
		return nil
	}
	pv, ok := a.GetObject().(*api.PersistentVolume)
	if !ok {
		return nil
	}
	labels, err := p.findVolumeLabels(ctx, pv)
	if err != nil {
		return admission.NewForbidden(a, err)
	}
	if err := applyLabels(pv, labels); err != nil {
		return admission.NewForbidden(a, err)
	}
	return nil
}

// findVolumeLabels trusts the topology labels of a dynamically provisioned
// volume, since its provisioner knew where it put the disk, and otherwise
// asks the labeler about volumes that have an ID to look up.
func (p *Plugin) findVolumeLabels(ctx context.Context, pv *api.PersistentVolume) (map[string]string, error) {
	zoneKey, regionKey := gaZone, gaRegion
	zone, hasZone := pv.Labels[zoneKey]
	region, hasRegion := pv.Labels[regionKey]
	if !hasZone || !hasRegion {
		zoneKey, regionKey = betaZone, betaRegion
		zone, hasZone = pv.Labels[zoneKey]
		region, hasRegion = pv.Labels[regionKey]
	}
	if _, dynamic := pv.Annotations[storagehelpers.AnnDynamicallyProvisioned]; dynamic && hasZone && hasRegion {
		return map[string]string{zoneKey: zone, regionKey: region}, nil
	}
	v, ok := volumeOf(pv)
	if !ok {
		return nil, nil
	}
	labels, err := p.labeler.labels(ctx, v)
	if err != nil {
		return nil, fmt.Errorf("error querying %s: %w", v, err)
	}
	return labels, nil
}

// applyLabels sets labels on pv, overwriting values the user gave, and adds
// one In requirement per label to every node selector term, unless a term
// already constrains one of the keys: then the user's affinity is left
// alone. That rule also makes a second run a no-op.
func applyLabels(pv *api.PersistentVolume, labels map[string]string) error {
	if len(labels) == 0 {
		return nil
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys) // upstream's order was random; sorted is stable
	requirements := make([]api.NodeSelectorRequirement, 0, len(keys))
	for _, k := range keys {
		v := labels[k]
		values := []string{v}
		if k == gaZone || k == betaZone {
			zones, err := volumehelpers.LabelZonesToSet(v)
			if err != nil {
				return fmt.Errorf("failed to convert label string for Zone: %s to a Set", v)
			}
			values = zones.List() // sorted, without duplicates
		}
		requirements = append(requirements, api.NodeSelectorRequirement{Key: k, Operator: api.NodeSelectorOpIn, Values: values})
	}

	// Nothing is changed before this point, so a rejected volume is untouched.
	if pv.Labels == nil {
		pv.Labels = make(map[string]string, len(labels))
	}
	maps.Copy(pv.Labels, labels)

	if pv.Spec.NodeAffinity == nil {
		pv.Spec.NodeAffinity = &api.VolumeNodeAffinity{}
	}
	if pv.Spec.NodeAffinity.Required == nil {
		pv.Spec.NodeAffinity.Required = &api.NodeSelector{}
	}
	terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
	if len(terms) == 0 {
		terms = []api.NodeSelectorTerm{{}}
	}
	for _, term := range terms {
		for _, e := range term.MatchExpressions {
			if _, ours := labels[e.Key]; ours {
				klog.V(4).InfoS("Volume already has node affinity for a label key; leaving it unchanged",
					"persistentVolume", pv.Name, "key", e.Key)
				return nil
			}
		}
	}
	for i := range terms {
		for _, r := range requirements {
			r.Values = slices.Clone(r.Values)
			terms[i].MatchExpressions = append(terms[i].MatchExpressions, r)
		}
	}
	pv.Spec.NodeAffinity.Required.NodeSelectorTerms = terms
	return nil
}

// volume is a PersistentVolume's disk, as the labeler sees it.
type volume struct {
	typ v1alpha1.VolumeType
	// id is the source's canonical ID (see v1alpha1.VolumeType).
	id     string
	driver string // CSI only
	pv     *api.PersistentVolume
}

// String names the volume as the historic plugin's errors did.
func (v volume) String() string {
	switch v.typ {
	case v1alpha1.GCEPersistentDisk:
		return "GCE PD volume " + v.id
	case v1alpha1.AWSElasticBlockStore:
		return "AWS EBS volume " + v.id
	case v1alpha1.AzureDisk:
		return "AzureDisk volume " + v.id
	case v1alpha1.Cinder:
		return "Cinder volume " + v.id
	case v1alpha1.VsphereVolume:
		return "vSphere Volume " + v.id
	default:
		return fmt.Sprintf("CSI volume %s of driver %s", v.id, v.driver)
	}
}

// volumeOf returns pv's disk, unless its source has no ID to look up or the
// ID is the placeholder a provisioner writes before the disk exists.
func volumeOf(pv *api.PersistentVolume) (volume, bool) {
	s := pv.Spec.PersistentVolumeSource
	v := volume{pv: pv}
	switch {
	case s.GCEPersistentDisk != nil:
		v.typ, v.id = v1alpha1.GCEPersistentDisk, s.GCEPersistentDisk.PDName
	case s.AWSElasticBlockStore != nil:
		v.typ, v.id = v1alpha1.AWSElasticBlockStore, s.AWSElasticBlockStore.VolumeID
	case s.AzureDisk != nil:
		v.typ, v.id = v1alpha1.AzureDisk, s.AzureDisk.DataDiskURI // required by validation
	case s.Cinder != nil:
		v.typ, v.id = v1alpha1.Cinder, s.Cinder.VolumeID
	case s.VsphereVolume != nil:
		v.typ, v.id = v1alpha1.VsphereVolume, s.VsphereVolume.VolumePath
	case s.CSI != nil:
		v.typ, v.id, v.driver = v1alpha1.CSI, s.CSI.VolumeHandle, s.CSI.Driver
	default:
		return volume{}, false
	}
	if v.id == cloudvolume.ProvisionedVolumeName && v.typ != v1alpha1.CSI && v.typ != v1alpha1.VsphereVolume {
		return volume{}, false
	}
	return v, true
}
