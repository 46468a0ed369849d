// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package configfile

import (
	"bytes"
	"io"
	webhookconfig "k8s.io/apiserver/pkg/admission/plugin/webhook/config"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionapi "k8s.io/apiserver/pkg/admission"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"github.com/turnstile-k8s/turnstile/pkg/admission"
)

// pluginFixture is one configurable plugin's test material.
type pluginFixture struct {
	// valid is a configuration the plugin accepts; "@DIR@" is the directory
	// the test writes its files to.
	valid string
	// dupLine is a line of valid whose repetition is a duplicate field.
	dupLine string
	// invalid decodes but fails the plugin's validation, at wantField.
	invalid, wantField string
	// unversioned plugins have no apiVersion and kind.
	unversioned bool
}

// fixtures covers every plugin in the checks table.
var fixtures = map[string]pluginFixture{
	"EventRateLimit": {
		valid: `apiVersion: eventratelimit.admission.k8s.io/v1alpha1
kind: Configuration
limits:
- type: Namespace
  qps: 50
  burst: 100
  cacheSize: 2000
`,
		dupLine: "  burst: 100",
		invalid: `apiVersion: eventratelimit.admission.k8s.io/v1alpha1
kind: Configuration
limits:
- type: Server
  qps: -1
  burst: 10
`,
		wantField: "limits[0].qps: Invalid value: -1",
	},
	"ImagePolicyWebhook": {
		valid: `imagePolicy:
  kubeConfigFile: @DIR@/imagepolicy.kubeconfig
  allowTTL: 50
  denyTTL: 50
  retryBackoff: 500
  defaultAllow: true
`,
		dupLine: "  defaultAllow: true",
		invalid: `imagePolicy:
  kubeConfigFile: @DIR@/imagepolicy.kubeconfig
  retryBackoff: 300001
`,
		wantField:   "imagePolicy.retryBackoff: Invalid value: 300001",
		unversioned: true,
	},
	"MutatingAdmissionWebhook": {
		valid: `apiVersion: apiserver.config.k8s.io/v1
kind: WebhookAdmissionConfiguration
kubeConfigFile: @DIR@/webhook.kubeconfig
`,
		dupLine: "kubeConfigFile: @DIR@/webhook.kubeconfig",
		invalid: `apiVersion: apiserver.config.k8s.io/v1
kind: WebhookAdmissionConfiguration
kubeConfigFile: webhook.kubeconfig
`,
		wantField: `kubeConfigFile: Invalid value: "webhook.kubeconfig": must be an absolute file path`,
	},
	"ValidatingAdmissionWebhook": {
		valid: `apiVersion: apiserver.config.k8s.io/v1
kind: WebhookAdmissionConfiguration
kubeConfigFile: @DIR@/webhook.kubeconfig
`,
		dupLine: "apiVersion: apiserver.config.k8s.io/v1",
		invalid: `apiVersion: apiserver.config.k8s.io/v1
kind: WebhookAdmissionConfiguration
kubeConfigFile: @DIR@/no-such.kubeconfig
`,
		wantField: `kubeConfigFile: Invalid value: "@DIR@/no-such.kubeconfig"`,
	},
	"MutatingAdmissionPolicy": {
		valid: `apiVersion: apiserver.config.k8s.io/v1
kind: MutatingAdmissionPolicyConfiguration
`,
		dupLine: "kind: MutatingAdmissionPolicyConfiguration",
		invalid: `apiVersion: apiserver.config.k8s.io/v1
kind: MutatingAdmissionPolicyConfiguration
staticManifestsDir: @DIR@/missing
`,
		wantField: "staticManifestsDir: ", // Forbidden before 1.37 (alpha gate off), missing since
	},
	"ValidatingAdmissionPolicy": {
		valid: `apiVersion: apiserver.config.k8s.io/v1
kind: ValidatingAdmissionPolicyConfiguration
`,
		dupLine: "apiVersion: apiserver.config.k8s.io/v1",
		invalid: `apiVersion: apiserver.config.k8s.io/v1
kind: ValidatingAdmissionPolicyConfiguration
staticManifestsDir: @DIR@/missing
`,
		wantField: "staticManifestsDir: ", // Forbidden before 1.37 (alpha gate off), missing since
	},
	"PodNodeSelector": {
		valid: `podNodeSelectorPluginConfig:
  clusterDefaultNodeSelector: env=prod
  team-a: team=a,env=prod
`,
		dupLine: "  team-a: team=a,env=prod",
		invalid: `podNodeSelectorPluginConfig:
  clusterDefaultNodeSelector: env=prod
  team-a: team
`,
		wantField:   `podNodeSelectorPluginConfig[team-a]: Invalid value: "team"`,
		unversioned: true,
	},
	"PodSecurity": {
		valid: `apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
defaults:
  enforce: baseline
  enforce-version: latest
  warn: restricted
exemptions:
  namespaces: [kube-system]
`,
		dupLine: "  enforce: baseline",
		invalid: `apiVersion: pod-security.admission.config.k8s.io/v1beta1
kind: PodSecurityConfiguration
defaults:
  enforce: strict
`,
		wantField: `defaults.enforce: Invalid value: "strict"`,
	},
	"PodTolerationRestriction": {
		valid: `apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1
kind: Configuration
default:
- key: example.com/dedicated
  operator: Exists
  effect: NoSchedule
whitelist: []
`,
		dupLine: "  effect: NoSchedule",
		invalid: `apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1
kind: Configuration
default:
- key: example.com/dedicated
  operator: Sometimes
`,
		wantField: "podtolerationrestriction.default[0].operator: Unsupported value",
	},
	"ResourceQuota": {
		valid: `apiVersion: apiserver.config.k8s.io/v1
kind: ResourceQuotaConfiguration
limitedResources:
- resource: services
  matchContains: ["services.loadbalancers"]
`,
		dupLine: `  matchContains: ["services.loadbalancers"]`,
		invalid: `apiVersion: resourcequota.admission.k8s.io/v1beta1
kind: Configuration
limitedResources:
- matchContains: ["pods"]
`,
		wantField: "limitedResources[0].resource: Required value",
	},
	"PersistentVolumeLabel": {
		valid: `apiVersion: persistentvolumelabel.admission.turnstile.dev/v1alpha1
kind: PersistentVolumeLabelConfiguration
onNoMatch: Deny
rules:
- name: prod
  match: {volumeType: gcePersistentDisk, idRegex: '^prod-(us-central1-[a-f])-'}
  zones: ['$1']
  region: us-central1
`,
		dupLine: "onNoMatch: Deny",
		invalid: `apiVersion: persistentvolumelabel.admission.turnstile.dev/v1alpha1
kind: PersistentVolumeLabelConfiguration
rules:
- name: broken
  match: {volumeType: gcePersistentDisk, idRegex: '^prod-('}
  region: us-central1
`,
		wantField: `rules[0].match.idRegex: Invalid value: "^prod-(": rule "broken": error parsing regexp`,
	},
	"SecurityContextDeny": {
		valid: `apiVersion: securitycontextdeny.admission.turnstile.dev/v1alpha1
kind: SecurityContextDenyConfiguration
coverEphemeralContainers: true
`,
		dupLine: "coverEphemeralContainers: true",
		invalid: `apiVersion: securitycontextdeny.admission.turnstile.dev/v1alpha1
kind: SecurityContextDenyConfiguration
coverEphemeralContainers: sometimes
`,
		wantField: "coverEphemeralContainers",
	},
	"PodSecurityPolicy": {
		valid: `apiVersion: podsecuritypolicy.admission.turnstile.dev/v1alpha1
kind: PodSecurityPolicyConfiguration
mode: warn
`,
		dupLine: "mode: warn",
		invalid: `apiVersion: podsecuritypolicy.admission.turnstile.dev/v1alpha1
kind: PodSecurityPolicyConfiguration
mode: warm
`,
		wantField: `mode: Unsupported value: "warm": supported values: "enforce", "warn", "audit"`,
	},
	"DenyEscalatingExec": {
		valid: `apiVersion: exec.admission.turnstile.dev/v1alpha1
kind: ExecConfiguration
perContainer: true
`,
		dupLine: "perContainer: true",
		invalid: `apiVersion: exec.admission.turnstile.dev/v1alpha1
kind: ExecConfiguration
perContainer: 3
`,
		wantField: "perContainer",
	},
	"DenyExecOnPrivileged": {
		valid: `apiVersion: exec.admission.turnstile.dev/v1alpha1
kind: ExecConfiguration
treatHostProcessAsPrivileged: true
`,
		dupLine: "treatHostProcessAsPrivileged: true",
		invalid: `apiVersion: exec.admission.turnstile.dev/v1alpha1
kind: ExecConfiguration
treatHostProcessAsPrivileged: [true]
`,
		wantField: "treatHostProcessAsPrivileged",
	},
}

// Kubeconfigs the fixtures point at. Nothing listens at the server: the
// plugins load the kubeconfig when they start and call the backend later.
var fixtureFiles = map[string]string{
	"imagepolicy.kubeconfig": `apiVersion: v1
kind: Config
clusters:
- name: backend
  cluster:
    server: https://127.0.0.1:1/imagepolicy
    insecure-skip-tls-verify: true
users:
- name: apiserver
  user:
    token: secret
contexts:
- name: default
  context:
    cluster: backend
    user: apiserver
current-context: default
`,
	"webhook.kubeconfig": `apiVersion: v1
kind: Config
users:
- name: "*.webhooks.svc"
  user:
    token: secret
`,
}

// registry is every plugin our binary registers, with its factory.
func registry(t testing.TB) (*admissionapi.Plugins, Plugins) {
	t.Helper()
	o := kubeoptions.NewAdmissionOptions()
	if err := admission.Apply(o.GenericAdmission); err != nil {
		t.Fatal(err)
	}
	names := o.GenericAdmission.Plugins.Registered()
	return o.GenericAdmission.Plugins, Plugins{Registered: names, Enabled: names}
}

// writeFiles writes files into a new directory, replacing @DIR@ with it, and
// returns the directory.
func writeFiles(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range fixtureFiles {
		if _, ok := files[name]; !ok {
			files[name] = content
		}
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(content, "@DIR@", dir)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// admissionConfig is an AdmissionConfiguration of apiVersion with entries,
// each a YAML list item.
func admissionConfig(apiVersion string, entries ...string) string {
	return "apiVersion: " + apiVersion + "\nkind: AdmissionConfiguration\nplugins:\n" + strings.Join(entries, "")
}

func pathEntry(name, path string) string {
	return "- name: " + name + "\n  path: " + path + "\n"
}

func inlineEntry(name, config string) string {
	return "- name: " + name + "\n  configuration:\n" + indent(config, "    ")
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

const (
	v1       = "apiserver.config.k8s.io/v1"
	v1alpha1 = "apiserver.k8s.io/v1alpha1"
)

// testCase is an admission configuration file, the files next to it, and
// the substrings its error must have (none: it is valid).
type testCase struct {
	name    string
	files   map[string]string // "admission.yaml" is the configuration file
	enabled []string          // nil: every registered plugin
	want    []string
}

// pluginCases are, for every configurable plugin, valid configurations by
// path and inline in both versions, and each class of malformed input.
func pluginCases() []testCase {
	var cases []testCase
	for _, plugin := range sortedKeys(fixtures) {
		f := fixtures[plugin]
		// A kind the plugin does not know, "kind: BogusConfiguration".
		wrongKind, wantKind := strings.Replace(f.valid, "\nkind: ", "\nkind: Bogus", 1), "Bogus"
		if f.unversioned {
			wrongKind, wantKind = "kind: Bogus\n"+f.valid, `unknown field "kind"`
		}
		unknown, wantUnknown := f.valid+"bogusField: 1\n", `unknown field "bogusField"`
		duplicated := strings.Replace(f.valid, f.dupLine, f.dupLine+"\n"+f.dupLine, 1)
		cases = append(cases,
			testCase{name: plugin + "/path/v1", files: map[string]string{
				"admission.yaml": admissionConfig(v1, pathEntry(plugin, "plugin.yaml")), "plugin.yaml": f.valid}},
			testCase{name: plugin + "/path/v1alpha1/subdirectory", files: map[string]string{
				"admission.yaml": admissionConfig(v1alpha1, pathEntry(plugin, "conf/plugin.yaml")), "conf/plugin.yaml": f.valid}},
			testCase{name: plugin + "/path/absolute", files: map[string]string{
				"admission.yaml": admissionConfig(v1, pathEntry(plugin, "@DIR@/plugin.yaml")), "plugin.yaml": f.valid}},
			testCase{name: plugin + "/inline/v1", files: map[string]string{
				"admission.yaml": admissionConfig(v1, inlineEntry(plugin, f.valid))}},
			testCase{name: plugin + "/inline/v1alpha1", files: map[string]string{
				"admission.yaml": admissionConfig(v1alpha1, inlineEntry(plugin, f.valid))}},

			testCase{name: plugin + "/unknown-field/path", files: map[string]string{
				"admission.yaml": admissionConfig(v1, pathEntry(plugin, "plugin.yaml")), "plugin.yaml": unknown},
				want: []string{"plugin " + plugin + " (path @DIR@/plugin.yaml)", wantUnknown}},
			testCase{name: plugin + "/unknown-field/inline", files: map[string]string{
				"admission.yaml": admissionConfig(v1, inlineEntry(plugin, unknown))},
				want: []string{"plugin " + plugin + " (inline configuration, plugins[0])", wantUnknown}},
			testCase{name: plugin + "/wrong-kind/path", files: map[string]string{
				"admission.yaml": admissionConfig(v1, pathEntry(plugin, "plugin.yaml")), "plugin.yaml": wrongKind},
				want: []string{"plugin " + plugin + " (path @DIR@/plugin.yaml)", wantKind}},
			testCase{name: plugin + "/wrong-kind/inline", files: map[string]string{
				"admission.yaml": admissionConfig(v1alpha1, inlineEntry(plugin, wrongKind))},
				want: []string{"plugin " + plugin + " (inline configuration, plugins[0])", wantKind}},
			testCase{name: plugin + "/duplicate-field/path", files: map[string]string{
				"admission.yaml": admissionConfig(v1, pathEntry(plugin, "plugin.yaml")), "plugin.yaml": duplicated},
				want: []string{"plugin " + plugin + " (path @DIR@/plugin.yaml)", "Duplicate value"}},
			testCase{name: plugin + "/duplicate-field/inline", files: map[string]string{
				"admission.yaml": admissionConfig(v1, pathEntry("AlwaysPullImages", "x"), inlineEntry(plugin, duplicated))},
				want: []string{"plugin " + plugin + " (plugins[1]): plugins[1].configuration.", "Duplicate value"}},
			testCase{name: plugin + "/missing-file", files: map[string]string{
				"admission.yaml": admissionConfig(v1, pathEntry(plugin, "missing.yaml"))},
				want: []string{"plugin " + plugin + ` (plugins[0].path "missing.yaml")`, "@DIR@/missing.yaml: no such file or directory"}},
			testCase{name: plugin + "/empty-file", files: map[string]string{
				"admission.yaml": admissionConfig(v1, pathEntry(plugin, "plugin.yaml")), "plugin.yaml": "# nothing yet\n"},
				want: []string{"plugin " + plugin + " (path @DIR@/plugin.yaml): the file is empty"}},
			testCase{name: plugin + "/invalid-value/path", files: map[string]string{
				"admission.yaml": admissionConfig(v1, pathEntry(plugin, "plugin.yaml")), "plugin.yaml": f.invalid},
				want: []string{"plugin " + plugin + " (path @DIR@/plugin.yaml)", f.wantField}},
			testCase{name: plugin + "/invalid-value/inline", files: map[string]string{
				"admission.yaml": admissionConfig(v1, inlineEntry(plugin, f.invalid))},
				want: []string{"plugin " + plugin + " (inline configuration, plugins[0])", f.wantField}},
		)
	}
	return cases
}

// fileCases are malformed and unusual configuration files as a whole.
var fileCases = []testCase{
	{name: "empty", files: map[string]string{"admission.yaml": ""}, want: []string{"the file is empty"}},
	{name: "only comments", files: map[string]string{"admission.yaml": "# EventRateLimit later\n"}, want: []string{"the file is empty"}},
	{name: "not yaml", files: map[string]string{"admission.yaml": "plugins: [\n"}, want: []string{"yaml"}},
	{name: "a list", files: map[string]string{"admission.yaml": "- name: EventRateLimit\n"}, want: []string{"AdmissionConfiguration"}},
	{name: "no kind", files: map[string]string{"admission.yaml": "plugins: []\n"}, want: []string{"apiVersion and kind are required"}},
	{name: "wrong kind", files: map[string]string{"admission.yaml": "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfig\nplugins: []\n"},
		want: []string{"apiVersion apiserver.config.k8s.io/v1, kind AdmissionConfig is not an admission configuration"}},
	{name: "wrong group", files: map[string]string{"admission.yaml": "apiVersion: apiserver.config.k8s.io/v1alpha1\nkind: AdmissionConfiguration\nplugins: []\n"},
		want: []string{"apiVersion apiserver.config.k8s.io/v1alpha1, kind AdmissionConfiguration is not an admission configuration"}},
	{name: "another kind of the group", files: map[string]string{"admission.yaml": "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources: []\n"},
		want: []string{"kind EncryptionConfiguration is not an admission configuration"}},
	{name: "unknown field", files: map[string]string{"admission.yaml": "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugin: []\n"},
		want: []string{`unknown field "plugin"`}},
	{name: "unknown entry field", files: map[string]string{"admission.yaml": admissionConfig(v1, "- name: EventRateLimit\n  paths: x.yaml\n", pathEntry("PodSecurity", "missing.yaml"))},
		want: []string{`unknown field "plugins[0].paths"`, "plugin EventRateLimit (plugins[0]): give its configuration", `plugin PodSecurity (plugins[1].path "missing.yaml")`}},
	{name: "duplicate field", files: map[string]string{"admission.yaml": "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins: []\nplugins: []\n"},
		want: []string{"plugins: Duplicate value: the field is given twice (lines 3 and 4)"}},
	{name: "no plugins", files: map[string]string{"admission.yaml": "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins: []\n"}},
	{name: "json", files: map[string]string{"admission.yaml": `{"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration",
 "plugins": [{"name": "EventRateLimit", "configuration": {"apiVersion": "eventratelimit.admission.k8s.io/v1alpha1", "kind": "Configuration",
   "limits": [{"type": "Server", "qps": 5, "burst": 10}]}}]}`}},
	{name: "unknown plugin", files: map[string]string{"admission.yaml": admissionConfig(v1, pathEntry("EventLimit", "x.yaml"))},
		want: []string{`plugins[0].name: plugin "EventLimit" is not a registered admission plugin`}},
	{name: "plugin name in the wrong case", files: map[string]string{"admission.yaml": admissionConfig(v1, pathEntry("eventratelimit", "x.yaml"))},
		want: []string{`did you mean "EventRateLimit"?`}},
	{name: "no plugin name", files: map[string]string{"admission.yaml": admissionConfig(v1, "- path: x.yaml\n")},
		want: []string{"plugins[0].name: Required value"}},
	{name: "plugin configured twice", files: map[string]string{
		"admission.yaml": admissionConfig(v1, pathEntry("PodSecurity", "a.yaml"), pathEntry("PodSecurity", "a.yaml")),
		"a.yaml":         fixtures["PodSecurity"].valid},
		want: []string{"plugin PodSecurity (plugins[1]): configured again; plugins[0] configures it already"}},
	{name: "path and configuration", files: map[string]string{
		"admission.yaml": admissionConfig(v1, inlineEntry("PodSecurity", fixtures["PodSecurity"].valid)+"  path: a.yaml\n")},
		want: []string{"plugin PodSecurity (plugins[0]): give either path or configuration, not both"}},
	{name: "neither path nor configuration", files: map[string]string{"admission.yaml": admissionConfig(v1, "- name: PodSecurity\n")},
		want: []string{"plugin PodSecurity (plugins[0]): give its configuration inline under configuration, or a file under path"}},
	{name: "null configuration", files: map[string]string{"admission.yaml": admissionConfig(v1, "- name: PodSecurity\n  configuration: null\n")},
		want: []string{"plugin PodSecurity (plugins[0]): give its configuration"}},
	{name: "a plugin without configuration", files: map[string]string{
		"admission.yaml": admissionConfig(v1, inlineEntry("AlwaysPullImages", "apiVersion: v1\nkind: Bogus\n"))},
		want: []string{"plugin AlwaysPullImages (inline configuration, plugins[0]): this plugin takes no configuration"}},
	{name: "path is a directory", files: map[string]string{"admission.yaml": admissionConfig(v1, pathEntry("PodSecurity", "conf")), "conf/x": ""},
		want: []string{`plugin PodSecurity (plugins[0].path "conf"): @DIR@/conf is not a regular file`}},
	{name: "configuration of another plugin", files: map[string]string{
		"admission.yaml": admissionConfig(v1, inlineEntry("EventRateLimit", fixtures["PodSecurity"].valid))},
		want: []string{"plugin EventRateLimit (inline configuration, plugins[0]): apiVersion pod-security.admission.config.k8s.io/v1, kind PodSecurityConfiguration is not a configuration of this plugin; want apiVersion eventratelimit.admission.k8s.io/v1alpha1, kind Configuration"}},
	{name: "configuration of the sibling policy plugin", files: map[string]string{
		"admission.yaml": admissionConfig(v1, inlineEntry("ValidatingAdmissionPolicy", fixtures["MutatingAdmissionPolicy"].valid))},
		want: []string{"kind MutatingAdmissionPolicyConfiguration is not a configuration of this plugin; want apiVersion apiserver.config.k8s.io/v1, kind ValidatingAdmissionPolicyConfiguration"}},
	{name: "every error at once", files: map[string]string{
		"admission.yaml": admissionConfig(v1, pathEntry("EventRateLimit", "missing.yaml"), pathEntry("NoSuchPlugin", "x"), inlineEntry("PodSecurity", fixtures["PodSecurity"].invalid))},
		want: []string{`plugin EventRateLimit (plugins[0].path "missing.yaml")`, `plugin "NoSuchPlugin" is not a registered`, "plugin PodSecurity (inline configuration, plugins[2])"}},
	{name: "image policy without kubeconfig", files: map[string]string{
		"admission.yaml": admissionConfig(v1, inlineEntry("ImagePolicyWebhook", "imagePolicy:\n  allowTTL: 50\n"))},
		want: []string{"imagePolicy.kubeConfigFile: Required value"}},
	{name: "image policy with a broken kubeconfig", files: map[string]string{
		"admission.yaml":    admissionConfig(v1, inlineEntry("ImagePolicyWebhook", "imagePolicy:\n  kubeConfigFile: @DIR@/broken.kubeconfig\n")),
		"broken.kubeconfig": "clusters: {\n"},
		want: []string{`imagePolicy.kubeConfigFile: Invalid value: "@DIR@/broken.kubeconfig"`}},
	{name: "image policy TTL sentinels", files: map[string]string{
		"admission.yaml": admissionConfig(v1, inlineEntry("ImagePolicyWebhook", "imagePolicy:\n  kubeConfigFile: @DIR@/imagepolicy.kubeconfig\n  allowTTL: -1\n  denyTTL: 0\n  retryBackoff: 300000\n"))}},
	{name: "image policy TTL out of range", files: map[string]string{
		"admission.yaml": admissionConfig(v1, inlineEntry("ImagePolicyWebhook", "imagePolicy:\n  kubeConfigFile: @DIR@/imagepolicy.kubeconfig\n  allowTTL: 1801\n  denyTTL: -2\n"))},
		want: []string{"imagePolicy.allowTTL: Invalid value: 1801: must be between 1 and 1800 (seconds)", "imagePolicy.denyTTL: Invalid value: -2"}},
	{name: "image policy TTL as a string", files: map[string]string{
		"admission.yaml": admissionConfig(v1, inlineEntry("ImagePolicyWebhook", "imagePolicy:\n  kubeConfigFile: @DIR@/imagepolicy.kubeconfig\n  allowTTL: 50s\n"))},
		want: []string{"plugin ImagePolicyWebhook", "imagePolicy.allowTTL"}},
	{name: "image policy key in the wrong case", files: map[string]string{
		"admission.yaml": admissionConfig(v1, inlineEntry("ImagePolicyWebhook", "imagePolicy:\n  KubeConfigFile: @DIR@/imagepolicy.kubeconfig\n"))},
		want: []string{`unknown field "imagePolicy.KubeConfigFile"`}},
	{name: "node selector of a bad namespace name", files: map[string]string{
		"admission.yaml": admissionConfig(v1, inlineEntry("PodNodeSelector", "podNodeSelectorPluginConfig:\n  Team_A: team=a\n"))},
		want: []string{`podNodeSelectorPluginConfig[Team_A]: Invalid value: "Team_A": not clusterDefaultNodeSelector and not a namespace name`}},
	{name: "node selector not a string", files: map[string]string{
		"admission.yaml": admissionConfig(v1, inlineEntry("PodNodeSelector", "podNodeSelectorPluginConfig:\n  team-a: {team: a}\n"))},
		want: []string{"plugin PodNodeSelector", "podNodeSelectorPluginConfig"}},
	{name: "node selector with a bad label value", files: map[string]string{
		"admission.yaml": admissionConfig(v1, inlineEntry("PodNodeSelector", "podNodeSelectorPluginConfig:\n  clusterDefaultNodeSelector: env=pro d!\n"))},
		want: []string{"podNodeSelectorPluginConfig[clusterDefaultNodeSelector]: Invalid value"}},
	{name: "empty node selector config", files: map[string]string{
		"admission.yaml": admissionConfig(v1, inlineEntry("PodNodeSelector", "podNodeSelectorPluginConfig: {}\n"))}},

	// The legacy unversioned file, given whole to ImagePolicyWebhook and
	// PodNodeSelector.
	{name: "legacy file", files: map[string]string{
		"admission.yaml": fixtures["ImagePolicyWebhook"].valid + fixtures["PodNodeSelector"].valid}},
	{name: "legacy file of PodNodeSelector only", enabled: []string{"PodNodeSelector"}, files: map[string]string{
		"admission.yaml": fixtures["PodNodeSelector"].valid}},
	{name: "legacy file without imagePolicy for an enabled ImagePolicyWebhook", enabled: []string{"ImagePolicyWebhook", "PodNodeSelector"}, files: map[string]string{
		"admission.yaml": fixtures["PodNodeSelector"].valid},
		want: []string{"plugin ImagePolicyWebhook is enabled and reads this legacy file, which has no imagePolicy section"}},
	{name: "legacy file with an unknown section", files: map[string]string{
		"admission.yaml": fixtures["PodNodeSelector"].valid + "podNodeSelector:\n  a: b=c\n"},
		want: []string{`legacy unversioned file: unknown field "podNodeSelector"`}},
	{name: "legacy file with an invalid selector", files: map[string]string{
		"admission.yaml": fixtures["PodNodeSelector"].invalid},
		want: []string{"plugin PodNodeSelector (legacy unversioned file): podNodeSelectorPluginConfig[team-a]"}},
	{name: "legacy file with an invalid TTL", files: map[string]string{
		"admission.yaml": fixtures["ImagePolicyWebhook"].invalid},
		want: []string{"plugin ImagePolicyWebhook (legacy unversioned file): imagePolicy.retryBackoff"}},
	{name: "legacy file with a duplicate", files: map[string]string{
		"admission.yaml": "podNodeSelectorPluginConfig:\n  a: b=c\n  a: b=d\n"},
		want: []string{"plugin PodNodeSelector (legacy unversioned file): podNodeSelectorPluginConfig.a: Duplicate value"}},
	{name: "legacy file with a versioned header", files: map[string]string{
		"admission.yaml": "apiVersion: v1\nkind: Bogus\n" + fixtures["PodNodeSelector"].valid},
		want: []string{`legacy unversioned file: unknown field "apiVersion"`, `unknown field "kind"`}},
	{name: "legacy sections by path", files: map[string]string{
		"admission.yaml": admissionConfig(v1, pathEntry("ImagePolicyWebhook", "legacy.yaml"), pathEntry("PodNodeSelector", "legacy.yaml")),
		"legacy.yaml":    fixtures["ImagePolicyWebhook"].valid + fixtures["PodNodeSelector"].valid}},
	{name: "the other legacy section by path", files: map[string]string{
		"admission.yaml": admissionConfig(v1, pathEntry("PodNodeSelector", "legacy.yaml")),
		"legacy.yaml":    fixtures["ImagePolicyWebhook"].valid},
		want: []string{"plugin PodNodeSelector (path @DIR@/legacy.yaml): podNodeSelectorPluginConfig: Required value"}},
	{name: "a shared legacy file by path with an error in the other section", files: map[string]string{
		"admission.yaml": admissionConfig(v1, pathEntry("PodNodeSelector", "legacy.yaml")),
		"legacy.yaml":    fixtures["ImagePolicyWebhook"].invalid + fixtures["PodNodeSelector"].valid},
		want: []string{"plugin PodNodeSelector (path @DIR@/legacy.yaml): imagePolicy.retryBackoff: Invalid value"}},
}

func TestValidate(t *testing.T) {
	_, plugins := registry(t)
	for _, c := range append(pluginCases(), fileCases...) {
		t.Run(c.name, func(t *testing.T) {
			dir := writeFiles(t, c.files)
			file := filepath.Join(dir, "admission.yaml")
			p := plugins
			if c.enabled != nil {
				p.Enabled = c.enabled
			}
			err := Validate(file, p)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted it, want an error with %q", c.want)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "admission-control-config-file "+file+": ") {
				t.Errorf("error does not start by naming the file %s:\n%s", file, msg)
			}
			for _, want := range c.want {
				if want = strings.ReplaceAll(want, "@DIR@", dir); !strings.Contains(msg, want) {
					t.Errorf("error lacks %q:\n%s", want, msg)
				}
			}
		})
	}
}

// A relative path is relative to the configuration file's directory, also
// when the file is given by a relative path, as upstream resolves it.
func TestRelativePaths(t *testing.T) {
	_, plugins := registry(t)
	dir := writeFiles(t, map[string]string{
		"etc/admission.yaml": admissionConfig(v1, pathEntry("EventRateLimit", "erl.yaml")),
		"etc/erl.yaml":       fixtures["EventRateLimit"].valid,
		"erl.yaml":           fixtures["EventRateLimit"].invalid,
	})
	t.Chdir(dir)
	if err := Validate("etc/admission.yaml", plugins); err != nil {
		t.Errorf("relative configuration file: %v", err)
	}
	if err := Validate(filepath.Join(dir, "etc", "admission.yaml"), plugins); err != nil {
		t.Errorf("absolute configuration file: %v", err)
	}
	t.Chdir(filepath.Join(dir, "etc"))
	if err := Validate("admission.yaml", plugins); err != nil {
		t.Errorf("configuration file in the working directory: %v", err)
	}
}

func TestMissingConfigurationFile(t *testing.T) {
	_, plugins := registry(t)
	file := filepath.Join(t.TempDir(), "admission.yaml")
	err := Validate(file, plugins)
	if err == nil || !strings.Contains(err.Error(), "admission-control-config-file "+file+": stat "+file+": no such file or directory") {
		t.Errorf("Validate(missing file) = %v, want an error naming the file", err)
	}
}

// Every configuration our check accepts, the plugin's own factory accepts
// too: the check is stricter than the plugin, never looser or different.
func TestPluginsAcceptWhatTheCheckAccepts(t *testing.T) {
	registered, plugins := registry(t)
	for _, plugin := range sortedKeys(fixtures) {
		t.Run(plugin, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{})
			data := []byte(strings.ReplaceAll(fixtures[plugin].valid, "@DIR@", dir))
			if err := checks[plugin](plugin, data); err != nil {
				t.Fatalf("check: %v", err)
			}
			_, err := registered.InitPlugin(plugin, bytes.NewReader(data), admissionapi.PluginInitializers{})
			// InitPlugin runs the factory, then checks the plugin's
			// initialization, which fails here without informers and clients.
			if err != nil && !strings.HasPrefix(err.Error(), "failed to initialize admission plugin") {
				t.Errorf("the plugin's factory refuses a configuration the check accepts: %v", err)
			}
		})
	}
	if got, want := sortedKeys(fixtures), Configurable(); !slices.Equal(got, want) {
		t.Errorf("fixtures cover %v, want every configurable plugin %v", got, want)
	}
	for _, name := range Configurable() {
		if !slices.Contains(plugins.Registered, name) {
			t.Errorf("the check table has %s, which is not registered", name)
		}
	}
}

// A plugin whose factory refuses garbage reads its configuration, so it
// needs a line in the checks table; otherwise an entry for it would be
// refused as "takes no configuration".
func TestEveryPluginThatReadsItsConfigurationHasACheck(t *testing.T) {
	registered, plugins := registry(t)
	for _, name := range plugins.Registered {
		_, err := registered.InitPlugin(name, strings.NewReader("{not: [a configuration"), admissionapi.PluginInitializers{})
		reads := err != nil && strings.HasPrefix(err.Error(), "couldn't init admission plugin")
		if _, has := checks[name]; reads && !has {
			t.Errorf("plugin %s reads its configuration (%v) but has no check in the table", name, err)
		}
	}
}

// The examples users copy pass the check.
func TestExamples(t *testing.T) {
	_, plugins := registry(t)
	for _, file := range []string{
		"../../../examples/admission/admission-config.yaml",
		"../../../cmd/bench/admission-config.yaml",
		"../../../test/e2e/testdata/hardened-exec-scd.yaml",
	} {
		if err := Validate(file, plugins); err != nil {
			t.Errorf("%s: %v", file, err)
		}
	}
	// examples/admission's per-plugin files go through kube-apiserver
	// --validate-only in make verify (cmd/verify-examples).
}

func TestEnabledPlugins(t *testing.T) {
	newOptions := func() *kubeoptions.AdmissionOptions {
		o := kubeoptions.NewAdmissionOptions()
		if err := admission.Apply(o.GenericAdmission); err != nil {
			t.Fatal(err)
		}
		return o
	}
	o := newOptions()
	defaults := EnabledPlugins(o)
	for _, name := range []string{"NamespaceLifecycle", "ServiceAccount", "ResourceQuota", "PodSecurity"} {
		if !slices.Contains(defaults, name) {
			t.Errorf("default plugins %v lack %s", defaults, name)
		}
	}
	for _, name := range []string{"EventRateLimit", "SecurityContextDeny", "AlwaysDeny"} {
		if slices.Contains(defaults, name) {
			t.Errorf("default plugins %v have %s", defaults, name)
		}
	}

	o = newOptions()
	o.GenericAdmission.EnablePlugins = []string{"EventRateLimit", "DenyEscalatingExec"}
	o.GenericAdmission.DisablePlugins = []string{"ServiceAccount"}
	got := EnabledPlugins(o)
	if !slices.Contains(got, "EventRateLimit") || !slices.Contains(got, "DenyEscalatingExec") || slices.Contains(got, "ServiceAccount") || !slices.Contains(got, "PodSecurity") {
		t.Errorf("--enable-admission-plugins=EventRateLimit,DenyEscalatingExec --disable-admission-plugins=ServiceAccount: %v", got)
	}

	o = newOptions()
	o.PluginNames = []string{"AlwaysDeny", "NamespaceLifecycle"}
	if got := EnabledPlugins(o); !slices.Equal(got, []string{"NamespaceLifecycle", "AlwaysDeny"}) {
		t.Errorf("--admission-control=AlwaysDeny,NamespaceLifecycle: %v, want NamespaceLifecycle, AlwaysDeny", got)
	}
}

func TestCheck(t *testing.T) {
	o := kubeoptions.NewAdmissionOptions()
	if err := admission.Apply(o.GenericAdmission); err != nil {
		t.Fatal(err)
	}
	if err := Check(o); err != nil {
		t.Errorf("no configuration file: %v", err)
	}
	dir := writeFiles(t, map[string]string{"admission.yaml": fixtures["PodNodeSelector"].valid})
	o.GenericAdmission.ConfigFile = filepath.Join(dir, "admission.yaml")
	if err := Check(o); err != nil {
		t.Errorf("legacy file, no plugin reads it: %v", err)
	}
	o.PluginNames = []string{"ImagePolicyWebhook"}
	if err := Check(o); err == nil || !strings.Contains(err.Error(), "plugin ImagePolicyWebhook is enabled") {
		t.Errorf("legacy file without imagePolicy, --admission-control=ImagePolicyWebhook: %v", err)
	}
}

func TestWritableByOthers(t *testing.T) {
	tests := []struct {
		name            string
		dirMode, cfMode os.FileMode // the directory's, the configuration file's
		pluginMode      os.FileMode // the file the configuration names by path
		want            []string    // substrings, one a finding; none for none
	}{
		{name: "owner only", dirMode: 0o755, cfMode: 0o600, pluginMode: 0o644},
		{name: "group-writable configuration", dirMode: 0o755, cfMode: 0o660, pluginMode: 0o644,
			want: []string{"admission.yaml is writable by its group or everyone (mode 0660)"}},
		{name: "world-writable plugin file", dirMode: 0o755, cfMode: 0o600, pluginMode: 0o666,
			want: []string{"exec.yaml is writable by its group or everyone (mode 0666)"}},
		{name: "world-writable directory", dirMode: 0o777, cfMode: 0o600, pluginMode: 0o600,
			want: []string{"admission.yaml is in", "exec.yaml is in"}},
		{name: "sticky world-writable directory", dirMode: 0o777 | os.ModeSticky, cfMode: 0o600, pluginMode: 0o600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "admission")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "admission.yaml")
			write := func(path, data string, mode os.FileMode) {
				if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, mode); err != nil {
					t.Fatal(err)
				}
			}
			write(file, "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: DenyEscalatingExec\n  path: exec.yaml\n", tt.cfMode)
			write(filepath.Join(dir, "exec.yaml"), "apiVersion: exec.admission.turnstile.dev/v1alpha1\nkind: ExecConfiguration\n", tt.pluginMode)
			if err := os.Chmod(dir, tt.dirMode); err != nil {
				t.Fatal(err)
			}
			got := Read(file, nil).WritableByOthers()
			if len(got) != len(tt.want) {
				t.Fatalf("got %q, want %d findings %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("finding %d: %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

// The webhook plugins' configuration is refused exactly when upstream's
// LoadConfig refuses it when the apiserver starts, for staticOrder (a
// field of Kubernetes v1.38, unknown before it) as for the rest, and the
// message names the field.
func TestWebhookConfigurationAsUpstream(t *testing.T) {
	dir := t.TempDir()
	for name, yaml := range map[string]string{
		"no staticOrder":          "apiVersion: apiserver.config.k8s.io/v1\nkind: WebhookAdmissionConfiguration\n",
		"an unknown staticOrder":  "apiVersion: apiserver.config.k8s.io/v1\nkind: WebhookAdmissionConfiguration\nstaticManifestsDir: " + dir + "\nstaticOrder: Sideways\n",
		"staticOrder without dir": "apiVersion: apiserver.config.k8s.io/v1\nkind: WebhookAdmissionConfiguration\nstaticOrder: StaticLast\n",
	} {
		_, upstream := webhookconfig.LoadConfig(strings.NewReader(yaml))
		ours := checkWebhook("webhook.yaml", []byte(yaml))
		if (ours == nil) != (upstream == nil) {
			t.Errorf("%s: our check says %v, upstream's LoadConfig %v", name, ours, upstream)
		}
		if ours != nil && !strings.Contains(ours.Error(), "staticOrder") {
			t.Errorf("%s: %v does not name staticOrder", name, ours)
		}
	}
}

// A snapshot hands each plugin exactly the bytes upstream's loader would,
// for every valid configuration of the cases: by path (relative and
// absolute), inline in both versions, and the legacy file.
func TestSnapshotConfigsAsUpstream(t *testing.T) {
	_, plugins := registry(t)
	for _, c := range append(pluginCases(), fileCases...) {
		if len(c.want) != 0 {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			dir := writeFiles(t, c.files)
			file := filepath.Join(dir, "admission.yaml")
			enabled := plugins.Enabled
			if c.enabled != nil {
				enabled = c.enabled
			}
			got, err := Read(file, nil).PluginConfigs(enabled)
			if err != nil {
				t.Fatal(err)
			}
			provider, err := admissionapi.ReadAdmissionConfiguration(enabled, file, configScheme)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range enabled {
				r, err := provider.ConfigFor(name)
				if err != nil {
					t.Fatal(err)
				}
				var want []byte
				if r != nil {
					if want, err = io.ReadAll(r); err != nil {
						t.Fatal(err)
					}
				}
				if g, ok := got[name]; !bytes.Equal(g, want) || ok != (r != nil) {
					t.Errorf("%s: snapshot gives %q (present %v), upstream's loader %q", name, g, ok, want)
				}
			}
		})
	}
}
