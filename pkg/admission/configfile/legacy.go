// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package configfile

import (
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/plugin/pkg/admission/imagepolicy"
	"k8s.io/kubernetes/plugin/pkg/admission/podnodeselector"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The two plugins whose configuration is unversioned: a document with one
// top-level key, given in an AdmissionConfiguration entry or, as upstream
// still allows, as the whole --admission-control-config-file.
const (
	imagePolicyKey     = "imagePolicy"
	podNodeSelectorKey = "podNodeSelectorPluginConfig"
)

var (
	legacySections = []string{imagePolicyKey, podNodeSelectorKey}
	legacyPlugins  = map[string]string{imagePolicyKey: imagepolicy.PluginName, podNodeSelectorKey: podnodeselector.PluginName}
	legacyChecks   = map[string]func(section json.RawMessage) error{imagePolicyKey: checkImagePolicy, podNodeSelectorKey: checkPodNodeSelector}
)

// unversioned is the check of ImagePolicyWebhook or PodNodeSelector, whose
// configuration, given by path or inline, is a document with its section,
// key. The other plugin's section may be there too, as in the legacy file
// (one file can serve both entries); it is checked by that plugin's rules.
func unversioned(key string) check {
	return func(_ string, data []byte) error {
		top, err := topLevel(data)
		if err != nil {
			return err
		}
		if _, ok := top[key]; !ok {
			return field.Required(field.NewPath(key), "this plugin's configuration is unversioned: a document with the single key "+key)
		}
		unknown, sections := checkSections(top)
		for _, key := range legacySections {
			if err := sections[key]; err != nil {
				unknown = append(unknown, err)
			}
		}
		return utilerrors.NewAggregate(unknown)
	}
}

// topLevel returns the top-level fields of a YAML or JSON map.
func topLevel(data []byte) (map[string]json.RawMessage, error) {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(j, &top); err != nil {
		return nil, fmt.Errorf("want a map with the key %s or %s: %w", imagePolicyKey, podNodeSelectorKey, err)
	}
	return top, nil
}

// checkSections checks the top-level fields of an unversioned document:
// each must be a legacy section, valid by its plugin's rules.
func checkSections(top map[string]json.RawMessage) (unknown []error, sections map[string]error) {
	sections = map[string]error{}
	for _, key := range sortedKeys(top) {
		check, ok := legacyChecks[key]
		if !ok {
			unknown = append(unknown, fmt.Errorf("unknown field %q: an unversioned configuration holds only %s (for %s) and %s (for %s), and no apiVersion or kind",
				key, imagePolicyKey, imagepolicy.PluginName, podNodeSelectorKey, podnodeselector.PluginName))
			continue
		}
		sections[key] = check(top[key])
	}
	return unknown, sections
}

// legacyKeys returns the top-level fields of a document, and whether upstream
// would take it for the legacy format: a map with either legacy key.
func legacyKeys(data []byte) (map[string]json.RawMessage, bool) {
	top, err := topLevel(data)
	if err != nil {
		return nil, false
	}
	_, image := top[imagePolicyKey]
	_, selector := top[podNodeSelectorKey]
	return top, image || selector
}

// validateLegacy checks a legacy file. Upstream gives it whole to
// ImagePolicyWebhook and PodNodeSelector, when they are enabled, and each
// reads its own section; any other field is read by nobody.
func validateLegacy(file string, top map[string]json.RawMessage, plugins Plugins) []error {
	unknown, sections := checkSections(top)
	errs := make([]error, 0, len(unknown))
	for _, err := range unknown {
		errs = append(errs, fmt.Errorf("legacy unversioned file: %w", err))
	}
	enabled := sets.New(plugins.Enabled...)
	used := false
	for _, key := range legacySections {
		plugin := legacyPlugins[key]
		used = used || enabled.Has(plugin)
		if _, ok := top[key]; !ok {
			// ImagePolicyWebhook cannot run without its section; PodNodeSelector can.
			if plugin == imagepolicy.PluginName && enabled.Has(plugin) {
				errs = append(errs, fmt.Errorf("plugin %s is enabled and reads this legacy file, which has no %s section", plugin, key))
			}
			continue
		}
		if err := sections[key]; err != nil {
			errs = append(errs, &PluginError{Plugin: plugin, Where: legacyWhere, Err: err})
		}
	}
	if len(errs) == 0 && !used {
		klog.InfoS("The legacy admission configuration file is not used: neither ImagePolicyWebhook nor PodNodeSelector is enabled", "file", file)
	}
	return errs
}

// decodeSection decodes a legacy section into into, a struct whose one field
// is the section, strictly: case-sensitive, no unknown fields. Unknown fields
// come back in strict, with into filled from the rest.
func decodeSection(key string, section json.RawMessage, into any) (strict []error, err error) {
	wrapped, err := json.Marshal(map[string]json.RawMessage{key: section})
	if err != nil {
		return nil, err
	}
	unknown, err := kjson.UnmarshalStrict(wrapped, into)
	if err != nil {
		return nil, err
	}
	for _, e := range unknown {
		strict = append(strict, fmt.Errorf("strict decoding error: %w", e))
	}
	return strict, nil
}

// checkImagePolicy checks ImagePolicyWebhook's configuration with upstream's
// type and upstream's ranges (imagepolicy/config.go), and loads the backend's
// kubeconfig as the plugin does.
func checkImagePolicy(section json.RawMessage) error {
	var c imagepolicy.AdmissionConfig
	strict, err := decodeSection(imagePolicyKey, section, &c)
	if err != nil {
		return err
	}
	p := field.NewPath(imagePolicyKey)
	w := c.ImagePolicyWebhook
	var errs field.ErrorList
	errs = append(errs, checkDuration(p.Child("allowTTL"), w.AllowTTL, time.Second, time.Second, 30*time.Minute, "seconds")...)
	errs = append(errs, checkDuration(p.Child("denyTTL"), w.DenyTTL, time.Second, time.Second, 30*time.Minute, "seconds")...)
	errs = append(errs, checkDuration(p.Child("retryBackoff"), w.RetryBackoff, time.Millisecond, time.Millisecond, 5*time.Minute, "milliseconds")...)
	kubeconfig := p.Child("kubeConfigFile")
	if w.KubeConfigFile == "" {
		// Upstream would fall back to $KUBECONFIG or ~/.kube/config.
		errs = append(errs, field.Required(kubeconfig, "the kubeconfig of the image policy backend"))
	} else if _, err := readFile(w.KubeConfigFile); err != nil {
		errs = append(errs, field.Invalid(kubeconfig, w.KubeConfigFile, err.Error()))
	} else if _, err := webhookutil.LoadKubeconfig(w.KubeConfigFile, nil); err != nil {
		errs = append(errs, field.Invalid(kubeconfig, w.KubeConfigFile, err.Error()))
	}
	return aggregate(strict, errs)
}

// checkDuration applies imagepolicy's normalizeConfigDuration rule: -1
// disables, 0 means the default, anything else times unit must lie in
// [min, max].
func checkDuration(p *field.Path, v, unit, min, max time.Duration, unitName string) field.ErrorList {
	if v == -1 || v == 0 {
		return nil
	}
	if v < 0 || v > max/unit || v*unit < min {
		return field.ErrorList{field.Invalid(p, int64(v), fmt.Sprintf("must be between %d and %d (%s), 0 for the default or -1 to disable",
			min/unit, max/unit, unitName))}
	}
	return nil
}

// podNodeSelectorConfig is PodNodeSelector's configuration; upstream decodes
// it into an unexported struct with this one field.
type podNodeSelectorConfig struct {
	PodNodeSelectorPluginConfig map[string]string `json:"podNodeSelectorPluginConfig"`
}

// checkPodNodeSelector checks PodNodeSelector's configuration. Upstream skips
// a document it cannot decode and parses the selectors only when a pod is
// admitted, so every mistake here would otherwise fail late or not at all.
func checkPodNodeSelector(section json.RawMessage) error {
	var c podNodeSelectorConfig
	strict, err := decodeSection(podNodeSelectorKey, section, &c)
	if err != nil {
		return err
	}
	p := field.NewPath(podNodeSelectorKey)
	var errs field.ErrorList
	for _, key := range sortedKeys(c.PodNodeSelectorPluginConfig) {
		k := p.Key(key)
		if key != "clusterDefaultNodeSelector" {
			for _, msg := range validation.ValidateNamespaceName(key, false) {
				errs = append(errs, field.Invalid(k, key, "not clusterDefaultNodeSelector and not a namespace name: "+msg))
			}
		}
		if _, err := labels.ConvertSelectorToLabelsMap(c.PodNodeSelectorPluginConfig[key], field.WithPath(k)); err != nil {
			errs = append(errs, field.Invalid(k, c.PodNodeSelectorPluginConfig[key], "not a node selector of the form key=value,key=value: "+err.Error()))
		}
	}
	return aggregate(strict, errs)
}

// aggregate joins strict decoding errors and validation errors into one flat
// list, or nil.
func aggregate(strict []error, errs field.ErrorList) error {
	for _, e := range errs {
		strict = append(strict, e)
	}
	return utilerrors.NewAggregate(strict)
}
