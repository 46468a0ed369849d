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

// rulesConfig has n GCE rules; only the last matches disk "disk-<n-1>-x",
// so a lookup tries every rule.
func rulesConfig(n int) string {
	var b strings.Builder
	b.WriteString("derive: {gceRegionFromZone: true}\nrules:\n")
	for i := range n {
		fmt.Fprintf(&b, "- name: r%d\n  match: {volumeType: gcePersistentDisk, idRegex: '^disk-%d-(?P<zone>[a-z0-9-]+)$'}\n  zones: ['${zone}']\n", i, i)
	}
	return b.String()
}

func benchmarkAdmit(b *testing.B, rules int) {
	p := New(load(b, rulesConfig(rules)))
	base := gcePV("pv", fmt.Sprintf("disk-%d-us-central1-a", rules-1))
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
func BenchmarkAdmit1Rule(b *testing.B)    { benchmarkAdmit(b, 1) }
func BenchmarkAdmit100Rules(b *testing.B) { benchmarkAdmit(b, 100) }

// A volume without an ID costs nothing.
func BenchmarkAdmitHostPath(b *testing.B) {
	p := New(load(b, rulesConfig(100)))
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
	f.Add([]byte(header + rulesConfig(3)))
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
		l, err := Load(bytes.NewReader(data))
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
