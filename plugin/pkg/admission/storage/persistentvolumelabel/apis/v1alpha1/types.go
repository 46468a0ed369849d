// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemeGroupVersion is the group and version of both types.
var SchemeGroupVersion = schema.GroupVersion{Group: "persistentvolumelabel.admission.turnstile.dev", Version: "v1alpha1"}

// VolumeType names a PersistentVolume source that has an ID to look up, by
// its field name in the PersistentVolume spec.
type VolumeType string

// The volume types the plugin looks up, and the field that is each one's ID.
const (
	GCEPersistentDisk    VolumeType = "gcePersistentDisk"    // pdName
	AWSElasticBlockStore VolumeType = "awsElasticBlockStore" // volumeID
	AzureDisk            VolumeType = "azureDisk"            // diskURI
	Cinder               VolumeType = "cinder"               // volumeID
	VsphereVolume        VolumeType = "vsphereVolume"        // volumePath
	CSI                  VolumeType = "csi"                  // volumeHandle, with the driver
)

// LabelStyle chooses the zone and region label keys.
type LabelStyle string

const (
	// GA writes topology.kubernetes.io/zone and topology.kubernetes.io/region.
	GA LabelStyle = "GA"
	// Beta writes failure-domain.beta.kubernetes.io/zone and
	// failure-domain.beta.kubernetes.io/region, for clusters whose tooling
	// still reads them.
	Beta LabelStyle = "Beta"
)

// NoMatchAction says what happens to a volume that no source can label.
type NoMatchAction string

const (
	// Ignore admits the volume unlabelled, as the historic plugin admitted
	// a volume type it did not know.
	Ignore NoMatchAction = "Ignore"
	// Deny rejects the volume, as the historic plugin rejected a volume its
	// cloud could not find.
	Deny NoMatchAction = "Deny"
)

// FailurePolicy says what happens when the lookup webhook cannot answer.
type FailurePolicy string

const (
	// Fail rejects the volume.
	Fail FailurePolicy = "Fail"
	// IgnoreFailure admits the volume unlabelled.
	IgnoreFailure FailurePolicy = "Ignore"
)

// TopologyTarget is the label a CSI topology key is translated to.
type TopologyTarget string

const (
	Zone   TopologyTarget = "zone"
	Region TopologyTarget = "region"
)

// PersistentVolumeLabelConfiguration says where the plugin finds the zone,
// region and other labels of a new PersistentVolume. Sources are asked in
// order: the rules (first match wins), then the derivations, then the
// webhook. A volume that none of them labels follows onNoMatch.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type PersistentVolumeLabelConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// LabelStyle is GA (the default) or Beta.
	LabelStyle LabelStyle `json:"labelStyle,omitempty"`
	// OnNoMatch is Ignore (the default) or Deny.
	OnNoMatch NoMatchAction `json:"onNoMatch,omitempty"`
	// VolumeTypes limits the lookup to these types; empty means all six.
	// Volumes of other types, and of types with no ID (hostPath, nfs,
	// local...), are admitted unlabelled whatever onNoMatch says.
	VolumeTypes []VolumeType `json:"volumeTypes,omitempty"`
	// Rules are tried in order; the first whose match fits the volume
	// gives its labels.
	Rules []Rule `json:"rules,omitempty"`
	// Derive finds labels from the volume itself when no rule matches.
	Derive Derivations `json:"derive,omitempty"`
	// Webhook asks an inventory service when neither a rule nor a
	// derivation gives labels.
	Webhook *Webhook `json:"webhook,omitempty"`
}

// Rule labels the volumes whose ID matches a regular expression. Zones,
// region and extra label values may use the expression's capture groups
// ($1, ${name}).
type Rule struct {
	// Name appears in errors and logs; optional.
	Name  string    `json:"name,omitempty"`
	Match RuleMatch `json:"match"`
	// Zones, when more than one, make a regional volume: the zone label
	// joins them with "__", as the historic plugin wrote regional disks.
	Zones       []string          `json:"zones,omitempty"`
	Region      string            `json:"region,omitempty"`
	ExtraLabels map[string]string `json:"extraLabels,omitempty"`
}

// RuleMatch selects volumes of one type by ID.
type RuleMatch struct {
	VolumeType VolumeType `json:"volumeType"`
	// CSIDriver is required for, and only allowed with, volumeType csi.
	CSIDriver string `json:"csiDriver,omitempty"`
	// IDRegex is an RE2 expression matched against the volume's ID; it is
	// not anchored unless it says so.
	IDRegex string `json:"idRegex"`
}

// Derivations need no rules: each reads labels from the volume itself.
type Derivations struct {
	// AWSZoneFromVolumeID reads "aws://<zone>/vol-..." volume IDs: the
	// zone, and the region as the zone without its last letter.
	AWSZoneFromVolumeID bool `json:"awsZoneFromVolumeID,omitempty"`
	// GCERegionFromZone gives a labelled zone ("us-central1-a") its region
	// ("us-central1") when nothing else gave one, for rules, derivations
	// and the webhook alike.
	GCERegionFromZone bool `json:"gceRegionFromZone,omitempty"`
	// CSITopologyKeys translates node affinity keys that a CSI driver
	// already put on the volume (topology.gke.io/zone,
	// topology.ebs.csi.aws.com/zone...) into the zone or region label.
	CSITopologyKeys map[string]TopologyTarget `json:"csiTopologyKeys,omitempty"`
}

// Webhook is an HTTPS service that answers PersistentVolumeLabelReviews.
type Webhook struct {
	// KubeConfigFile names the service's URL, CA and the client
	// credentials, as ImagePolicyWebhook's kubeconfig does.
	KubeConfigFile string `json:"kubeConfigFile"`
	// Timeout bounds one lookup; default 5s, at most 30s.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// CacheTTL keeps answers, found or not, per volume; default 5m, 0
	// disables the cache. Failures are never cached.
	CacheTTL *metav1.Duration `json:"cacheTTL,omitempty"`
	// FailurePolicy is Fail (the default) or Ignore.
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`
}

// PersistentVolumeLabelReview is the webhook's request and response: the
// plugin sends the spec, and the service fills in the status.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type PersistentVolumeLabelReview struct {
	metav1.TypeMeta `json:",inline"`

	Spec   PersistentVolumeLabelReviewSpec   `json:"spec"`
	Status PersistentVolumeLabelReviewStatus `json:"status,omitempty"`
}

// PersistentVolumeLabelReviewSpec identifies the volume.
type PersistentVolumeLabelReviewSpec struct {
	// Name is the PersistentVolume's name, for the service's logs; answers
	// are cached by type, driver and ID, not by name.
	Name       string     `json:"name"`
	VolumeType VolumeType `json:"volumeType"`
	VolumeID   string     `json:"volumeID"`
	CSIDriver  string     `json:"csiDriver,omitempty"`
}

// PersistentVolumeLabelReviewStatus is the service's answer.
type PersistentVolumeLabelReviewStatus struct {
	// Found is false when the service does not know the volume; onNoMatch
	// then applies.
	Found  bool     `json:"found"`
	Zones  []string `json:"zones,omitempty"`
	Region string   `json:"region,omitempty"`
	// Labels are extra labels to set, as a rule's extraLabels.
	Labels map[string]string `json:"labels,omitempty"`
}
