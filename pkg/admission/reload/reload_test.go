// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package reload

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/apis/apiserver"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/plugin/pkg/admission/eventratelimit"
)

// A stand-in for a plugin that cannot be reloaded: it admits everything and
// counts its instances.
type webhook struct{ *admission.Handler }

func (webhook) Validate(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	return nil
}

const webhookName = "ValidatingAdmissionWebhook"

// harness is a chain of EventRateLimit (upstream's, reloadable) and a
// stand-in webhook (not reloadable), built from a configuration file through
// upstream's registry code, and its controller.
type harness struct {
	dir, file, erl string
	chain          *Chain
	handler        admission.Interface
	controller     *Controller
}

func newHarness(t testing.TB, erlConfig string) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{dir: dir, file: filepath.Join(dir, "admission.yaml"), erl: filepath.Join(dir, "erl.yaml"), chain: &Chain{}}
	write(t, h.erl, erlConfig)
	write(t, filepath.Join(dir, "webhook.yaml"), webhookConfig(""))
	write(t, h.file, "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"+
		"  - name: EventRateLimit\n    path: erl.yaml\n  - name: "+webhookName+"\n    path: webhook.yaml\n")
	plugins := admission.NewPlugins()
	eventratelimit.Register(plugins)
	plugins.Register(webhookName, func(io.Reader) (admission.Interface, error) {
		return webhook{admission.NewHandler(admission.Create)}, nil
	})
	names := []string{"EventRateLimit", webhookName}
	provider, err := admission.ReadAdmissionConfiguration(names, h.file, configScheme(t))
	if err != nil {
		t.Fatal(err)
	}
	noInit := admission.PluginInitializers{}
	if h.handler, err = plugins.NewFromPlugins(names, provider, noInit, admission.Decorators{h.chain.Decorator()}); err != nil {
		t.Fatal(err)
	}
	h.controller = &Controller{Chain: h.chain, File: h.file, Plugins: plugins, Registered: []string{"EventRateLimit", webhookName}, Enabled: names, Initializer: noInit}
	if err := h.controller.Start(); err != nil {
		t.Fatal(err)
	}
	return h
}

// configScheme reads AdmissionConfiguration as upstream's loader does.
func configScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{apiserver.AddToScheme, apiserverv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

func erlConfig(qps, burst int) string {
	return fmt.Sprintf("apiVersion: eventratelimit.admission.k8s.io/v1alpha1\nkind: Configuration\nlimits:\n- type: Server\n  qps: %d\n  burst: %d\n", qps, burst)
}

func webhookConfig(kubeconfig string) string {
	s := "apiVersion: apiserver.config.k8s.io/v1\nkind: WebhookAdmissionConfiguration\n"
	if kubeconfig != "" {
		s += "kubeConfigFile: " + kubeconfig + "\n"
	}
	return s
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// admitted counts how many of n events the chain admits.
func (h *harness) admitted(n int) int {
	ok := 0
	for range n {
		a := admission.NewAttributesRecord(&api.Event{}, nil, api.Kind("Event").WithVersion("v1"), "ns", "e", api.Resource("events").WithVersion("v1"), "", admission.Create, nil, false, nil)
		if h.handler.(admission.ValidationInterface).Validate(context.Background(), a, nil) == nil {
			ok++
		}
	}
	return ok
}

func TestReload(t *testing.T) {
	h := newHarness(t, erlConfig(1000, 1000))
	if got := h.admitted(20); got != 20 {
		t.Fatalf("%d of 20 events admitted under a burst of 1000", got)
	}
	if tried, err := h.controller.Check(); tried || err != nil {
		t.Fatalf("Check with nothing changed: tried %v, %v", tried, err)
	}
	hash := h.controller.Status().Hash

	// Lowered: in force at once, with a new bucket.
	write(t, h.erl, erlConfig(1, 2))
	if tried, err := h.controller.Check(); !tried || err != nil {
		t.Fatalf("Check after lowering: tried %v, %v", tried, err)
	}
	if got := h.admitted(5); got != 2 {
		t.Errorf("%d of 5 events admitted under a burst of 2", got)
	}
	status := h.controller.Status()
	if status.Hash == hash || status.LastError != nil || status.LastReload.IsZero() || status.Sources["EventRateLimit"] != "path "+h.erl {
		t.Errorf("status after a reload: %+v", status)
	}

	// Broken: refused, naming file, plugin and field; the old limit stays.
	write(t, h.erl, erlConfig(-1, 2))
	tried, err := h.controller.Check()
	if !tried || err == nil || !strings.Contains(err.Error(), "plugin EventRateLimit (path "+h.erl+"): limits[0].qps: Invalid value: -1") {
		t.Fatalf("Check of a broken file: tried %v, %v", tried, err)
	}
	if tried, _ := h.controller.Check(); tried {
		t.Error("the same broken file was tried twice")
	}
	if got := h.admitted(3); got != 0 {
		t.Errorf("%d of 3 events admitted after a refused reload: the old, empty bucket is gone", got)
	}

	// A change a plugin cannot take: refused whole, even with a good change beside it.
	write(t, h.erl, erlConfig(1000, 1000))
	kubeconfig := filepath.Join(h.dir, "webhook.kubeconfig")
	write(t, kubeconfig, "apiVersion: v1\nkind: Config\n")
	write(t, filepath.Join(h.dir, "webhook.yaml"), webhookConfig(kubeconfig))
	if _, err := h.controller.Check(); err == nil || !strings.Contains(err.Error(), "plugin "+webhookName+": its configuration changed, and it cannot be reloaded") {
		t.Fatalf("Check with a non-reloadable change: %v", err)
	}
	if got := h.admitted(3); got != 0 {
		t.Errorf("%d of 3 events admitted: part of a refused reload was applied", got)
	}

	// Fixed: the next change applies.
	write(t, filepath.Join(h.dir, "webhook.yaml"), webhookConfig(""))
	if _, err := h.controller.Check(); err != nil {
		t.Fatal(err)
	}
	if got := h.admitted(20); got != 20 {
		t.Errorf("%d of 20 events admitted after the fix", got)
	}
}

// The kubelet updates a ConfigMap volume by swapping a symlink; a rename
// over the file and a write in place are seen as well.
// A file rewritten while a reload runs, between its validation and its
// application: the reload applies the bytes it validated, and the next look
// sees the rewrite as a change of its own, which validation refuses here. A
// reload that read the files again after validating them would apply a
// configuration nobody checked: a burst of 7 and a misspelt field.
func TestReloadAppliesWhatItValidated(t *testing.T) {
	h := newHarness(t, erlConfig(1000, 1000))
	validated := erlConfig(1, 2)
	write(t, h.erl, validated)
	h.controller.validated = func() { write(t, h.erl, erlConfig(1, 7)+"limts: []\n") }
	if tried, err := h.controller.Check(); !tried || err != nil {
		t.Fatalf("Check: tried %v, %v", tried, err)
	}
	h.controller.validated = nil
	if got := string(h.controller.Status().Configs["EventRateLimit"]); got != validated {
		t.Errorf("configuration in force:\n%s\nwant the one validated:\n%s", got, validated)
	}
	if got := h.admitted(10); got != 2 {
		t.Errorf("%d of 10 events admitted, want the validated burst of 2", got)
	}
	tried, err := h.controller.Check()
	if !tried || err == nil || !strings.Contains(err.Error(), `unknown field "limts"`) {
		t.Errorf("Check after the rewrite: tried %v, %v; want the rewrite refused for its unknown field", tried, err)
	}
	if got := string(h.controller.Status().Configs["EventRateLimit"]); got != validated {
		t.Errorf("configuration in force after the refused rewrite:\n%s", got)
	}
}

func TestReloadSeesEveryWayOfReplacingAFile(t *testing.T) {
	h := newHarness(t, erlConfig(1000, 1000))
	burst := 1
	next := func() string { burst++; return erlConfig(1, burst) }
	for name, replace := range map[string]func(){
		"in place": func() { write(t, h.erl, next()) },
		"rename over": func() {
			tmp := h.erl + ".tmp"
			write(t, tmp, next())
			if err := os.Rename(tmp, h.erl); err != nil {
				t.Fatal(err)
			}
		},
		"symlink swap": func() {
			target := filepath.Join(h.dir, fmt.Sprintf("..data-%d", burst))
			write(t, target, next())
			tmp := h.erl + ".link"
			if err := os.Symlink(target, tmp); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, h.erl); err != nil {
				t.Fatal(err)
			}
		},
	} {
		replace()
		if tried, err := h.controller.Check(); !tried || err != nil {
			t.Errorf("%s: tried %v, %v", name, tried, err)
		}
		if got := h.admitted(burst + 3); got != burst {
			t.Errorf("%s: %d events admitted, want the new burst %d", name, got, burst)
		}
	}
}

// The slot keeps the plugin's kind, and Plugins records the chain in order.
func TestChainRecordsThePlugins(t *testing.T) {
	h := newHarness(t, erlConfig(10, 10))
	got := h.chain.Plugins()
	want := []Plugin{{Name: "EventRateLimit", Validating: true}, {Name: webhookName, Validating: true}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Plugins() = %+v, want %+v", got, want)
	}
	if _, ok := h.handler.(admission.MutationInterface); !ok {
		t.Skip("upstream's chain is no longer a mutation interface")
	}
}

// Run reloads by itself within the interval, and stops with its context.
func TestRun(t *testing.T) {
	h := newHarness(t, erlConfig(1000, 1000))
	h.controller.Interval = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.controller.Run(ctx); close(done) }()
	write(t, h.erl, erlConfig(1, 1))
	deadline := time.Now().Add(5 * time.Second)
	for h.admitted(3) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the change was not applied within 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
}

// Random bytes as the new file, top-level or a plugin's, never panic, and
// the chain keeps answering.
func FuzzReload(f *testing.F) {
	f.Add([]byte(erlConfig(5, 5)), false)
	f.Add([]byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EventRateLimit\n  path: erl.yaml\n"), true)
	f.Add([]byte("plugins:\n- {}\n- name: EventRateLimit\n  path: /dev/zero\n"), true)
	f.Add([]byte("{"), false)
	f.Add([]byte(""), true)
	f.Fuzz(func(t *testing.T, data []byte, topLevel bool) {
		h := newHarness(t, erlConfig(1000, 1000))
		target := h.erl
		if topLevel {
			target = h.file
		}
		if err := os.WriteFile(target, data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, _ = h.controller.Check()
		h.admitted(2)
		_ = h.controller.Status()
	})
}

// A reload that changes the configuration of ten plugins: nine reloadable
// ones and one that stays. The acceptance bound is 100 ms.
func BenchmarkReloadTenPlugins(b *testing.B) {
	h := newTenPluginHarness(b)
	b.ReportAllocs()
	i := 1 // the harness starts at version 1
	for b.Loop() {
		i++
		h.change(b, i)
		if tried, err := h.controller.Check(); !tried || err != nil {
			b.Fatalf("reload %d: tried %v, %v", i, tried, err)
		}
	}
}

// The descriptors say which plugins reload; this is the list users are
// told (docs/admission-config.md), kept apart from them so that a flag
// flipped in one descriptor shows.
func TestReloadableFromDescriptors(t *testing.T) {
	want := []string{
		"DenyEscalatingExec", "DenyExecOnPrivileged", "EventRateLimit", "ImagePolicyWebhook", "PersistentVolumeLabel",
		"PodNodeSelector", "PodSecurity", "PodSecurityPolicy", "PodTolerationRestriction", "SecurityContextDeny",
	}
	if got := sets.List(Reloadable); !slices.Equal(got, want) {
		t.Errorf("reloadable plugins:\n got: %v\nwant: %v", got, want)
	}
}
