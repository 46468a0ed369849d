// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package persistentvolumelabel

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/admission"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// rulesConfig has n GCE rules, the i-th matching IDs that idRegex (with %d
// for i) matches, each taking its zone from the "zone" group.
func rulesConfig(n int, idRegex string) string {
	var b strings.Builder
	b.WriteString("derive: {gceRegionFromZone: true}\nrules:\n")
	for i := range n {
		fmt.Fprintf(&b, "- name: r%d\n  match: {volumeType: gcePersistentDisk, idRegex: '"+idRegex+"'}\n  zones: ['${zone}']\n", i, i)
	}
	return b.String()
}

// Rules whose expressions each hold a literal of their own ("-7-"): most
// are skipped without running the expression.
const distinctRules = "^disk-%d-(?P<zone>[a-z0-9-]+)$"

// Rules whose longest literal ("disk-") every ID has: every expression runs.
const alikeRules = "^disk-(?P<zone>[a-z0-9-]+)-%d$"

// benchmarkAdmit labels a volume that only the last of n rules matches.
func benchmarkAdmit(b *testing.B, n int, idRegex, id string) {
	p := New(loadConfig(b, rulesConfig(n, idRegex)))
	base := gcePV("pv", id)
	ctx := context.Background()
	pv := &api.PersistentVolume{}
	a := attributes(pv, base.Name, "persistentvolumes", admission.Create)
	b.ReportAllocs()
	for b.Loop() {
		*pv = *base
		if err := p.Admit(ctx, a, nil); err != nil {
			b.Fatal(err)
		}
		if pv.Labels[gaRegion] != "us-central1" {
			b.Fatalf("labels = %v", pv.Labels)
		}
	}
}

// The budget: at most 5 µs per PersistentVolume with 100 rules.
func BenchmarkAdmit1Rule(b *testing.B) {
	benchmarkAdmit(b, 1, distinctRules, "disk-0-us-central1-a")
}
func BenchmarkAdmit100Rules(b *testing.B) {
	benchmarkAdmit(b, 100, distinctRules, "disk-99-us-central1-a")
}
func BenchmarkAdmit100RulesAlike(b *testing.B) {
	benchmarkAdmit(b, 100, alikeRules, "disk-us-central1-a-99")
}

// A volume without an ID costs nothing.
func BenchmarkAdmitHostPath(b *testing.B) {
	p := New(loadConfig(b, rulesConfig(100, distinctRules)))
	pv := hostPathPV("pv")
	a := attributes(pv, pv.Name, "persistentvolumes", admission.Create)
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Admit(context.Background(), a, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// Decoding the configuration never panics, whatever the bytes. Seeds: the
// example, and the shapes the unit tests use.
func FuzzLoad(f *testing.F) {
	example, err := os.ReadFile("../../../../../examples/admission/persistentvolumelabel.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	f.Add([]byte(header + rulesConfig(3, distinctRules)))
	f.Add([]byte(header + "rules:\n- match: {volumeType: csi, csiDriver: d.example.com, idRegex: '(?P<a>x)(y)'}\n  zones: ['$1', '${a}', '$$']\n  extraLabels: {k: '${2}'}\n"))
	f.Add([]byte(header + "derive:\n  awsZoneFromVolumeID: true\n  csiTopologyKeys: {topology.gke.io/zone: zone, r: region}\nwebhook: {kubeConfigFile: x, timeout: 1s}\n"))
	f.Add([]byte(header + "labelStyle: Beta\nonNoMatch: Deny\nvolumeTypes: [cinder]\n"))
	f.Add([]byte(`{"apiVersion":"persistentvolumelabel.admission.turnstile.dev/v1alpha1","kind":"PersistentVolumeLabelConfiguration","rules":[{"match":{"volumeType":"cinder","idRegex":"(.*)"},"zones":["$1"]}]}`))
	volumes := []*api.PersistentVolume{
		gcePV("pv", "disk-1-us-central1-a"),
		awsPV("pv", "aws://us-east-1a/vol-1"),
		csiPV("d.example.com", "xy", in("topology.gke.io/zone", "z-1")),
		{Spec: api.PersistentVolumeSpec{PersistentVolumeSource: api.PersistentVolumeSource{Cinder: &api.CinderPersistentVolumeSource{VolumeID: "a__b"}}}},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := load(bytes.NewReader(data))
		if err != nil {
			return
		}
		p := New(l)
		for _, v := range volumes {
			pv := v.DeepCopy()
			_ = p.Admit(context.Background(), attributes(pv, "pv", "persistentvolumes", admission.Create), nil)
		}
	})
}
