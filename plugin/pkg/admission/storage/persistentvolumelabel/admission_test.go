// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package persistentvolumelabel

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// fakeLabeler answers every lookup the same way and counts the lookups.
type fakeLabeler struct {
	out   map[string]string
	err   error
	calls int
}

func (f *fakeLabeler) labels(context.Context, volume) (map[string]string, error) {
	f.calls++
	return maps.Clone(f.out), f.err
}

func attributes(obj runtime.Object, name string, resource string, op admission.Operation) admission.Attributes {
	return admission.NewAttributesRecord(obj, nil, api.Kind("PersistentVolume").WithVersion("version"), "", name,
		api.Resource(resource).WithVersion("version"), "", op, &metav1.CreateOptions{}, false, nil)
}

func gcePV(name, pdName string) *api.PersistentVolume {
	return &api.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "myns"},
		Spec: api.PersistentVolumeSpec{PersistentVolumeSource: api.PersistentVolumeSource{
			GCEPersistentDisk: &api.GCEPersistentDiskVolumeSource{PDName: pdName},
		}},
	}
}

func awsPV(name, volumeID string) *api.PersistentVolume {
	return &api.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: api.PersistentVolumeSpec{PersistentVolumeSource: api.PersistentVolumeSource{
			AWSElasticBlockStore: &api.AWSElasticBlockStoreVolumeSource{VolumeID: volumeID},
		}},
	}
}

func hostPathPV(name string) *api.PersistentVolume {
	return &api.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: api.PersistentVolumeSpec{PersistentVolumeSource: api.PersistentVolumeSource{
			HostPath: &api.HostPathVolumeSource{Path: "/foo"},
		}},
	}
}

func with(pv *api.PersistentVolume, mutate func(*api.PersistentVolume)) *api.PersistentVolume {
	mutate(pv)
	return pv
}

func dynamic(labels map[string]string) func(*api.PersistentVolume) {
	return func(pv *api.PersistentVolume) {
		pv.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": "kubernetes.io/gce-pd"}
		pv.Labels = labels
	}
}

func terms(exprs ...[]api.NodeSelectorRequirement) func(*api.PersistentVolume) {
	return func(pv *api.PersistentVolume) {
		sel := &api.NodeSelector{}
		for _, e := range exprs {
			sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, api.NodeSelectorTerm{MatchExpressions: e})
		}
		pv.Spec.NodeAffinity = &api.VolumeNodeAffinity{Required: sel}
	}
}

func in(key string, values ...string) api.NodeSelectorRequirement {
	return api.NodeSelectorRequirement{Key: key, Operator: api.NodeSelectorOpIn, Values: values}
}

// affinity is the expected node affinity: one term per argument.
func affinity(exprs ...[]api.NodeSelectorRequirement) *api.VolumeNodeAffinity {
	pv := &api.PersistentVolume{}
	terms(exprs...)(pv)
	return pv.Spec.NodeAffinity
}

// sameAffinity compares node affinities with each term's expressions in any
// order, as the historic tests did.
func sameAffinity(a, b *api.VolumeNodeAffinity) bool {
	norm := func(n *api.VolumeNodeAffinity) *api.VolumeNodeAffinity {
		if n == nil || n.Required == nil {
			return n
		}
		n = n.DeepCopy()
		for _, t := range n.Required.NodeSelectorTerms {
			slices.SortFunc(t.MatchExpressions, func(x, y api.NodeSelectorRequirement) int { return strings.Compare(x.Key, y.Key) })
		}
		return n
	}
	return apiequality.Semantic.DeepEqual(norm(a), norm(b))
}

// The conformance cases of section 3.7 of the removed-plugins spec.
func TestSpecConformance(t *testing.T) {
	zoneReqs := func(zone, region string) []api.NodeSelectorRequirement {
		return []api.NodeSelectorRequirement{in(gaZone, zone), in(gaRegion, region)}
	}
	cases := []struct {
		name    string
		pv      *api.PersistentVolume
		labeler fakeLabeler
		// wantLabels and wantAffinity describe the PV after admission;
		// nil means unchanged.
		wantLabels   map[string]string
		wantAffinity *api.VolumeNodeAffinity
		wantErr      string
		wantCalls    int
	}{{
		name:    "1 hostPath is not looked up",
		pv:      hostPathPV("noncloud"),
		labeler: fakeLabeler{out: map[string]string{"a": "1"}},
	}, {
		name:      "2 lookup error is Forbidden and leaves the PV unchanged",
		pv:        gcePV("gcepd", "123"),
		labeler:   fakeLabeler{err: errors.New("invalid volume")},
		wantErr:   `persistentvolumes "gcepd" is forbidden: error querying GCE PD volume 123: invalid volume`,
		wantCalls: 1,
	}, {
		name:      "3 empty labels leave the PV unchanged",
		pv:        gcePV("gcepd", "123"),
		labeler:   fakeLabeler{out: map[string]string{}},
		wantCalls: 1,
	}, {
		name:      "4 nil labels leave the PV unchanged",
		pv:        gcePV("gcepd", "123"),
		wantCalls: 1,
	}, {
		name:       "5 dynamically provisioned with beta labels: trusted, not looked up",
		pv:         with(gcePV("dyn", "123"), dynamic(map[string]string{betaZone: "existingDomain", betaRegion: "existingRegion"})),
		labeler:    fakeLabeler{out: map[string]string{betaZone: "other", betaRegion: "other"}},
		wantLabels: map[string]string{betaZone: "existingDomain", betaRegion: "existingRegion"},
		wantAffinity: affinity([]api.NodeSelectorRequirement{
			in(betaRegion, "existingRegion"), in(betaZone, "existingDomain")}),
	}, {
		name:         "6 dynamically provisioned with GA labels: trusted",
		pv:           with(gcePV("dyn", "123"), dynamic(map[string]string{gaZone: "existingDomain", gaRegion: "existingRegion"})),
		labeler:      fakeLabeler{out: map[string]string{gaZone: "other", gaRegion: "other"}},
		wantLabels:   map[string]string{gaZone: "existingDomain", gaRegion: "existingRegion"},
		wantAffinity: affinity(zoneReqs("existingDomain", "existingRegion")),
	}, {
		name:         "7 dynamically provisioned with a zone only: looked up",
		pv:           with(gcePV("dyn", "123"), dynamic(map[string]string{gaZone: "existingDomain"})),
		labeler:      fakeLabeler{out: map[string]string{gaZone: "domain1", gaRegion: "region1"}},
		wantLabels:   map[string]string{gaZone: "domain1", gaRegion: "region1"},
		wantAffinity: affinity(zoneReqs("domain1", "region1")),
		wantCalls:    1,
	}, {
		name:    "7 dynamically provisioned hostPath with a zone only: ignored",
		pv:      with(hostPathPV("dyn"), dynamic(map[string]string{gaZone: "existingDomain"})),
		labeler: fakeLabeler{out: map[string]string{gaZone: "domain1", gaRegion: "region1"}},
	}, {
		name:         "8 trust applies to any volume type",
		pv:           with(awsPV("dyn", "vol-1"), dynamic(map[string]string{gaZone: "existingDomain", gaRegion: "existingRegion"})),
		wantLabels:   map[string]string{gaZone: "existingDomain", gaRegion: "existingRegion"},
		wantAffinity: affinity(zoneReqs("existingDomain", "existingRegion")),
	}, {
		name: "9 user labels are overwritten",
		pv: with(gcePV("gcepd", "123"), func(pv *api.PersistentVolume) {
			pv.Labels = map[string]string{gaZone: "existingDomain", gaRegion: "existingRegion"}
		}),
		labeler:      fakeLabeler{out: map[string]string{gaZone: "domain1", gaRegion: "region1"}},
		wantLabels:   map[string]string{gaZone: "domain1", gaRegion: "region1"},
		wantAffinity: affinity(zoneReqs("domain1", "region1")),
		wantCalls:    1,
	}, {
		name:         "10 any labels; a multi-zone value becomes a sorted set",
		pv:           gcePV("gcepd", "123"),
		labeler:      fakeLabeler{out: map[string]string{"a": "1", "b": "2", gaZone: "1__2__3"}},
		wantLabels:   map[string]string{"a": "1", "b": "2", gaZone: "1__2__3"},
		wantAffinity: affinity([]api.NodeSelectorRequirement{in("a", "1"), in("b", "2"), in(gaZone, "1", "2", "3")}),
		wantCalls:    1,
	}, {
		name:      "11 an empty zone piece is Forbidden",
		pv:        gcePV("gcepd", "123"),
		labeler:   fakeLabeler{out: map[string]string{gaZone: "a__"}},
		wantErr:   `persistentvolumes "gcepd" is forbidden: failed to convert label string for Zone: a__ to a Set`,
		wantCalls: 1,
	}, {
		name:         "12 a user label is replaced",
		pv:           with(gcePV("gcepd", "123"), func(pv *api.PersistentVolume) { pv.Labels = map[string]string{"a": "not1"} }),
		labeler:      fakeLabeler{out: map[string]string{"a": "1"}},
		wantLabels:   map[string]string{"a": "1"},
		wantAffinity: affinity([]api.NodeSelectorRequirement{in("a", "1")}),
		wantCalls:    1,
	}, {
		name:         "13 a key already in the affinity leaves the affinity alone",
		pv:           with(gcePV("gcepd", "123"), terms([]api.NodeSelectorRequirement{in("c", "existing")})),
		labeler:      fakeLabeler{out: map[string]string{"a": "1", "b": "2", "c": "3"}},
		wantLabels:   map[string]string{"a": "1", "b": "2", "c": "3"},
		wantAffinity: affinity([]api.NodeSelectorRequirement{in("c", "existing")}),
		wantCalls:    1,
	}, {
		name:       "14 new keys are added to an existing term",
		pv:         with(gcePV("gcepd", "123"), terms([]api.NodeSelectorRequirement{in("a", "1"), in("b", "2"), in("c", "3")})),
		labeler:    fakeLabeler{out: map[string]string{"d": "4", "e": "5", "f": "6"}},
		wantLabels: map[string]string{"d": "4", "e": "5", "f": "6"},
		wantAffinity: affinity([]api.NodeSelectorRequirement{
			in("a", "1"), in("b", "2"), in("c", "3"), in("d", "4"), in("e", "5"), in("f", "6")}),
		wantCalls: 1,
	}, {
		name:       "15 every term gets the requirements",
		pv:         with(gcePV("gcepd", "123"), terms([]api.NodeSelectorRequirement{in("a", "1")}, []api.NodeSelectorRequirement{in("b", "2")})),
		labeler:    fakeLabeler{out: map[string]string{gaZone: "domain1", gaRegion: "region1"}},
		wantLabels: map[string]string{gaZone: "domain1", gaRegion: "region1"},
		wantAffinity: affinity(
			append([]api.NodeSelectorRequirement{in("a", "1")}, zoneReqs("domain1", "region1")...),
			append([]api.NodeSelectorRequirement{in("b", "2")}, zoneReqs("domain1", "region1")...)),
		wantCalls: 1,
	}, {
		name:    "16 the provisioning placeholder is not looked up",
		pv:      gcePV("gcepd", "placeholder-for-provisioning"),
		labeler: fakeLabeler{out: map[string]string{gaZone: "domain1"}},
	}, {
		name:         "20 AWS EBS with a multi-zone value",
		pv:           awsPV("ebs", "vol-1"),
		labeler:      fakeLabeler{out: map[string]string{"a": "1", "b": "2", gaZone: "1__2__3"}},
		wantLabels:   map[string]string{"a": "1", "b": "2", gaZone: "1__2__3"},
		wantAffinity: affinity([]api.NodeSelectorRequirement{in("a", "1"), in("b", "2"), in(gaZone, "1", "2", "3")}),
		wantCalls:    1,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.pv.DeepCopy()
			p := New(&tc.labeler)
			err := p.Admit(context.Background(), attributes(tc.pv, tc.pv.Name, "persistentvolumes", admission.Create), nil)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.labeler.calls != tc.wantCalls {
				t.Errorf("labeler called %d times, want %d", tc.labeler.calls, tc.wantCalls)
			}
			if tc.wantErr != "" || (tc.wantLabels == nil && tc.wantAffinity == nil) {
				if !apiequality.Semantic.DeepEqual(before, tc.pv) {
					t.Errorf("PV changed: %+v", tc.pv)
				}
				return
			}
			if !maps.Equal(tc.pv.Labels, tc.wantLabels) {
				t.Errorf("labels = %v, want %v", tc.pv.Labels, tc.wantLabels)
			}
			if !sameAffinity(tc.pv.Spec.NodeAffinity, tc.wantAffinity) {
				t.Errorf("node affinity = %+v, want %+v", tc.pv.Spec.NodeAffinity.Required, tc.wantAffinity.Required)
			}

			// 19: a second run (admission reinvocation) changes nothing.
			once := tc.pv.DeepCopy()
			if err := p.Admit(context.Background(), attributes(tc.pv, tc.pv.Name, "persistentvolumes", admission.Create), nil); err != nil {
				t.Fatalf("reinvocation: %v", err)
			}
			if !apiequality.Semantic.DeepEqual(once, tc.pv) {
				t.Errorf("reinvocation changed the PV:\n%+v\nto\n%+v", once.Spec.NodeAffinity, tc.pv.Spec.NodeAffinity)
			}
		})
	}
}

// Cases 17 and 18: only CREATE of persistentvolumes is handled.
func TestOnlyPersistentVolumeCreates(t *testing.T) {
	l := &fakeLabeler{out: map[string]string{gaZone: "a"}}
	p := New(l)
	if p.Handles(admission.Update) || p.Handles(admission.Delete) || !p.Handles(admission.Create) {
		t.Errorf("handles create=%v update=%v delete=%v; want only create",
			p.Handles(admission.Create), p.Handles(admission.Update), p.Handles(admission.Delete))
	}
	pv := gcePV("gcepd", "123")
	if err := p.Admit(context.Background(), attributes(pv, pv.Name, "persistentvolumeclaims", admission.Create), nil); err != nil {
		t.Fatal(err)
	}
	if err := p.Admit(context.Background(), attributes(&api.Pod{}, "p", "persistentvolumes", admission.Create), nil); err != nil {
		t.Fatal(err)
	}
	if l.calls != 0 || pv.Labels != nil {
		t.Errorf("another resource or object was labelled: calls=%d labels=%v", l.calls, pv.Labels)
	}
}

// Every volume source the plugin looks up, with its canonical ID.
func TestVolumeOf(t *testing.T) {
	source := func(s api.PersistentVolumeSource) *api.PersistentVolume {
		return &api.PersistentVolume{Spec: api.PersistentVolumeSpec{PersistentVolumeSource: s}}
	}
	cases := []struct {
		pv   *api.PersistentVolume
		want string // volume.String(); empty for no lookup
	}{
		{gcePV("", "pd-1"), "GCE PD volume pd-1"},
		{awsPV("", "aws://us-east-1a/vol-1"), "AWS EBS volume aws://us-east-1a/vol-1"},
		{source(api.PersistentVolumeSource{AzureDisk: &api.AzureDiskVolumeSource{DiskName: "d", DataDiskURI: "https://x/d.vhd"}}), "AzureDisk volume https://x/d.vhd"},
		{source(api.PersistentVolumeSource{Cinder: &api.CinderPersistentVolumeSource{VolumeID: "c-1"}}), "Cinder volume c-1"},
		{source(api.PersistentVolumeSource{VsphereVolume: &api.VsphereVirtualDiskVolumeSource{VolumePath: "[ds] v.vmdk"}}), "vSphere Volume [ds] v.vmdk"},
		{source(api.PersistentVolumeSource{CSI: &api.CSIPersistentVolumeSource{Driver: "pd.csi.storage.gke.io", VolumeHandle: "h/1"}}), "CSI volume h/1 of driver pd.csi.storage.gke.io"},
		{hostPathPV(""), ""},
		{source(api.PersistentVolumeSource{NFS: &api.NFSVolumeSource{Server: "s", Path: "/"}}), ""},
		{gcePV("", "placeholder-for-provisioning"), ""},
		{awsPV("", "placeholder-for-provisioning"), ""},
		{source(api.PersistentVolumeSource{Cinder: &api.CinderPersistentVolumeSource{VolumeID: "placeholder-for-provisioning"}}), ""},
	}
	for _, tc := range cases {
		v, ok := volumeOf(tc.pv)
		if got := map[bool]string{true: v.String(), false: ""}[ok]; got != tc.want {
			t.Errorf("volumeOf(%+v) = %q, want %q", tc.pv.Spec.PersistentVolumeSource, got, tc.want)
		}
	}
}
