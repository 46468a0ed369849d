// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package configfile checks the file given to --admission-control-config-file
// before the apiserver starts, strictly, so that a mistake in it stops the
// apiserver with an error that names the file, the plugin and the field.
//
// Upstream's loader (k8s.io/apiserver/pkg/admission.ReadAdmissionConfiguration)
// and most upstream plugins read their configuration leniently: unknown and
// duplicate fields are dropped, PodNodeSelector skips a document it cannot
// parse, a path that does not exist is found only when the plugin starts, and
// errors rarely say which file they are about. This package reads the file the
// way upstream does (the same two AdmissionConfiguration versions, the same
// relative path rule, the same legacy unversioned format) and decodes each
// plugin's configuration with that plugin's own types and validation, but
// strictly. It reads a configuration once, as a Snapshot of the file and the
// files it names, and says everything it says of that snapshot. At start it
// does not replace upstream's loader: when the check passes, upstream reads
// the file again and the plugins get exactly what they always got. A reload
// (pkg/admission/reload) applies the snapshot it validated, with the bytes
// upstream's loader would have handed each plugin.
package configfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/apis/apiserver"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	apiserverv1alpha1 "k8s.io/apiserver/pkg/apis/apiserver/v1alpha1"
	"k8s.io/klog/v2"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"
	"sigs.k8s.io/yaml"
)

// Flag is the flag whose file this package checks; every error starts with it.
const Flag = "admission-control-config-file"

// configScheme decodes AdmissionConfiguration as upstream's loader does:
// apiserver.config.k8s.io/v1 and the deprecated apiserver.k8s.io/v1alpha1.
var (
	configScheme = runtime.NewScheme()
	configCodecs = serializer.NewCodecFactory(configScheme, serializer.EnableStrict)
)

func init() {
	utilruntime.Must(apiserver.AddToScheme(configScheme))
	utilruntime.Must(apiserverv1alpha1.AddToScheme(configScheme))
	utilruntime.Must(apiserverv1.AddToScheme(configScheme))
}

// Plugins is what the check needs to know of the admission registry and flags.
type Plugins struct {
	// Registered is every plugin name the binary knows.
	Registered []string
	// Enabled is every plugin that will run.
	Enabled []string
}

// Check validates the admission options' configuration file, if one is set.
// Call it after the options are validated and before the server is built.
func Check(o *kubeoptions.AdmissionOptions) error {
	if o == nil || o.GenericAdmission == nil || o.GenericAdmission.ConfigFile == "" {
		return nil
	}
	g := o.GenericAdmission
	return Validate(g.ConfigFile, Plugins{Registered: g.Plugins.Registered(), Enabled: EnabledPlugins(o)})
}

// EnabledPlugins returns the plugins the options enable, in upstream's way:
// the deprecated --admission-control names every plugin that runs; otherwise
// the recommended order minus the default-off and disabled plugins, plus the
// enabled ones.
func EnabledPlugins(o *kubeoptions.AdmissionOptions) []string {
	g := o.GenericAdmission
	enable, disable := g.EnablePlugins, g.DisablePlugins
	if o.PluginNames != nil {
		enable = o.PluginNames
		disable = sets.List(sets.New(g.RecommendedPluginOrder...).Delete(o.PluginNames...))
	}
	off := sets.New(disable...).Union(g.DefaultOffPlugins).Delete(enable...)
	var enabled []string
	for _, name := range g.RecommendedPluginOrder {
		if !off.Has(name) {
			enabled = append(enabled, name)
		}
	}
	return enabled
}

// PluginError is a problem with one plugin's entry: Where says which entry
// or file, as "plugins[0]", "path /etc/kubernetes/erl.yaml" or "inline
// configuration, plugins[2]".
type PluginError struct {
	Plugin, Where string
	Err           error
}

func (e *PluginError) Error() string {
	return fmt.Sprintf("plugin %s (%s): %v", e.Plugin, e.Where, e.Err)
}
func (e *PluginError) Unwrap() error { return e.Err }

// legacyWhere is Where for the legacy unversioned file.
const legacyWhere = "legacy unversioned file"

// Validate checks the admission configuration file at file. It returns nil
// when upstream's loader and every configured plugin will accept the file as
// written; otherwise an error for each problem, each naming the file, and the
// plugin and field where there is one.
func Validate(file string, plugins Plugins) error {
	return errors.Join(Read(file, nil).Problems(plugins)...)
}

// Problems is what Validate finds in the snapshot, one error for each
// problem, each naming the file.
func (s *Snapshot) Problems(plugins Plugins) []error {
	errs := s.validate(plugins)
	for i, err := range errs {
		errs[i] = fmt.Errorf("%s %s: %w", Flag, s.File, err)
	}
	return errs
}

// wantAdmission is what the file may be.
var wantAdmission = fmt.Sprintf("want apiVersion %s (or the deprecated %s), kind AdmissionConfiguration, or a legacy unversioned file of %s",
	apiserverv1.SchemeGroupVersion, apiserverv1alpha1.SchemeGroupVersion, strings.Join(legacySections, " and "))

func (s *Snapshot) validate(plugins Plugins) []error {
	file := s.File
	data, err := s.main()
	if err != nil {
		return []error{err}
	}
	if isEmpty(data) {
		return []error{fmt.Errorf("the file is empty; %s", wantAdmission)}
	}
	if dups, root := duplicates(data); len(dups) != 0 {
		errs := make([]error, 0, len(dups))
		for _, d := range dups {
			if i, name, ok := entryOf(root, d.path); ok {
				errs = append(errs, &PluginError{Plugin: name, Where: fmt.Sprintf("plugins[%d]", i), Err: d})
			} else if plugin, ok := legacyPlugins[strings.SplitN(d.path, ".", 2)[0]]; ok && child(root, "kind") == nil {
				errs = append(errs, &PluginError{Plugin: plugin, Where: legacyWhere, Err: d})
			} else {
				errs = append(errs, d)
			}
		}
		return errs
	}
	obj, err := runtime.Decode(configCodecs.UniversalDecoder(), data)
	var errs []error
	if err != nil && obj != nil && runtime.IsStrictDecodingError(err) {
		// Unknown fields: say so, and check the entries all the same.
		errs, err = append(errs, err), nil
	}
	if err != nil {
		missing := runtime.IsMissingVersion(err) || runtime.IsMissingKind(err)
		// Upstream's rule: a file without a known kind that has one of the
		// two legacy keys is the legacy format, given whole to the plugins
		// that read it.
		if missing || runtime.IsNotRegisteredError(err) {
			if keys, ok := legacyKeys(data); ok {
				return validateLegacy(file, keys, plugins)
			}
		}
		switch {
		case missing:
			return []error{fmt.Errorf("apiVersion and kind are required; %s", wantAdmission)}
		case runtime.IsNotRegisteredError(err):
			return []error{fmt.Errorf("%s is not an admission configuration; %s", typeMeta(data), wantAdmission)}
		default:
			return []error{fmt.Errorf("%w (%s)", err, wantAdmission)}
		}
	}
	config, ok := obj.(*apiserver.AdmissionConfiguration)
	if !ok {
		return []error{fmt.Errorf("%s is not an admission configuration; %s", typeMeta(data), wantAdmission)}
	}
	return append(errs, s.validateEntries(config, plugins)...)
}

// validateEntries checks each plugin entry of an AdmissionConfiguration.
func (s *Snapshot) validateEntries(config *apiserver.AdmissionConfiguration, plugins Plugins) []error {
	file := s.File
	var errs []error
	registered := sets.New(plugins.Registered...)
	enabled := sets.New(plugins.Enabled...)
	first := map[string]int{}
	for i, entry := range config.Plugins {
		field := fmt.Sprintf("plugins[%d]", i)
		switch {
		case entry.Name == "":
			errs = append(errs, fmt.Errorf("%s.name: Required value: name the admission plugin this entry configures", field))
			continue
		case !registered.Has(entry.Name):
			errs = append(errs, fmt.Errorf("%s.name: plugin %q is not a registered admission plugin%s", field, entry.Name, suggest(entry.Name, plugins.Registered)))
			continue
		}
		if j, seen := first[entry.Name]; seen {
			errs = append(errs, &PluginError{Plugin: entry.Name, Where: field, Err: fmt.Errorf("configured again; plugins[%d] configures it already and upstream reads only the first entry", j)})
			continue
		}
		first[entry.Name] = i

		hasInline := inline(entry)
		var (
			source string
			data   []byte
		)
		switch {
		case entry.Path != "" && hasInline:
			errs = append(errs, &PluginError{Plugin: entry.Name, Where: field, Err: fmt.Errorf("give either path or configuration, not both (upstream would silently ignore path %q)", entry.Path)})
			continue
		case entry.Path != "":
			resolved, read, err := s.entryFile(entry.Path)
			source, data = "path "+resolved, read
			if err != nil {
				errs = append(errs, &PluginError{Plugin: entry.Name, Where: fmt.Sprintf("%s.path %q", field, entry.Path), Err: err})
				continue
			}
			if isEmpty(data) {
				errs = append(errs, &PluginError{Plugin: entry.Name, Where: source, Err: errors.New("the file is empty")})
				continue
			}
			if dups, _ := duplicates(data); len(dups) != 0 {
				for _, d := range dups {
					errs = append(errs, &PluginError{Plugin: entry.Name, Where: source, Err: d})
				}
				continue
			}
		case hasInline:
			source = "inline configuration, " + field
			data = entry.Configuration.Raw
		default:
			errs = append(errs, &PluginError{Plugin: entry.Name, Where: field, Err: errors.New("give its configuration inline under configuration, or a file under path")})
			continue
		}

		check, ok := checks[entry.Name]
		if !ok {
			errs = append(errs, &PluginError{Plugin: entry.Name, Where: source, Err: errors.New("this plugin takes no configuration; remove the entry")})
			continue
		}
		if err := check(entry.Name, data); err != nil {
			errs = append(errs, &PluginError{Plugin: entry.Name, Where: source, Err: err})
			continue
		}
		if !enabled.Has(entry.Name) {
			klog.InfoS("Admission plugin is configured but not enabled, so its configuration is not used", "plugin", entry.Name, "file", file)
		}
	}
	return errs
}

// resolve is upstream's rule for an entry's path: relative paths are relative
// to the directory of the configuration file.
func resolve(file, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	base := path.Dir(file)
	if base == "." || base == "" {
		if cwd, err := os.Getwd(); err == nil {
			base = cwd
		}
	}
	return filepath.Join(base, p)
}

// readFile reads a regular file. Devices and directories are refused rather
// than read, so a mistyped path cannot hang the apiserver.
func readFile(name string) ([]byte, error) {
	info, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	return os.ReadFile(name)
}

// isEmpty reports a file with nothing but whitespace, comments or a null.
func isEmpty(data []byte) bool {
	if len(bytes.TrimSpace(data)) == 0 {
		return true
	}
	var v any
	return yaml.Unmarshal(data, &v) == nil && v == nil
}

// typeMeta describes the apiVersion and kind a document declares.
func typeMeta(data []byte) string {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &tm); err != nil || (tm.APIVersion == "" && tm.Kind == "") {
		return "document without apiVersion and kind"
	}
	return fmt.Sprintf("apiVersion %s, kind %s", tm.APIVersion, tm.Kind)
}

// suggest names a registered plugin that differs from name only in case.
func suggest(name string, registered []string) string {
	for _, r := range registered {
		if strings.EqualFold(r, name) {
			return fmt.Sprintf(" (did you mean %q?)", r)
		}
	}
	return " (kube-apiserver -h lists them under --enable-admission-plugins)"
}

// sortedKeys returns a map's keys in order, for deterministic messages.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
