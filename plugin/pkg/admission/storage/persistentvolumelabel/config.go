// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package persistentvolumelabel

import (
	"fmt"
	"io"
	"maps"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	cloudvolume "k8s.io/cloud-provider/volume"

	"github.com/turnstile-k8s/turnstile/pkg/admission/pluginconfig"
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/storage/persistentvolumelabel/apis/v1alpha1"
)

// config is the plugin's configuration kind; compile validates it.
var config = pluginconfig.NewKind[v1alpha1.PersistentVolumeLabelConfiguration](v1alpha1.SchemeGroupVersion)

var (
	volumeTypes     = []v1alpha1.VolumeType{v1alpha1.GCEPersistentDisk, v1alpha1.AWSElasticBlockStore, v1alpha1.AzureDisk, v1alpha1.Cinder, v1alpha1.VsphereVolume, v1alpha1.CSI}
	labelStyles     = []v1alpha1.LabelStyle{v1alpha1.GA, v1alpha1.Beta}
	noMatchActions  = []v1alpha1.NoMatchAction{v1alpha1.Ignore, v1alpha1.Deny}
	failurePolicies = []v1alpha1.FailurePolicy{v1alpha1.Fail, v1alpha1.IgnoreFailure}
	targets         = []v1alpha1.TopologyTarget{v1alpha1.Zone, v1alpha1.Region}
	// topologyKeys are written by the plugin alone: extra labels may not
	// use them, or a rule could contradict its own zones.
	topologyKeys = []string{gaZone, gaRegion, betaZone, betaRegion}
)

const (
	defaultTimeout  = 5 * time.Second
	maxTimeout      = 30 * time.Second
	defaultCacheTTL = 5 * time.Minute
)

// load decodes the plugin's configuration strictly, validates it and builds
// its labeler. A nil reader (no entry in the admission configuration) gives
// a labeler that labels nothing but dynamically provisioned volumes, which
// is all the historic plugin could still do without a cloud.
func load(r io.Reader) (labeler, error) {
	c, err := config.Load(PluginName, r)
	if err != nil {
		return nil, err
	}
	l, errs := compile(c)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: invalid configuration: %w", PluginName, errs.ToAggregate())
	}
	return l, nil
}

// compile validates c and turns it into a labeler: regular expressions are
// compiled and rules indexed by volume type once, here, not per request.
func compile(c *v1alpha1.PersistentVolumeLabelConfiguration) (*configuredLabeler, field.ErrorList) {
	var errs field.ErrorList
	l := &configuredLabeler{
		zoneKey: gaZone, regionKey: gaRegion,
		deny:   c.OnNoMatch == v1alpha1.Deny,
		derive: c.Derive,
		rules:  map[ruleKey][]*rule{},
	}
	if c.LabelStyle == v1alpha1.Beta {
		l.zoneKey, l.regionKey = betaZone, betaRegion
	}
	errs = append(errs, oneOf(field.NewPath("labelStyle"), c.LabelStyle, labelStyles, true)...)
	errs = append(errs, oneOf(field.NewPath("onNoMatch"), c.OnNoMatch, noMatchActions, true)...)

	if len(c.VolumeTypes) > 0 {
		l.types = map[v1alpha1.VolumeType]bool{}
	}
	for i, t := range c.VolumeTypes {
		p := field.NewPath("volumeTypes").Index(i)
		errs = append(errs, oneOf(p, t, volumeTypes, false)...)
		if l.types[t] {
			errs = append(errs, field.Duplicate(p, t))
		}
		l.types[t] = true
	}

	names := map[string]int{}
	for i := range c.Rules {
		r, ruleErrs := compileRule(field.NewPath("rules").Index(i), i, &c.Rules[i], l)
		for _, e := range ruleErrs {
			if c.Rules[i].Name != "" { // an index alone is hard to find among many rules
				e.Detail = strings.TrimSuffix(fmt.Sprintf("rule %q: %s", c.Rules[i].Name, e.Detail), ": ")
			}
		}
		errs = append(errs, ruleErrs...)
		if r == nil {
			continue
		}
		if j, seen := names[r.name]; seen && r.name != "" {
			errs = append(errs, field.Duplicate(field.NewPath("rules").Index(i).Child("name"), fmt.Sprintf("%s (also rules[%d])", r.name, j)))
		}
		names[r.name] = i
		k := ruleKey{r.typ, r.driver}
		l.rules[k] = append(l.rules[k], r)
	}

	for _, k := range slices.Sorted(maps.Keys(c.Derive.CSITopologyKeys)) {
		p := field.NewPath("derive", "csiTopologyKeys").Key(k)
		errs = append(errs, labelKeyErrors(p, k)...)
		errs = append(errs, oneOf(p, c.Derive.CSITopologyKeys[k], targets, false)...)
	}

	if c.Webhook != nil {
		w, webhookErrs := newWebhookSource(field.NewPath("webhook"), c.Webhook)
		errs = append(errs, webhookErrs...)
		l.webhook = w
	}
	return l, errs
}

// compileRule validates one rule; it returns nil when the rule cannot be
// used at all.
func compileRule(p *field.Path, index int, in *v1alpha1.Rule, l *configuredLabeler) (*rule, field.ErrorList) {
	var errs field.ErrorList
	m := p.Child("match")
	switch {
	case in.Match.VolumeType == "":
		errs = append(errs, field.Required(m.Child("volumeType"), fmt.Sprintf("one of %s", quoted(volumeTypes))))
	default:
		errs = append(errs, oneOf(m.Child("volumeType"), in.Match.VolumeType, volumeTypes, false)...)
		if l.types != nil && !l.types[in.Match.VolumeType] {
			errs = append(errs, field.Invalid(m.Child("volumeType"), in.Match.VolumeType, "is not in volumeTypes, so the rule could never match"))
		}
	}
	switch {
	case in.Match.VolumeType == v1alpha1.CSI && in.Match.CSIDriver == "":
		errs = append(errs, field.Required(m.Child("csiDriver"), "a csi rule names its driver"))
	case in.Match.VolumeType == v1alpha1.CSI:
		for _, msg := range validation.IsDNS1123Subdomain(in.Match.CSIDriver) {
			errs = append(errs, field.Invalid(m.Child("csiDriver"), in.Match.CSIDriver, msg))
		}
	case in.Match.CSIDriver != "":
		errs = append(errs, field.Forbidden(m.Child("csiDriver"), "only allowed with volumeType csi"))
	}
	var re *regexp.Regexp
	if in.Match.IDRegex == "" {
		errs = append(errs, field.Required(m.Child("idRegex"), "an RE2 regular expression for the volume ID"))
	} else {
		var err error
		if re, err = regexp.Compile(in.Match.IDRegex); err != nil {
			errs = append(errs, field.Invalid(m.Child("idRegex"), in.Match.IDRegex, err.Error()))
		}
	}

	if len(in.Zones) == 0 && in.Region == "" {
		errs = append(errs, field.Required(p, "a rule gives zones, region or both"))
	}
	for i, z := range in.Zones {
		errs = append(errs, valueErrors(p.Child("zones").Index(i), z, re, true)...)
	}
	if len(in.Zones) > 1 && !hasTemplate(in.Zones...) {
		if joined := strings.Join(in.Zones, cloudvolume.LabelMultiZoneDelimiter); len(joined) > validation.LabelValueMaxLength {
			errs = append(errs, field.TooLong(p.Child("zones"), joined, validation.LabelValueMaxLength))
		}
	}
	if in.Region != "" {
		errs = append(errs, valueErrors(p.Child("region"), in.Region, re, false)...)
	}
	for _, k := range slices.Sorted(maps.Keys(in.ExtraLabels)) {
		kp := p.Child("extraLabels").Key(k)
		errs = append(errs, labelKeyErrors(kp, k)...)
		if slices.Contains(topologyKeys, k) {
			errs = append(errs, field.Forbidden(kp, "zone and region come from zones and region"))
		}
		errs = append(errs, valueErrors(kp, in.ExtraLabels[k], re, false)...)
	}
	if len(errs) > 0 || re == nil {
		return nil, errs
	}
	desc := fmt.Sprintf("rules[%d]", index)
	if in.Name != "" {
		desc += " (" + in.Name + ")"
	}
	return &rule{
		name: in.Name, index: index, literals: requiredLiterals(in.Match.IDRegex),
		typ: in.Match.VolumeType, driver: in.Match.CSIDriver,
		re: re, zones: in.Zones, region: in.Region, extra: in.ExtraLabels,
		expand: hasTemplate(append(append([]string{in.Region}, in.Zones...), slices.Collect(maps.Values(in.ExtraLabels))...)...),
		desc:   desc,
	}, nil
}

// requiredLiterals returns case-sensitive literals that every match of
// expr contains, longest first: the literals that are elements of the
// expression's top-level sequence, looking through capture groups and
// one-or-more repeats. It may miss some; it never adds one.
func requiredLiterals(expr string) []string {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	var literals []string
	var walk func(*syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		switch {
		case r.Op == syntax.OpLiteral && r.Flags&syntax.FoldCase == 0:
			literals = append(literals, string(r.Rune))
		case r.Op == syntax.OpConcat:
			for _, sub := range r.Sub {
				walk(sub)
			}
		case r.Op == syntax.OpCapture, r.Op == syntax.OpPlus, r.Op == syntax.OpRepeat && r.Min > 0:
			walk(r.Sub[0])
		}
	}
	walk(re.Simplify())
	slices.SortStableFunc(literals, func(a, b string) int { return len(b) - len(a) })
	return literals
}

// valueErrors checks a label value, or, when it uses capture groups, that
// the groups exist; the expanded value is checked per request.
func valueErrors(p *field.Path, v string, re *regexp.Regexp, zone bool) field.ErrorList {
	var errs field.ErrorList
	if hasTemplate(v) {
		if re != nil {
			for _, g := range templateGroups(v) {
				if !groupExists(re, g) {
					errs = append(errs, field.Invalid(p, v, fmt.Sprintf("idRegex has no capture group %q", g)))
				}
			}
		}
		return errs
	}
	if zone && (v == "" || strings.Contains(v, cloudvolume.LabelMultiZoneDelimiter)) {
		return append(errs, field.Invalid(p, v, `a zone is not empty and does not contain "__"`))
	}
	for _, msg := range validation.IsValidLabelValue(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

func labelKeyErrors(p *field.Path, k string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(k) {
		errs = append(errs, field.Invalid(p, k, msg))
	}
	return errs
}

// oneOf checks an enumerated value; empty is allowed where a default exists.
func oneOf[T ~string](p *field.Path, v T, allowed []T, emptyOK bool) field.ErrorList {
	if (v == "" && emptyOK) || slices.Contains(allowed, v) {
		return nil
	}
	return field.ErrorList{field.NotSupported(p, v, allowed)}
}

// templateRef finds $1, ${1}, $name and ${name} as regexp.Expand reads them.
var templateRef = regexp.MustCompile(`\$(?:\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))`)

func hasTemplate(values ...string) bool {
	for _, v := range values {
		if strings.Contains(v, "$") {
			return true
		}
	}
	return false
}

func templateGroups(v string) []string {
	var groups []string
	for _, m := range templateRef.FindAllStringSubmatch(strings.ReplaceAll(v, "$$", ""), -1) {
		groups = append(groups, m[1]+m[2])
	}
	return groups
}

func groupExists(re *regexp.Regexp, g string) bool {
	if n, err := strconv.Atoi(g); err == nil {
		return n <= re.NumSubexp()
	}
	return re.SubexpIndex(g) > 0
}

func quoted[T ~string](values []T) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = strconv.Quote(string(v))
	}
	return strings.Join(q, ", ")
}
