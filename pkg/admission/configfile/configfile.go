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
// strictly. It does not replace upstream's loader: when the check passes,
// upstream reads the file again and the plugins get exactly what they always
// got.
package configfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
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
	return errors.Join(Problems(file, plugins, nil)...)
}

// Problems is what Validate finds, one error for each problem, each naming
// the file. mapPath, when not nil, maps an absolute path that an entry names
// to where the file is on this machine: `--validate-only --from-manifest`
// maps the container's paths to the host's.
func Problems(file string, plugins Plugins, mapPath func(string) string) []error {
	if mapPath == nil {
		mapPath = func(p string) string { return p }
	}
	errs := validate(file, plugins, mapPath)
	for i, err := range errs {
		errs[i] = fmt.Errorf("%s %s: %w", Flag, file, err)
	}
	return errs
}

// wantAdmission is what the file may be.
var wantAdmission = fmt.Sprintf("want apiVersion %s (or the deprecated %s), kind AdmissionConfiguration, or a legacy unversioned file of %s",
	apiserverv1.SchemeGroupVersion, apiserverv1alpha1.SchemeGroupVersion, strings.Join(legacySections, " and "))

func validate(file string, plugins Plugins, mapPath func(string) string) []error {
	data, err := readFile(file)
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
	return append(errs, validateEntries(file, config, plugins, mapPath)...)
}

// validateEntries checks each plugin entry of an AdmissionConfiguration.
func validateEntries(file string, config *apiserver.AdmissionConfiguration, plugins Plugins, mapPath func(string) string) []error {
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

		hasInline := entry.Configuration != nil && len(bytes.TrimSpace(entry.Configuration.Raw)) != 0 && string(bytes.TrimSpace(entry.Configuration.Raw)) != "null"
		var (
			source string
			data   []byte
		)
		switch {
		case entry.Path != "" && hasInline:
			errs = append(errs, &PluginError{Plugin: entry.Name, Where: field, Err: fmt.Errorf("give either path or configuration, not both (upstream would silently ignore path %q)", entry.Path)})
			continue
		case entry.Path != "":
			resolved := resolve(file, entry.Path)
			if filepath.IsAbs(entry.Path) {
				resolved = mapPath(resolved)
			}
			source = "path " + resolved
			var err error
			if data, err = readFile(resolved); err != nil {
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

// PluginConfigs reads file with upstream's loader and returns the
// configuration each of plugins gets, exactly the bytes upstream hands the
// plugin's factory; a plugin without one is absent. Call it after Problems
// found none: upstream's loader is lenient.
func PluginConfigs(file string, plugins []string) (map[string][]byte, error) {
	provider, err := admission.ReadAdmissionConfiguration(plugins, file, configScheme)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", Flag, file, err)
	}
	configs := map[string][]byte{}
	for _, name := range plugins {
		r, err := provider.ConfigFor(name)
		if err != nil {
			return nil, fmt.Errorf("%s %s: plugin %s: %w", Flag, file, name, err)
		}
		if r == nil {
			continue
		}
		data, err := io.ReadAll(r)
		if err != nil {
			return nil, fmt.Errorf("%s %s: plugin %s: %w", Flag, file, name, err)
		}
		configs[name] = data
	}
	return configs, nil
}

// Sources returns what a change to the configuration is seen in: the bytes
// of file and of each file its entries name by path, keyed by path. A file
// that cannot be read is keyed with its error, so that its repair is a
// change too. It reads leniently: Problems says what is wrong.
func Sources(file string) map[string][]byte {
	sources := map[string][]byte{}
	data, entries, err := lenientEntries(file)
	if err != nil {
		sources[file] = []byte("error: " + err.Error())
		return sources
	}
	sources[file] = data
	for _, e := range entries {
		if e.Path == "" {
			continue
		}
		resolved := resolve(file, e.Path)
		if data, err := readFile(resolved); err != nil {
			sources[resolved] = []byte("error: " + err.Error())
		} else {
			sources[resolved] = data
		}
	}
	return sources
}

// EntrySources says where each plugin entry of file takes its
// configuration from: "path <resolved path>" or "inline". It reads
// leniently, as Sources does.
func EntrySources(file string) map[string]string {
	_, entries, err := lenientEntries(file)
	if err != nil {
		return nil
	}
	sources := map[string]string{}
	for _, e := range entries {
		if _, seen := sources[e.Name]; seen || e.Name == "" {
			continue // upstream reads the first entry
		}
		switch {
		case e.Path != "":
			sources[e.Name] = "path " + resolve(file, e.Path)
		case len(e.Configuration) > 0 && string(e.Configuration) != "null":
			sources[e.Name] = "inline"
		}
	}
	return sources
}

// entry is a plugin entry as a lenient reading sees it.
type entry struct {
	Name          string          `json:"name"`
	Path          string          `json:"path"`
	Configuration json.RawMessage `json:"configuration"`
}

// lenientEntries reads file and, when it parses, its plugin entries; a
// file that does not parse has none.
func lenientEntries(file string) ([]byte, []entry, error) {
	data, err := readFile(file)
	if err != nil {
		return nil, nil, err
	}
	var config struct {
		Plugins []entry `json:"plugins"`
	}
	if yaml.Unmarshal(data, &config) != nil {
		return data, nil, nil
	}
	return data, config.Plugins, nil
}

// WritableByOthers describes each of file and the files its entries name by
// path that someone other than its owner may change: a file its group or
// everyone may write, or one in a directory its group or everyone may write
// without the sticky bit (anyone there can rename another file over it).
// The apiserver applies what it finds in them within a second, so whoever
// can write them decides admission (docs/security.md).
func WritableByOthers(file string) []string {
	var found []string
	for _, f := range sortedKeys(Sources(file)) {
		if info, err := os.Stat(f); err == nil && info.Mode().Perm()&0o022 != 0 {
			found = append(found, fmt.Sprintf("%s is writable by its group or everyone (mode %#o)", f, info.Mode().Perm()))
		}
		dir := filepath.Dir(f)
		if info, err := os.Stat(dir); err == nil && info.Mode().Perm()&0o022 != 0 && info.Mode()&os.ModeSticky == 0 {
			found = append(found, fmt.Sprintf("%s is in %s, which its group or everyone may write (mode %#o)", f, dir, info.Mode().Perm()))
		}
	}
	return found
}
