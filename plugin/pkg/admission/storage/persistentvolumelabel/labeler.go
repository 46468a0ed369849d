// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package persistentvolumelabel

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	cloudvolume "k8s.io/cloud-provider/volume"
	"k8s.io/klog/v2"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/storage/persistentvolumelabel/apis/v1alpha1"
)

// configuredLabeler labels volumes from the plugin's configuration.
type configuredLabeler struct {
	zoneKey, regionKey string
	// types limits lookups; nil means every type.
	types map[v1alpha1.VolumeType]bool
	// rules holds each type's (and CSI driver's) rules in configuration
	// order. A rule for another type can never match, so first match within
	// the group is first match overall.
	rules   map[ruleKey][]*rule
	derive  v1alpha1.Derivations
	webhook *webhookSource
	deny    bool
}

type ruleKey struct {
	typ    v1alpha1.VolumeType
	driver string
}

type rule struct {
	name   string
	index  int
	typ    v1alpha1.VolumeType
	driver string
	re     *regexp.Regexp
	// literals are in every match of re, so an ID that lacks one is
	// skipped without running re: with many rules, most are.
	literals []string
	zones    []string
	region   string
	extra    map[string]string
	// expand is set when a value uses capture groups.
	expand bool
	// desc names the rule in errors: "rules[3] (prod-central)".
	desc string
}

// topology is what a source found out about a volume.
type topology struct {
	zones  []string
	region string
	extra  map[string]string
	// from names the source, for errors.
	from string
	// checked is set when the values were validated with the
	// configuration; otherwise they are checked per request.
	checked bool
}

var errNoMatch = errors.New("no rule, derivation or webhook gives it labels (onNoMatch: Deny)")

func (l *configuredLabeler) labels(ctx context.Context, v volume) (map[string]string, error) {
	if l.types != nil && !l.types[v.typ] {
		return nil, nil
	}
	t, found, err := l.lookup(ctx, v)
	switch {
	case err != nil && l.webhook != nil && l.webhook.ignoreFailure && errors.Is(err, errWebhook):
		klog.ErrorS(err, "PersistentVolumeLabel admits the volume unlabelled (failurePolicy: Ignore)", "persistentVolume", v.pv.Name)
		return nil, nil
	case err != nil:
		return nil, err
	case !found && l.deny:
		return nil, errNoMatch
	case !found:
		return nil, nil
	}
	return l.toLabels(t)
}

// lookup asks the sources in order: rules, derivations, webhook.
func (l *configuredLabeler) lookup(ctx context.Context, v volume) (topology, bool, error) {
	for _, r := range l.rules[ruleKey{v.typ, v.driver}] {
		if !containsAll(v.id, r.literals) {
			continue
		}
		if !r.expand {
			if r.re.MatchString(v.id) {
				return topology{zones: r.zones, region: r.region, extra: r.extra, from: r.desc, checked: true}, true, nil
			}
			continue
		}
		match := r.re.FindStringSubmatchIndex(v.id)
		if match == nil {
			continue
		}
		expand := func(template string) string { return string(r.re.ExpandString(nil, template, v.id, match)) }
		t := topology{region: expand(r.region), from: r.desc}
		for _, z := range r.zones {
			t.zones = append(t.zones, expand(z))
		}
		if len(r.extra) > 0 {
			t.extra = make(map[string]string, len(r.extra))
			for k, template := range r.extra {
				t.extra[k] = expand(template)
			}
		}
		return t, true, nil
	}
	if t, found, err := l.derived(v); found || err != nil {
		return t, found, err
	}
	if l.webhook != nil {
		return l.webhook.lookup(ctx, v)
	}
	return topology{}, false, nil
}

func containsAll(s string, literals []string) bool {
	for _, l := range literals {
		if !strings.Contains(s, l) {
			return false
		}
	}
	return true
}

// derived reads the zone and region from the volume itself.
func (l *configuredLabeler) derived(v volume) (topology, bool, error) {
	if l.derive.AWSZoneFromVolumeID && v.typ == v1alpha1.AWSElasticBlockStore {
		if u, err := url.Parse(v.id); err == nil && u.Scheme == "aws" && len(u.Host) > 1 {
			zone := u.Host // the region is the zone without its letter, as the AWS provider said
			return topology{zones: []string{zone}, region: zone[:len(zone)-1], from: "derive.awsZoneFromVolumeID"}, true, nil
		}
	}
	if len(l.derive.CSITopologyKeys) == 0 || v.pv.Spec.NodeAffinity == nil || v.pv.Spec.NodeAffinity.Required == nil {
		return topology{}, false, nil
	}
	var zones, regions []string
	for _, term := range v.pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Operator != api.NodeSelectorOpIn {
				continue
			}
			switch l.derive.CSITopologyKeys[e.Key] {
			case v1alpha1.Zone:
				zones = append(zones, e.Values...)
			case v1alpha1.Region:
				regions = append(regions, e.Values...)
			}
		}
	}
	slices.Sort(zones)
	zones = slices.Compact(zones)
	slices.Sort(regions)
	regions = slices.Compact(regions)
	if len(regions) > 1 {
		return topology{}, false, fmt.Errorf("derive.csiTopologyKeys: node affinity names regions %s; a volume is in one", strings.Join(regions, ", "))
	}
	if len(zones) == 0 && len(regions) == 0 {
		return topology{}, false, nil
	}
	return topology{zones: zones, region: strings.Join(regions, ""), from: "derive.csiTopologyKeys"}, true, nil
}

// toLabels turns a topology into labels of the configured style, checking
// values that came from capture groups or the webhook.
func (l *configuredLabeler) toLabels(t topology) (map[string]string, error) {
	region := t.region
	if region == "" && l.derive.GCERegionFromZone && len(t.zones) > 0 {
		var err error
		if region, err = gceRegion(t.zones); err != nil {
			return nil, fmt.Errorf("%s: %w", t.from, err)
		}
		t.checked = false // a valid zone can still give an invalid region ("a--b" gives "a-")
	}
	labels := make(map[string]string, len(t.extra)+2)
	maps.Copy(labels, t.extra)
	if len(t.zones) > 0 {
		for _, z := range t.zones {
			if z == "" || strings.Contains(z, cloudvolume.LabelMultiZoneDelimiter) {
				return nil, fmt.Errorf("%s gave zone %q: a zone is not empty and does not contain \"__\"", t.from, z)
			}
		}
		labels[l.zoneKey] = strings.Join(t.zones, cloudvolume.LabelMultiZoneDelimiter)
	}
	if region != "" {
		labels[l.regionKey] = region
	}
	if t.checked {
		return labels, nil
	}
	for k, v := range labels {
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			return nil, fmt.Errorf("%s gave %s=%q: %s", t.from, k, v, strings.Join(msgs, "; "))
		}
	}
	return labels, nil
}

// gceRegion is the region of GCE zones: "us-central1-a" is in "us-central1".
func gceRegion(zones []string) (string, error) {
	var region string
	for _, z := range zones {
		i := strings.LastIndex(z, "-")
		if i <= 0 {
			return "", fmt.Errorf("zone %q has no region part to derive (derive.gceRegionFromZone)", z)
		}
		if region != "" && z[:i] != region {
			return "", fmt.Errorf("zones %s are in different regions", strings.Join(zones, ", "))
		}
		region = z[:i]
	}
	return region, nil
}
