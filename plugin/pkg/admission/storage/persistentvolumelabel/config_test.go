// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package persistentvolumelabel

import (
	"context"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	api "k8s.io/kubernetes/pkg/apis/core"
)

const header = "apiVersion: persistentvolumelabel.admission.turnstile.dev/v1alpha1\nkind: PersistentVolumeLabelConfiguration\n"

func loadConfig(t testing.TB, yaml string) *configuredLabeler {
	t.Helper()
	l, err := load(strings.NewReader(header + yaml))
	if err != nil {
		t.Fatal(err)
	}
	return l.(*configuredLabeler)
}

func TestExampleLoads(t *testing.T) {
	f, err := os.Open("../../../../../examples/admission/persistentvolumelabel.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := load(f); err != nil {
		t.Fatal(err)
	}
}

// Every invalid configuration stops the plugin with an error that names the
// field, and the rule by its index.
func TestInvalidConfiguration(t *testing.T) {
	cases := []struct {
		name, config string
		want         []string
	}{
		{"empty", "", []string{"PersistentVolumeLabel: its configuration is empty"}},
		{"unknown field", header + "onNoMatc: Deny\n", []string{`unknown field "onNoMatc"`}},
		{"duplicate field", header + "onNoMatch: Deny\nonNoMatch: Ignore\n", []string{`key "onNoMatch" already set in map`}},
		{"wrong kind", "apiVersion: persistentvolumelabel.admission.turnstile.dev/v1alpha1\nkind: PersistentVolumeLabelReview\n", []string{"want apiVersion persistentvolumelabel.admission.turnstile.dev/v1alpha1, kind PersistentVolumeLabelConfiguration"}},
		{"label style", header + "labelStyle: ga\n", []string{`labelStyle: Unsupported value: "ga"`}},
		{"no match action", header + "onNoMatch: deny\n", []string{`onNoMatch: Unsupported value: "deny"`}},
		{"volume type", header + "volumeTypes: [gce]\n", []string{`volumeTypes[0]: Unsupported value: "gce"`}},
		{"duplicate volume type", header + "volumeTypes: [csi, csi]\n", []string{`volumeTypes[1]: Duplicate value: "csi"`}},
		{"bad regex", header + "rules:\n- match: {volumeType: cinder, idRegex: '('}\n  region: r\n", []string{"rules[0].match.idRegex: Invalid value: \"(\": error parsing regexp"}},
		{"no regex", header + "rules:\n- match: {volumeType: cinder}\n  region: r\n", []string{"rules[0].match.idRegex: Required value"}},
		{"no volume type", header + "rules:\n- match: {idRegex: x}\n  region: r\n", []string{"rules[0].match.volumeType: Required value"}},
		{"neither zone nor region", header + "rules:\n- match: {volumeType: cinder, idRegex: x}\n- match: {volumeType: cinder, idRegex: x}\n  extraLabels: {a: b}\n",
			[]string{"rules[0]: Required value: a rule gives zones, region or both", "rules[1]: Required value"}},
		{"csi without driver", header + "rules:\n- match: {volumeType: csi, idRegex: x}\n  region: r\n", []string{"rules[0].match.csiDriver: Required value"}},
		{"driver without csi", header + "rules:\n- match: {volumeType: cinder, csiDriver: d, idRegex: x}\n  region: r\n", []string{"rules[0].match.csiDriver: Forbidden: only allowed with volumeType csi"}},
		{"bad driver", header + "rules:\n- match: {volumeType: csi, csiDriver: Bad_Driver, idRegex: x}\n  region: r\n", []string{"rules[0].match.csiDriver: Invalid value"}},
		{"type not looked up", header + "volumeTypes: [csi]\nrules:\n- match: {volumeType: cinder, idRegex: x}\n  region: r\n", []string{"rules[0].match.volumeType: Invalid value: \"cinder\": is not in volumeTypes"}},
		{"invalid region", header + "rules:\n- match: {volumeType: cinder, idRegex: x}\n  region: 'us central'\n", []string{`rules[0].region: Invalid value: "us central"`}},
		{"zone with delimiter", header + "rules:\n- match: {volumeType: cinder, idRegex: x}\n  zones: [a__b]\n", []string{`rules[0].zones[0]: Invalid value: "a__b": a zone is not empty and does not contain "__"`}},
		{"empty zone", header + "rules:\n- match: {volumeType: cinder, idRegex: x}\n  zones: ['']\n", []string{`rules[0].zones[0]: Invalid value: ""`}},
		{"zones too long", header + "rules:\n- match: {volumeType: cinder, idRegex: x}\n  zones: [" + strings.Repeat("a", 40) + ", " + strings.Repeat("b", 40) + "]\n", []string{"rules[0].zones: Too long"}},
		{"missing capture group", header + "rules:\n- match: {volumeType: cinder, idRegex: '^(a)-(?P<z>.*)'}\n  zones: ['$2', '$3', '${y}']\n",
			[]string{`rules[0].zones[1]: Invalid value: "$3": idRegex has no capture group "3"`, `rules[0].zones[2]: Invalid value: "${y}": idRegex has no capture group "y"`}},
		{"invalid extra key", header + "rules:\n- match: {volumeType: cinder, idRegex: x}\n  region: r\n  extraLabels: {'a b': c}\n", []string{"rules[0].extraLabels[a b]: Invalid value"}},
		{"invalid extra value", header + "rules:\n- match: {volumeType: cinder, idRegex: x}\n  region: r\n  extraLabels: {a: 'c d'}\n", []string{`rules[0].extraLabels[a]: Invalid value: "c d"`}},
		{"extra topology key", header + "rules:\n- match: {volumeType: cinder, idRegex: x}\n  region: r\n  extraLabels: {topology.kubernetes.io/zone: a}\n", []string{"rules[0].extraLabels[topology.kubernetes.io/zone]: Forbidden"}},
		{"duplicate rule name", header + "rules:\n- name: a\n  match: {volumeType: cinder, idRegex: x}\n  region: r\n- name: a\n  match: {volumeType: cinder, idRegex: 'z'}\n  region: r\n", []string{`rules[1].name: Duplicate value: "a (also rules[0])"`}},
		{"named rule", header + "rules:\n- name: prod\n  match: {volumeType: cinder, idRegex: x}\n", []string{`rules[0]: Required value: rule "prod": a rule gives zones, region or both`}},
		{"topology target", header + "derive:\n  csiTopologyKeys: {topology.gke.io/zone: Zone}\n", []string{`derive.csiTopologyKeys[topology.gke.io/zone]: Unsupported value: "Zone"`}},
		{"topology key", header + "derive:\n  csiTopologyKeys: {'bad key': zone}\n", []string{"derive.csiTopologyKeys[bad key]: Invalid value"}},
		{"webhook without kubeconfig", header + "webhook: {}\n", []string{"webhook.kubeConfigFile: Required value"}},
		{"webhook kubeconfig missing", header + "webhook: {kubeConfigFile: /nonexistent/kubeconfig}\n", []string{`webhook.kubeConfigFile: Invalid value: "/nonexistent/kubeconfig"`}},
		{"webhook timeout", header + "webhook: {kubeConfigFile: x, timeout: 0s}\n", []string{`webhook.timeout: Invalid value: "0s": must be more than 0s and at most 30s`}},
		{"webhook long timeout", header + "webhook: {kubeConfigFile: x, timeout: 1m}\n", []string{`webhook.timeout: Invalid value: "1m0s"`}},
		{"webhook negative ttl", header + "webhook: {kubeConfigFile: x, cacheTTL: -1s}\n", []string{`webhook.cacheTTL: Invalid value: "-1s"`}},
		{"webhook failure policy", header + "webhook: {kubeConfigFile: x, failurePolicy: fail}\n", []string{`webhook.failurePolicy: Unsupported value: "fail"`}},
		{"webhook bad duration", header + "webhook: {kubeConfigFile: x, timeout: soon}\n", []string{"time: invalid duration"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(strings.NewReader(tc.config))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), "PersistentVolumeLabel: ") {
				t.Errorf("error does not name the plugin: %v", err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestNoConfigurationLabelsNothing(t *testing.T) {
	l, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := volumeOf(gcePV("pv", "prod-1"))
	if labels, err := l.labels(context.Background(), v); labels != nil || err != nil {
		t.Errorf("labels = %v, %v; want none", labels, err)
	}
}

func csiPV(driver, handle string, exprs ...api.NodeSelectorRequirement) *api.PersistentVolume {
	pv := &api.PersistentVolume{Spec: api.PersistentVolumeSpec{PersistentVolumeSource: api.PersistentVolumeSource{
		CSI: &api.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle},
	}}}
	if len(exprs) > 0 {
		terms(exprs)(pv)
	}
	return pv
}

func TestConfiguredLabels(t *testing.T) {
	const rules = `
rules:
- name: first
  match: {volumeType: gcePersistentDisk, idRegex: '^(?P<env>prod|dev)-(?P<zone>us-central1-[a-f])-'}
  zones: ['${zone}']
  region: us-central1
  extraLabels: {example.com/env: '${env}', example.com/static: 'yes'}
- name: shadowed
  match: {volumeType: gcePersistentDisk, idRegex: '^prod-'}
  region: never
- match: {volumeType: gcePersistentDisk, idRegex: '^regional-'}
  zones: [us-east1-c, us-east1-b]
  region: us-east1
- match: {volumeType: gcePersistentDisk, idRegex: '^zoneonly-(.*)$'}
  zones: ['$1']
- match: {volumeType: csi, csiDriver: pd.csi.storage.gke.io, idRegex: 'zones/([^/]+)/'}
  zones: ['$1']
- match: {volumeType: cinder, idRegex: '^bad-(.*)$'}
  zones: ['$1']
- match: {volumeType: cinder, idRegex: 'zone-(?P<z>[a-z])'}
  zones: ['zone-${z}']
`
	const derive = `
derive:
  awsZoneFromVolumeID: true
  gceRegionFromZone: true
  csiTopologyKeys: {topology.gke.io/zone: zone, example.com/region: region}
`
	cases := []struct {
		name, config string
		pv           *api.PersistentVolume
		want         map[string]string
		wantErr      string
	}{
		{"first match wins, with named groups", rules, gcePV("pv", "prod-us-central1-c-data"),
			map[string]string{gaZone: "us-central1-c", gaRegion: "us-central1", "example.com/env": "prod", "example.com/static": "yes"}, ""},
		{"second rule when the first does not match", rules, gcePV("pv", "prod-eu-1"), map[string]string{gaRegion: "never"}, ""},
		{"regional disk", rules, gcePV("pv", "regional-1"), map[string]string{gaZone: "us-east1-c__us-east1-b", gaRegion: "us-east1"}, ""},
		{"zone only", rules, gcePV("pv", "zoneonly-z1"), map[string]string{gaZone: "z1"}, ""},
		{"zone only with region derived", rules + derive, gcePV("pv", "zoneonly-europe-west1-d"), map[string]string{gaZone: "europe-west1-d", gaRegion: "europe-west1"}, ""},
		{"csi rule for its driver", rules + derive, csiPV("pd.csi.storage.gke.io", "projects/p/zones/us-west1-a/disks/d"), map[string]string{gaZone: "us-west1-a", gaRegion: "us-west1"}, ""},
		{"csi rule not for another driver", rules, csiPV("other.csi.example.com", "projects/p/zones/us-west1-a/disks/d"), nil, ""},
		{"no match, Ignore", rules, gcePV("pv", "nothing"), nil, ""},
		{"no match, Deny", rules + "onNoMatch: Deny\n", gcePV("pv", "nothing"), nil, "no rule, derivation or webhook gives it labels"},
		{"Beta style", rules + "labelStyle: Beta\n", gcePV("pv", "regional-1"), map[string]string{betaZone: "us-east1-c__us-east1-b", betaRegion: "us-east1"}, ""},
		{"type not looked up", "volumeTypes: [gcePersistentDisk]\nonNoMatch: Deny\n", csiPV("pd.csi.storage.gke.io", "zones/a/"), nil, ""},
		{"expanded value checked per request", rules, &api.PersistentVolume{Spec: api.PersistentVolumeSpec{PersistentVolumeSource: api.PersistentVolumeSource{
			Cinder: &api.CinderPersistentVolumeSource{VolumeID: "bad-a b"}}}}, nil, `rules[5] gave topology.kubernetes.io/zone="a b": a valid label must be`},
		{"unanchored rule matches inside the ID", rules, &api.PersistentVolume{Spec: api.PersistentVolumeSpec{PersistentVolumeSource: api.PersistentVolumeSource{
			Cinder: &api.CinderPersistentVolumeSource{VolumeID: "vol-zone-q-1"}}}}, map[string]string{gaZone: "zone-q"}, ""},
		{"aws zone from the volume ID", derive, awsPV("pv", "aws://us-east-1a/vol-1"), map[string]string{gaZone: "us-east-1a", gaRegion: "us-east-1"}, ""},
		{"aws volume ID without a zone", derive, awsPV("pv", "vol-1"), nil, ""},
		{"aws derivation off", "derive: {gceRegionFromZone: true}\n", awsPV("pv", "aws://us-east-1a/vol-1"), nil, ""},
		{"csi topology translated", derive, csiPV("pd.csi.storage.gke.io", "h", in("topology.gke.io/zone", "us-central1-b", "us-central1-a")),
			map[string]string{gaZone: "us-central1-a__us-central1-b", gaRegion: "us-central1"}, ""},
		{"csi topology region", derive, csiPV("d.example.com", "h", in("example.com/region", "r1"), in("other", "x")), map[string]string{gaRegion: "r1"}, ""},
		{"csi topology with two regions", derive, csiPV("d.example.com", "h", in("example.com/region", "r1", "r2")), nil, "node affinity names regions r1, r2"},
		{"zones in different regions", derive, csiPV("d.example.com", "h", in("topology.gke.io/zone", "us-central1-a", "us-east1-b")), nil, "are in different regions"},
		{"derived region checked", "derive: {gceRegionFromZone: true}\nrules:\n- match: {volumeType: cinder, idRegex: x}\n  zones: [a--b]\n",
			&api.PersistentVolume{Spec: api.PersistentVolumeSpec{PersistentVolumeSource: api.PersistentVolumeSource{
				Cinder: &api.CinderPersistentVolumeSource{VolumeID: "x"}}}}, nil, `rules[0] gave topology.kubernetes.io/region="a-"`},
		{"zone without a region part", derive, csiPV("d.example.com", "h", in("topology.gke.io/zone", "z")), nil, `zone "z" has no region part`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := loadConfig(t, tc.config)
			v, ok := volumeOf(tc.pv)
			if !ok {
				t.Fatal("volume not looked up")
			}
			got, err := l.labels(context.Background(), v)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("labels = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRequiredLiterals(t *testing.T) {
	cases := map[string][]string{
		"^prod-(us-central1-[a-f])-":      {"us-central1-", "prod-", "-"},
		"^[a-z]+-5-(?P<zone>[a-z0-9-]+)$": {"-5-"},
		"^disk-(?P<zone>[a-z-]+)-7$":      {"disk-", "-7"},
		"(?i)disk":                        nil,
		"a|b":                             nil,
		"x*abc?":                          {"ab"},
		"(?:abcd)+":                       {"abcd"},
		"(ab){2}":                         {"ab", "ab"},
		"(ab){0,2}":                       nil,
		"(":                               nil,
	}
	samples := []string{"prod-us-central1-a-x", "disk-5-z", "disk-a-7", "DISK", "xxabab", "abcdabcd", "ab", "b"}
	for expr, want := range cases {
		got := requiredLiterals(expr)
		if !slices.Equal(got, want) {
			t.Errorf("requiredLiterals(%q) = %q, want %q", expr, got, want)
		}
		// Soundness on samples: whatever matches contains every literal.
		if re, err := regexp.Compile(expr); err == nil {
			for _, s := range samples {
				if re.MatchString(s) && !containsAll(s, got) {
					t.Errorf("%q matches %q, which lacks one of %q", expr, s, got)
				}
			}
		}
	}
}
