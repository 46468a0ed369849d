// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package configfile

import (
	"bytes"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission/plugin/manifest"
	"k8s.io/apiserver/pkg/admission/plugin/policy/config/apis/policyconfig"
	policyconfiginstall "k8s.io/apiserver/pkg/admission/plugin/policy/config/apis/policyconfig/install"
	mutatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	resourcequotaapi "k8s.io/apiserver/pkg/admission/plugin/resourcequota/apis/resourcequota"
	resourcequotainstall "k8s.io/apiserver/pkg/admission/plugin/resourcequota/apis/resourcequota/install"
	resourcequotavalidation "k8s.io/apiserver/pkg/admission/plugin/resourcequota/apis/resourcequota/validation"
	webhookconfig "k8s.io/apiserver/pkg/admission/plugin/webhook/config"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/config/apis/webhookadmission"
	webhookinstall "k8s.io/apiserver/pkg/admission/plugin/webhook/config/apis/webhookadmission/install"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/kubernetes/plugin/pkg/admission/eventratelimit"
	eventratelimitapi "k8s.io/kubernetes/plugin/pkg/admission/eventratelimit/apis/eventratelimit"
	eventratelimitinstall "k8s.io/kubernetes/plugin/pkg/admission/eventratelimit/apis/eventratelimit/install"
	eventratelimitvalidation "k8s.io/kubernetes/plugin/pkg/admission/eventratelimit/apis/eventratelimit/validation"
	"k8s.io/kubernetes/plugin/pkg/admission/imagepolicy"
	"k8s.io/kubernetes/plugin/pkg/admission/podnodeselector"
	"k8s.io/kubernetes/plugin/pkg/admission/podtolerationrestriction"
	podtolerationrestrictioninstall "k8s.io/kubernetes/plugin/pkg/admission/podtolerationrestriction/apis/podtolerationrestriction/install"
	podtolerationrestrictionvalidation "k8s.io/kubernetes/plugin/pkg/admission/podtolerationrestriction/apis/podtolerationrestriction/validation"
	"k8s.io/kubernetes/plugin/pkg/admission/security/podsecurity"
	podsecurityapi "k8s.io/pod-security-admission/admission/api"
	podsecurityscheme "k8s.io/pod-security-admission/admission/api/scheme"
	podsecurityvalidation "k8s.io/pod-security-admission/admission/api/validation"

	"github.com/turnstile-k8s/turnstile/pkg/admission/descriptor"
	"github.com/turnstile-k8s/turnstile/pkg/admission/restored"
)

// check validates one plugin's configuration: data is the file an entry's
// path names, or its inline configuration (as JSON), exactly what upstream
// hands the plugin's factory.
type check = func(plugin string, data []byte) error

// Upstream are the upstream plugins whose configuration this package checks
// strictly, built from each plugin's own types and validation, and those of
// them a reload may swap (pkg/admission/reload). Their instances hold nothing
// that outlives them but caches (EventRateLimit's token buckets,
// ImagePolicyWebhook's answers), which a reload starts afresh. The webhook
// and admission policy plugins and ResourceQuota start workers and informers
// of their own that an instance cannot hand over, so a change to their
// configuration is refused until a restart.
var Upstream = []descriptor.Plugin{
	{Name: eventratelimit.PluginName, Check: versioned(eventratelimitinstall.Install, validateEventRateLimit), Reloadable: true},
	{Name: imagepolicy.PluginName, Check: unversioned(imagePolicyKey), Reloadable: true},
	{Name: mutatingwebhook.PluginName, Check: checkWebhook},
	{Name: validatingwebhook.PluginName, Check: checkWebhook},
	{Name: mutatingpolicy.PluginName, Check: versioned(policyconfiginstall.Install, validatePolicy[*policyconfig.MutatingAdmissionPolicyConfiguration])},
	{Name: validatingpolicy.PluginName, Check: versioned(policyconfiginstall.Install, validatePolicy[*policyconfig.ValidatingAdmissionPolicyConfiguration])},
	{Name: podnodeselector.PluginName, Check: unversioned(podNodeSelectorKey), Reloadable: true},
	{Name: podsecurity.PluginName, Check: versioned(podsecurityscheme.AddToScheme, validatePodSecurity), Reloadable: true},
	{Name: podtolerationrestriction.PluginName, Check: versioned(podtolerationrestrictioninstall.Install, podtolerationrestrictionvalidation.ValidateConfiguration), Reloadable: true},
	{Name: resourcequota.PluginName, Check: versioned(resourcequotainstall.Install, validateResourceQuota)},
}

// Described is every plugin described: the restored ones and Upstream.
var Described = slices.Concat(restored.Plugins, Upstream)

// checks is the check of every plugin that reads a configuration. A
// registered plugin without one takes no configuration, and an entry for it
// is an error (TestEveryPluginThatReadsItsConfigurationHasACheck finds
// plugins that read one and have none).
var checks = func() map[string]check {
	m := map[string]check{}
	for _, d := range Described {
		if d.Check != nil {
			m[d.Name] = d.Check
		}
	}
	return m
}()

// Configurable returns the names of the plugins that read a configuration.
func Configurable() []string {
	return sortedKeys(checks)
}

// versioned checks a configuration that is a kind of the plugin's own API
// group: it is decoded strictly (unknown and duplicate fields are errors)
// with the scheme the plugin's install package builds, converted to the
// internal type T the plugin reads, and validated with the plugin's own
// validation.
func versioned[T runtime.Object](install func(*runtime.Scheme), validate func(T) error) check {
	scheme := runtime.NewScheme()
	install(scheme)
	codecs := serializer.NewCodecFactory(scheme, serializer.EnableStrict)
	want := sync.OnceValue(func() string { return wantKinds[T](scheme) })
	return func(_ string, data []byte) error {
		obj, err := runtime.Decode(codecs.UniversalDecoder(), data)
		switch {
		case runtime.IsMissingKind(err) || runtime.IsMissingVersion(err):
			return fmt.Errorf("apiVersion and kind are required; want %s", want())
		case runtime.IsNotRegisteredError(err):
			return fmt.Errorf("%s is not a configuration of this plugin; want %s", typeMeta(data), want())
		case err != nil:
			return fmt.Errorf("%w (want %s)", err, want())
		}
		c, ok := obj.(T)
		if !ok {
			return fmt.Errorf("%s is not a configuration of this plugin; want %s", typeMeta(data), want())
		}
		return validate(c)
	}
}

// wantKinds lists the versioned kinds in scheme that convert to T.
func wantKinds[T runtime.Object](scheme *runtime.Scheme) string {
	var want []string
	target := reflect.TypeFor[T]().Elem()
	for gvk, typ := range scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || strings.HasPrefix(typ.PkgPath(), "k8s.io/apimachinery/") {
			continue
		}
		obj, ok := reflect.New(typ).Interface().(runtime.Object)
		if !ok {
			continue
		}
		into := reflect.New(target).Interface()
		if scheme.Convert(obj, into, nil) == nil {
			want = append(want, fmt.Sprintf("apiVersion %s, kind %s", gvk.GroupVersion(), gvk.Kind))
		}
	}
	slices.Sort(want)
	return strings.Join(want, "; or ")
}

func validateEventRateLimit(c *eventratelimitapi.Configuration) error {
	return eventratelimitvalidation.ValidateConfiguration(c).ToAggregate()
}

func validateResourceQuota(c *resourcequotaapi.Configuration) error {
	return resourcequotavalidation.ValidateConfiguration(c).ToAggregate()
}

// validatePodSecurity is what the plugin checks when it starts
// (ValidateConfiguration of k8s.io/pod-security-admission/admission).
func validatePodSecurity(c *podsecurityapi.PodSecurityConfiguration) error {
	if errs := podsecurityvalidation.ValidatePodSecurityConfiguration(c); len(errs) != 0 {
		return errs.ToAggregate()
	}
	_, err := podsecurityapi.ToPolicy(c.Defaults)
	return err
}

// checkWebhook refuses what the webhook plugins refuse when they start:
// upstream's own LoadConfig (a relative kubeConfigFile, staticManifestsDir,
// and whatever a release adds, as v1.38's staticOrder, with the feature
// gates the flags set), after our strict decoding, and the kubeconfig,
// loaded as the plugin loads it.
func checkWebhook(file string, data []byte) error {
	if err := decodeWebhook(file, data); err != nil {
		return err
	}
	_, err := webhookconfig.LoadConfig(bytes.NewReader(data))
	return err
}

var decodeWebhook = versioned(webhookinstall.Install, validateKubeconfig)

// validateKubeconfig loads a webhook configuration's kubeconfig, when its
// path is absolute (LoadConfig refuses a relative one), as the plugin does
// when it starts.
func validateKubeconfig(c *webhookadmission.WebhookAdmission) error {
	if c.KubeConfigFile == "" || !path.IsAbs(c.KubeConfigFile) {
		return nil
	}
	p := field.NewPath("kubeConfigFile")
	if _, err := readFile(c.KubeConfigFile); err != nil {
		return field.Invalid(p, c.KubeConfigFile, err.Error())
	}
	if _, err := webhookutil.NewDefaultAuthenticationInfoResolver(c.KubeConfigFile); err != nil {
		return field.Invalid(p, c.KubeConfigFile, err.Error())
	}
	return nil
}

// validatePolicy is upstream's rule for the admission policy plugins.
func validatePolicy[T interface {
	runtime.Object
	GetStaticManifestsDir() string
}](c T) error {
	return manifest.ValidateStaticManifestsDir(c.GetStaticManifestsDir())
}
