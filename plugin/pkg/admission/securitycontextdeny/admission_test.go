// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package securitycontextdeny

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/securitycontextdeny/apis/v1alpha1"
)

// placement moves a test pod's container into initContainers, so every spec
// case runs a second time there.
type placement func(*api.Pod)

var placements = map[string]placement{
	"containers": func(*api.Pod) {},
	"initContainers": func(p *api.Pod) {
		p.Spec.InitContainers, p.Spec.Containers = p.Spec.Containers, nil
	},
}

func pod(podSC *api.PodSecurityContext, containerSC *api.SecurityContext) *api.Pod {
	return &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: api.PodSpec{
			SecurityContext: podSC,
			Containers:      []api.Container{{Name: "c", Image: "i", SecurityContext: containerSC}},
		},
	}
}

func attrs(obj runtime.Object, resource, subresource string, op admission.Operation) admission.Attributes {
	return update(obj, nil, resource, subresource, op)
}

func update(obj, old runtime.Object, resource, subresource string, op admission.Operation) admission.Attributes {
	return admission.NewAttributesRecord(obj, old, api.Kind("Pod").WithVersion("version"), "ns", "p",
		api.Resource(resource).WithVersion("version"), subresource, op, nil, false, nil)
}

// The cases of SecurityContextDeny's upstream documentation
// (docs/restored-controllers.md says what it refuses).
func TestSpecCases(t *testing.T) {
	tests := []struct {
		name        string
		pod         *api.Pod
		resource    string
		subresource string
		op          admission.Operation
		wantErr     string // "" admits
	}{
		{name: "1 no security contexts", pod: pod(nil, nil)},
		{name: "2 empty container SC", pod: pod(nil, &api.SecurityContext{})},
		{name: "3 empty pod SC", pod: pod(&api.PodSecurityContext{}, nil)},
		{name: "4 privileged and capabilities are not checked",
			pod: pod(nil, &api.SecurityContext{Privileged: ptr.To(true), Capabilities: &api.Capabilities{}})},
		{name: "5 container runAsUser", pod: pod(nil, &api.SecurityContext{RunAsUser: ptr.To[int64](1)}),
			wantErr: `pods "p" is forbidden: SecurityContext.RunAsUser is forbidden`},
		{name: "6 container empty seLinuxOptions", pod: pod(nil, &api.SecurityContext{SELinuxOptions: &api.SELinuxOptions{}}),
			wantErr: `pods "p" is forbidden: SecurityContext.SELinuxOptions is forbidden`},
		{name: "7 pod runAsUser", pod: pod(&api.PodSecurityContext{RunAsUser: ptr.To[int64](1)}, nil),
			wantErr: `pods "p" is forbidden: pod.Spec.SecurityContext.RunAsUser is forbidden`},
		{name: "8 pod empty seLinuxOptions", pod: pod(&api.PodSecurityContext{SELinuxOptions: &api.SELinuxOptions{}}, nil),
			wantErr: `pods "p" is forbidden: pod.Spec.SecurityContext.SELinuxOptions is forbidden`},
		{name: "9 pod supplementalGroups", pod: pod(&api.PodSecurityContext{SupplementalGroups: []int64{1234}}, nil),
			wantErr: `pods "p" is forbidden: pod.Spec.SecurityContext.SupplementalGroups is forbidden`},
		{name: "9b pod supplementalGroups empty but set", pod: pod(&api.PodSecurityContext{SupplementalGroups: []int64{}}, nil),
			wantErr: `pod.Spec.SecurityContext.SupplementalGroups is forbidden`},
		{name: "10 pod fsGroup", pod: pod(&api.PodSecurityContext{FSGroup: ptr.To[int64](1001)}, nil),
			wantErr: `pods "p" is forbidden: pod.Spec.SecurityContext.FSGroup is forbidden`},
		{name: "11 runAsGroup is not checked",
			pod: pod(&api.PodSecurityContext{RunAsGroup: ptr.To[int64](5)}, &api.SecurityContext{RunAsGroup: ptr.To[int64](5)})},
		{name: "12 ephemeral container on UPDATE is not checked", pod: withEphemeral(pod(nil, nil), ptr.To[int64](0)), op: admission.Update},
		{name: "12b ephemeralcontainers subresource is ignored", pod: withEphemeral(pod(nil, nil), ptr.To[int64](0)),
			subresource: "ephemeralcontainers", op: admission.Update},
		{name: "13 status subresource is ignored", pod: pod(&api.PodSecurityContext{RunAsUser: ptr.To[int64](1)}, nil), subresource: "status"},
		{name: "14 other resources are ignored", pod: pod(&api.PodSecurityContext{RunAsUser: ptr.To[int64](1)}, nil), resource: "configmaps"},
		{name: "17 first rule wins",
			pod:     pod(&api.PodSecurityContext{SupplementalGroups: []int64{1}, RunAsUser: ptr.To[int64](1)}, nil),
			wantErr: "pod.Spec.SecurityContext.SupplementalGroups is forbidden"},
		{name: "pod rules come before container rules",
			pod:     pod(&api.PodSecurityContext{FSGroup: ptr.To[int64](1)}, &api.SecurityContext{RunAsUser: ptr.To[int64](1)}),
			wantErr: "pod.Spec.SecurityContext.FSGroup is forbidden"},
		{name: "seLinuxOptions before runAsUser in a container",
			pod:     pod(nil, &api.SecurityContext{RunAsUser: ptr.To[int64](1), SELinuxOptions: &api.SELinuxOptions{}}),
			wantErr: "SecurityContext.SELinuxOptions is forbidden"},
		{name: "UPDATE is checked too", pod: pod(&api.PodSecurityContext{RunAsUser: ptr.To[int64](1)}, nil), op: admission.Update,
			wantErr: "pod.Spec.SecurityContext.RunAsUser is forbidden"},
		{name: "generateName pod has no name in the message", pod: unnamed(pod(&api.PodSecurityContext{RunAsUser: ptr.To[int64](1)}, nil)),
			wantErr: "pods is forbidden: pod.Spec.SecurityContext.RunAsUser is forbidden"},
	}
	for where, place := range placements {
		for _, tt := range tests {
			t.Run(where+"/"+tt.name, func(t *testing.T) {
				place(tt.pod)
				resource, op := tt.resource, tt.op
				if resource == "" {
					resource = "pods"
				}
				if op == "" {
					op = admission.Create
				}
				err := New(v1alpha1.SecurityContextDenyConfiguration{}).Validate(context.Background(), attrs(tt.pod, resource, tt.subresource, op), nil)
				checkErr(t, err, tt.wantErr)
				if tt.wantErr != "" && !apierrors.IsForbidden(err) {
					t.Errorf("error %v is not Forbidden", err)
				}
			})
		}
	}
}

func withEphemeral(p *api.Pod, runAsUser *int64) *api.Pod {
	p.Spec.EphemeralContainers = []api.EphemeralContainer{{EphemeralContainerCommon: api.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox", SecurityContext: &api.SecurityContext{RunAsUser: runAsUser},
	}}}
	return p
}

func unnamed(p *api.Pod) *api.Pod {
	p.Name, p.GenerateName = "", "p-"
	return p
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("got %v, want admitted", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("got %v, want an error containing %q", err, want)
	}
}

// Spec case 15.
func TestHandles(t *testing.T) {
	p := New(v1alpha1.SecurityContextDenyConfiguration{})
	for op, want := range map[admission.Operation]bool{
		admission.Create: true, admission.Update: true, admission.Delete: false, admission.Connect: false,
	} {
		if got := p.Handles(op); got != want {
			t.Errorf("Handles(%s) = %v, want %v", op, got, want)
		}
	}
}

// Spec case 16.
func TestWrongObjectIsBadRequest(t *testing.T) {
	err := New(v1alpha1.SecurityContextDenyConfiguration{}).Validate(context.Background(),
		attrs(&api.Service{}, "pods", "", admission.Create), nil)
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "Resource was marked with kind Pod but was unable to be converted") {
		t.Errorf("got %v, want BadRequest", err)
	}
}

// coverEphemeralContainers closes the gap that cases 12 and 12b document.
func TestCoverEphemeralContainers(t *testing.T) {
	cover := New(v1alpha1.SecurityContextDenyConfiguration{CoverEphemeralContainers: true})
	tests := []struct {
		name        string
		pod         *api.Pod
		subresource string
		wantErr     string
	}{
		{name: "forbidden ephemeral container in the spec", pod: withEphemeral(pod(nil, nil), ptr.To[int64](0)),
			wantErr: `pods "p" is forbidden: ephemeral container "debugger": SecurityContext.RunAsUser is forbidden`},
		{name: "forbidden ephemeral container added through the subresource", pod: withEphemeral(pod(nil, nil), ptr.To[int64](0)),
			subresource: "ephemeralcontainers", wantErr: `ephemeral container "debugger": SecurityContext.RunAsUser is forbidden`},
		{name: "compliant ephemeral container", pod: withEphemeral(pod(nil, nil), nil), subresource: "ephemeralcontainers"},
		{name: "the subresource checks only ephemeral containers",
			pod: withEphemeral(pod(&api.PodSecurityContext{FSGroup: ptr.To[int64](1)}, nil), nil), subresource: "ephemeralcontainers"},
		{name: "the main resource still checks everything",
			pod: withEphemeral(pod(&api.PodSecurityContext{FSGroup: ptr.To[int64](1)}, nil), nil), wantErr: "FSGroup is forbidden"},
		{name: "status stays ignored", pod: withEphemeral(pod(nil, nil), ptr.To[int64](0)), subresource: "status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, cover.Validate(context.Background(), attrs(tt.pod, "pods", tt.subresource, admission.Update), nil), tt.wantErr)
		})
	}
}

// An ephemeral container the pod already has was judged when it came, or
// came before coverEphemeralContainers was on: only the containers an
// update adds are judged, so a root debug container admitted earlier does
// not refuse the next, compliant one, or a label change.
func TestCoverEphemeralContainersJudgesOnlyNewOnes(t *testing.T) {
	cover := New(v1alpha1.SecurityContextDenyConfiguration{CoverEphemeralContainers: true})
	debugged := func(containers ...api.EphemeralContainer) *api.Pod {
		p := pod(nil, nil)
		p.Spec.EphemeralContainers = containers
		return p
	}
	ephemeral := func(name string, runAsUser *int64) api.EphemeralContainer {
		return api.EphemeralContainer{EphemeralContainerCommon: api.EphemeralContainerCommon{
			Name: name, Image: "busybox", SecurityContext: &api.SecurityContext{RunAsUser: runAsUser}}}
	}
	root, plain, root2 := ephemeral("root", ptr.To[int64](0)), ephemeral("plain", nil), ephemeral("root-2", ptr.To[int64](0))
	labelled := debugged(root)
	labelled.Labels = map[string]string{"team": "a"}
	tests := []struct {
		name        string
		old, pod    *api.Pod
		subresource string
		wantErr     string
	}{
		{name: "a compliant one beside a root one admitted earlier", old: debugged(root), pod: debugged(root, plain),
			subresource: "ephemeralcontainers"},
		{name: "a second root one", old: debugged(root), pod: debugged(root, root2), subresource: "ephemeralcontainers",
			wantErr: `ephemeral container "root-2": SecurityContext.RunAsUser is forbidden`},
		{name: "a label change of a pod with a root one", old: debugged(root), pod: labelled},
		{name: "no old object: every one is judged", pod: debugged(root, plain), subresource: "ephemeralcontainers",
			wantErr: `ephemeral container "root": SecurityContext.RunAsUser is forbidden`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var old runtime.Object
			if tt.old != nil {
				old = tt.old
			}
			checkErr(t, cover.Validate(context.Background(), update(tt.pod, old, "pods", tt.subresource, admission.Update), nil), tt.wantErr)
		})
	}
}

func TestConfiguration(t *testing.T) {
	plugins := admission.NewPlugins()
	Register(plugins)
	tests := []struct {
		name, config, wantErr string
		wantCover             bool
	}{
		{name: "on", config: "apiVersion: securitycontextdeny.admission.turnstile.dev/v1alpha1\nkind: SecurityContextDenyConfiguration\ncoverEphemeralContainers: true\n", wantCover: true},
		{name: "explicitly off", config: "apiVersion: securitycontextdeny.admission.turnstile.dev/v1alpha1\nkind: SecurityContextDenyConfiguration\n"},
		{name: "json", config: `{"apiVersion":"securitycontextdeny.admission.turnstile.dev/v1alpha1","kind":"SecurityContextDenyConfiguration","coverEphemeralContainers":true}`, wantCover: true},
		{name: "unknown field", config: "apiVersion: securitycontextdeny.admission.turnstile.dev/v1alpha1\nkind: SecurityContextDenyConfiguration\ncoverEphemeral: true\n",
			wantErr: `SecurityContextDeny: invalid configuration (want apiVersion securitycontextdeny.admission.turnstile.dev/v1alpha1, kind SecurityContextDenyConfiguration): strict decoding error: unknown field "coverEphemeral"`},
		{name: "duplicate field", config: "apiVersion: securitycontextdeny.admission.turnstile.dev/v1alpha1\nkind: SecurityContextDenyConfiguration\ncoverEphemeralContainers: true\ncoverEphemeralContainers: false\n",
			wantErr: `"coverEphemeralContainers" already set in map`},
		{name: "wrong type", config: "apiVersion: securitycontextdeny.admission.turnstile.dev/v1alpha1\nkind: SecurityContextDenyConfiguration\ncoverEphemeralContainers: yes please\n",
			wantErr: "SecurityContextDeny: invalid configuration"},
		{name: "wrong kind", config: "apiVersion: securitycontextdeny.admission.turnstile.dev/v1alpha1\nkind: Configuration\n",
			wantErr: `no kind "Configuration" is registered`},
		{name: "no kind", config: "coverEphemeralContainers: true\n", wantErr: "Object 'Kind' is missing"},
		{name: "empty", config: "\n", wantErr: "SecurityContextDeny: its configuration is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := plugins.NewFromPlugins([]string{PluginName}, configFor(tt.config), admission.PluginInitializers{}, nil)
			checkErr(t, err, tt.wantErr)
			if err != nil {
				return
			}
			// The chain wraps the plugin; decide through it.
			verr := p.(admission.ValidationInterface).Validate(context.Background(),
				attrs(withEphemeral(pod(nil, nil), ptr.To[int64](0)), "pods", "", admission.Update), nil)
			if covered := verr != nil; covered != tt.wantCover {
				t.Errorf("coverEphemeralContainers in effect = %v, want %v", covered, tt.wantCover)
			}
		})
	}
	if _, err := plugins.NewFromPlugins([]string{PluginName}, configFor(""), admission.PluginInitializers{}, nil); err != nil {
		t.Errorf("no configuration entry: %v", err)
	}
}

// configFor gives the plugin its config the way the apiserver does.
type configFor string

func (c configFor) ConfigFor(string) (io.Reader, error) {
	if c == "" {
		return nil, nil
	}
	return strings.NewReader(string(c)), nil
}

// The example users copy decodes and turns the option on.
func TestExampleConfiguration(t *testing.T) {
	f, err := os.Open("../../../../examples/admission/securitycontextdeny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if c, err := config.Load(PluginName, f); err != nil || !c.CoverEphemeralContainers {
		t.Errorf("example: %+v, %v", c, err)
	}
}
