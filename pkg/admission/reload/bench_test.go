// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package reload

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	turnstileadmission "github.com/turnstile-k8s/turnstile/pkg/admission"
)

// tenPlugins configures every reloadable plugin and ResourceQuota, which is
// configured but not enabled (its entry is checked all the same).
var tenPlugins = append(sortedReloadable(), "ResourceQuota")

func sortedReloadable() []string {
	names := Reloadable.UnsortedList()
	return names
}

// pluginConfig is plugin's configuration, version v.
func pluginConfig(dir, plugin string, v int) string {
	switch plugin {
	case "EventRateLimit":
		return erlConfig(v, v)
	case "ImagePolicyWebhook":
		return fmt.Sprintf("imagePolicy:\n  kubeConfigFile: %s\n  allowTTL: %d\n  denyTTL: 30\n  retryBackoff: 500\n  defaultAllow: true\n", filepath.Join(dir, "imagepolicy.kubeconfig"), 10+v)
	case "PodNodeSelector":
		return fmt.Sprintf("podNodeSelectorPluginConfig:\n  clusterDefaultNodeSelector: env=e%d\n", v)
	case "PodSecurity":
		return fmt.Sprintf("apiVersion: pod-security.admission.config.k8s.io/v1\nkind: PodSecurityConfiguration\ndefaults:\n  enforce: privileged\nexemptions:\n  usernames: [user-%d]\n", v)
	case "PodTolerationRestriction":
		return fmt.Sprintf("apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1\nkind: Configuration\nwhitelist:\n- key: k%d\n  operator: Exists\n", v)
	case "SecurityContextDeny":
		return fmt.Sprintf("apiVersion: securitycontextdeny.admission.turnstile.dev/v1alpha1\nkind: SecurityContextDenyConfiguration\ncoverEphemeralContainers: %v\n", v%2 == 0)
	case "DenyEscalatingExec", "DenyExecOnPrivileged":
		return fmt.Sprintf("apiVersion: exec.admission.turnstile.dev/v1alpha1\nkind: ExecConfiguration\nperContainer: %v\n", v%2 == 0)
	case "PersistentVolumeLabel":
		return fmt.Sprintf("apiVersion: persistentvolumelabel.admission.turnstile.dev/v1alpha1\nkind: PersistentVolumeLabelConfiguration\nrules:\n- name: rule-%d\n  match:\n    volumeType: gcePersistentDisk\n    idRegex: '^disk-'\n  zones: [zone-a]\n", v)
	case "PodSecurityPolicy":
		return fmt.Sprintf("apiVersion: podsecuritypolicy.admission.turnstile.dev/v1alpha1\nkind: PodSecurityPolicyConfiguration\nmode: %s\n", map[bool]string{true: "warn", false: "audit"}[v%2 == 0])
	case "ResourceQuota":
		return "apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\nlimitedResources:\n- resource: pods\n  matchContains: [requests.cpu]\n"
	}
	panic("no configuration for " + plugin)
}

type tenPluginHarness struct {
	dir        string
	controller *Controller
}

func (h *tenPluginHarness) change(t testing.TB, v int) {
	for _, p := range tenPlugins {
		write(t, filepath.Join(h.dir, p+".yaml"), pluginConfig(h.dir, p, v))
	}
}

func newTenPluginHarness(t testing.TB) *tenPluginHarness {
	t.Helper()
	h := &tenPluginHarness{dir: t.TempDir()}
	write(t, filepath.Join(h.dir, "imagepolicy.kubeconfig"), "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n"+
		"users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n")
	var entries strings.Builder
	for _, p := range tenPlugins {
		fmt.Fprintf(&entries, "  - name: %s\n    path: %s.yaml\n", p, p)
	}
	file := filepath.Join(h.dir, "admission.yaml")
	write(t, file, "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"+entries.String())
	h.change(t, 1)

	o := kubeoptions.NewAdmissionOptions()
	if err := turnstileadmission.Apply(o.GenericAdmission); err != nil {
		t.Fatal(err)
	}
	enabled := Reloadable.UnsortedList()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	init := initializer.New(client, dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{{Group: "policy", Version: "v1beta1", Resource: "podsecuritypolicies"}: "PodSecurityPolicyList"}), factory, authorizerfactory.NewAlwaysAllowAuthorizer(),
		utilfeature.DefaultFeatureGate, compatibility.DefaultBuildEffectiveVersion(), ctx.Done(), nil)
	provider, err := admission.ReadAdmissionConfiguration(enabled, file, configScheme(t))
	if err != nil {
		t.Fatal(err)
	}
	chain := &Chain{}
	if _, err := o.GenericAdmission.Plugins.NewFromPlugins(enabled, provider, init, admission.Decorators{chain.Decorator()}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	h.controller = &Controller{Chain: chain, File: file, Plugins: o.GenericAdmission.Plugins, Registered: o.GenericAdmission.Plugins.Registered(), Enabled: enabled, Initializer: init}
	if err := h.controller.Start(); err != nil {
		t.Fatal(err)
	}
	return h
}

// Every reloadable plugin's configuration changes at once and is applied.
func TestReloadEveryReloadablePlugin(t *testing.T) {
	h := newTenPluginHarness(t)
	before := h.controller.Status().Configs
	h.change(t, 2)
	if tried, err := h.controller.Check(); !tried || err != nil {
		t.Fatalf("tried %v, %v", tried, err)
	}
	after := h.controller.Status().Configs
	for _, p := range Reloadable.UnsortedList() {
		if string(before[p]) == string(after[p]) {
			t.Errorf("%s: configuration in force did not change", p)
		}
	}
	if got := len(*h.controller.Chain.current.Load()); got != Reloadable.Len() {
		t.Errorf("%d instances in force, want %d", got, Reloadable.Len())
	}
}
