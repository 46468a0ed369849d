// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// +k8s:deepcopy-gen=package

// Package v1alpha1 holds the PersistentVolumeLabel plugin's two API types:
// its configuration, given in the plugin's --admission-control-config-file
// entry, and the review it sends to an optional lookup webhook.
//
//	apiVersion: persistentvolumelabel.admission.turnstile.dev/v1alpha1
//	kind: PersistentVolumeLabelConfiguration
//	labelStyle: GA
//	onNoMatch: Ignore
//	rules:
//	- name: prod-central
//	  match: {volumeType: gcePersistentDisk, idRegex: '^prod-(us-central1-[a-f])-'}
//	  zones: ["$1"]
//	  region: us-central1
//
// The in-tree cloud providers that the historic plugin asked are gone; these
// label sources take their place.
package v1alpha1
