// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package exec

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	restful "github.com/emicklei/go-restful/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/kubernetes/fake"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/exec/apis/v1alpha1"
)

var (
	escalating = DenyEscalatingExec
	privileged = DenyExecOnPrivileged
)

func plainPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "a", Image: "i"},
			{Name: "b", Image: "i"},
		}},
	}
}

func with(change func(*corev1.Pod)) *corev1.Pod {
	p := plainPod()
	change(p)
	return p
}

func privilegedFirst(p *corev1.Pod) {
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
}

// newPlugin returns a plugin whose lister holds cached and whose client
// serves live, and the client to count its calls.
func newPlugin(checks string, c v1alpha1.ExecConfiguration, cached, live []*corev1.Pod) (*Plugin, *fake.Clientset) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range cached {
		_ = indexer.Add(p)
	}
	var objs []runtime.Object
	for _, p := range live {
		objs = append(objs, p)
	}
	client := fake.NewClientset(objs...)
	plugin := New(checks, c)
	plugin.pods = corev1listers.NewPodLister(indexer)
	plugin.client = client
	return plugin, client
}

func connect(subresource, container string) admission.Attributes {
	var obj runtime.Object = &api.PodExecOptions{Container: container, Command: []string{"sh"}}
	switch subresource {
	case "attach":
		obj = &api.PodAttachOptions{Container: container}
	case "portforward":
		obj = &api.PodPortForwardOptions{Ports: []int32{8080}}
	}
	return admission.NewAttributesRecord(obj, nil, api.Kind("Pod").WithVersion("version"), "ns", "p",
		api.Resource("pods").WithVersion("version"), subresource, admission.Connect, nil, false, nil)
}

// nodeProxy is a CONNECT of nodes/proxy on node n1 with the proxied path.
func nodeProxy(path string) admission.Attributes {
	return admission.NewAttributesRecord(&api.NodeProxyOptions{Path: path}, nil, api.Kind("Node").WithVersion("version"), "", "n1",
		api.Resource("nodes").WithVersion("version"), "proxy", admission.Connect, nil, false, nil)
}

// podProxy is a CONNECT of pods/proxy on name ([scheme:]pod[:port]).
func podProxy(name string) admission.Attributes {
	return admission.NewAttributesRecord(&api.PodProxyOptions{Path: "/healthz"}, nil, api.Kind("Pod").WithVersion("version"), "ns", name,
		api.Resource("pods").WithVersion("version"), "proxy", admission.Connect, nil, false, nil)
}

// intoInitContainers moves every container into initContainers: the second
// pass of each spec case.
func intoInitContainers(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.Spec.InitContainers, p.Spec.Containers = p.Spec.Containers, nil
	return p
}

// The cases of the upstream documentation of DenyEscalatingExec and
// DenyExecOnPrivileged (docs/restored-controllers.md says what they do).
func TestSpecCases(t *testing.T) {
	tests := []struct {
		name        string
		checks      string
		pod         *corev1.Pod
		subresource string // empty: exec and attach
		wantErr     string // "" admits
	}{
		{name: "1 privileged", checks: escalating, pod: with(privilegedFirst),
			wantErr: `pods "p" is forbidden: cannot exec into or attach to a privileged container`},
		{name: "2 hostPID", checks: escalating, pod: with(func(p *corev1.Pod) { p.Spec.HostPID = true }),
			wantErr: `pods "p" is forbidden: cannot exec into or attach to a container using host pid`},
		{name: "3 hostIPC", checks: escalating, pod: with(func(p *corev1.Pod) { p.Spec.HostIPC = true }),
			wantErr: `pods "p" is forbidden: cannot exec into or attach to a container using host ipc`},
		{name: "4 hostNetwork", checks: escalating, pod: with(func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
			wantErr: `pods "p" is forbidden: cannot exec into or attach to a container using host network`},
		{name: "5 plain pod", checks: escalating, pod: plainPod()},
		{name: "6 privileged, DenyExecOnPrivileged", checks: privileged, pod: with(privilegedFirst),
			wantErr: `pods "p" is forbidden: cannot exec into or attach to a privileged container`},
		{name: "7 hostPID, DenyExecOnPrivileged", checks: privileged, pod: with(func(p *corev1.Pod) { p.Spec.HostPID = true })},
		{name: "8 hostIPC, DenyExecOnPrivileged", checks: privileged, pod: with(func(p *corev1.Pod) { p.Spec.HostIPC = true })},
		{name: "9 hostNetwork, DenyExecOnPrivileged", checks: privileged, pod: with(func(p *corev1.Pod) { p.Spec.HostNetwork = true })},
		{name: "10 plain pod, DenyExecOnPrivileged", checks: privileged, pod: plainPod()},
		{name: "11 no checks (a plugin of no name)", checks: "", pod: with(func(p *corev1.Pod) {
			privilegedFirst(p)
			p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true
		})},
		{name: "12 privileged ephemeral container", checks: escalating, pod: with(privilegedEphemeral),
			wantErr: "cannot exec into or attach to a privileged container"},
		{name: "12 privileged ephemeral container, DenyExecOnPrivileged", checks: privileged, pod: with(privilegedEphemeral),
			wantErr: "cannot exec into or attach to a privileged container"},
		{name: "13 privileged false", checks: escalating, pod: with(func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(false)}
		})},
		{name: "15 portforward is ignored", checks: escalating, pod: with(privilegedFirst), subresource: "portforward"},
		{name: "proxy is ignored", checks: escalating, pod: with(privilegedFirst), subresource: "proxy"},
		{name: "16 host network is checked first", checks: escalating, pod: with(func(p *corev1.Pod) {
			privilegedFirst(p)
			p.Spec.HostNetwork = true
		}), wantErr: "cannot exec into or attach to a container using host network"},
		{name: "host pid before host ipc", checks: escalating, pod: with(func(p *corev1.Pod) { p.Spec.HostPID, p.Spec.HostIPC = true, true }),
			wantErr: "using host pid"},
		{name: "per pod: a plain target in a privileged pod", checks: escalating, pod: with(privilegedFirst), subresource: "exec-into-b",
			wantErr: "cannot exec into or attach to a privileged container"},
	}
	for _, pass := range []string{"containers", "initContainers"} {
		for _, tt := range tests {
			subresources := []string{"exec", "attach"}
			if tt.subresource != "" {
				subresources = []string{tt.subresource}
			}
			for _, sub := range subresources {
				t.Run(pass+"/"+sub+"/"+tt.name, func(t *testing.T) {
					pod := tt.pod
					if pass == "initContainers" {
						pod = intoInitContainers(pod)
					}
					container := ""
					if sub == "exec-into-b" {
						sub, container = "exec", "b"
					}
					plugin, client := newPlugin(tt.checks, v1alpha1.ExecConfiguration{}, []*corev1.Pod{pod}, []*corev1.Pod{pod})
					err := plugin.Validate(context.Background(), connect(sub, container), nil)
					checkErr(t, err, tt.wantErr)
					if tt.wantErr != "" && !apierrors.IsForbidden(err) {
						t.Errorf("%v is not Forbidden", err)
					}
					if n := len(client.Actions()); n != 0 {
						t.Errorf("made %d API calls although the lister had the pod: %v", n, client.Actions())
					}
				})
			}
		}
	}
}

func privilegedEphemeral(p *corev1.Pod) {
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
	}}}
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

// Spec case 14, and the lister-miss path: the informer has not seen a pod
// created a moment ago, or a container added a moment ago.
func TestLiveGETWhenTheListerMisses(t *testing.T) {
	privilegedPod := with(privilegedFirst)
	stale := plainPod()
	debugged := with(privilegedEphemeral)
	tests := []struct {
		name         string
		cached, live []*corev1.Pod
		container    string
		wantErr      string
		wantGETs     int
	}{
		{name: "14 pod found nowhere", wantGETs: 1, wantErr: `pods "p" is forbidden: pods "p" not found`},
		{name: "fresh privileged pod is denied", live: []*corev1.Pod{privilegedPod}, wantGETs: 1,
			wantErr: "cannot exec into or attach to a privileged container"},
		{name: "fresh plain pod is admitted", live: []*corev1.Pod{plainPod()}, wantGETs: 1},
		{name: "target container the informer has not seen", cached: []*corev1.Pod{stale}, live: []*corev1.Pod{debugged},
			container: "debugger", wantGETs: 1, wantErr: "cannot exec into or attach to a privileged container"},
		{name: "target container the informer has", cached: []*corev1.Pod{debugged}, live: []*corev1.Pod{debugged},
			container: "debugger", wantErr: "cannot exec into or attach to a privileged container"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plugin, client := newPlugin(escalating, v1alpha1.ExecConfiguration{}, tt.cached, tt.live)
			checkErr(t, plugin.Validate(context.Background(), connect("attach", tt.container), nil), tt.wantErr)
			if n := len(client.Actions()); n != tt.wantGETs {
				t.Errorf("made %d API calls, want %d: %v", n, tt.wantGETs, client.Actions())
			}
		})
	}
}

func TestPerContainer(t *testing.T) {
	pod := with(privilegedFirst) // a is privileged, b is not
	hostPID := with(func(p *corev1.Pod) { privilegedFirst(p); p.Spec.HostPID = true })
	single := with(func(p *corev1.Pod) { p.Spec.Containers = p.Spec.Containers[1:] })
	tests := []struct {
		name      string
		pod       *corev1.Pod
		container string
		wantErr   string
	}{
		{name: "plain target in a privileged pod is reached", pod: pod, container: "b"},
		{name: "privileged target", pod: pod, container: "a", wantErr: "privileged container"},
		{name: "no target among several: the whole pod is judged", pod: pod, wantErr: "privileged container"},
		{name: "no target, one plain container", pod: single},
		{name: "unknown target: the whole pod is judged", pod: pod, container: "zzz", wantErr: "privileged container"},
		{name: "host namespaces stay pod-wide", pod: hostPID, container: "b", wantErr: "using host pid"},
		{name: "privileged ephemeral target", pod: with(privilegedEphemeral), container: "debugger", wantErr: "privileged container"},
		{name: "plain target beside a privileged ephemeral container", pod: with(privilegedEphemeral), container: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plugin, _ := newPlugin(escalating, v1alpha1.ExecConfiguration{PerContainer: true}, []*corev1.Pod{tt.pod}, []*corev1.Pod{tt.pod})
			checkErr(t, plugin.Validate(context.Background(), connect("exec", tt.container), nil), tt.wantErr)
		})
	}
	// Without the option the historic per-pod decision stands.
	plugin, _ := newPlugin(escalating, v1alpha1.ExecConfiguration{}, []*corev1.Pod{pod}, nil)
	checkErr(t, plugin.Validate(context.Background(), connect("exec", "b"), nil), "privileged container")
}

func TestTreatHostProcessAsPrivileged(t *testing.T) {
	hostProcess := func(v bool) *corev1.WindowsSecurityContextOptions {
		return &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(v)}
	}
	containerHP := with(func(p *corev1.Pod) {
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{WindowsOptions: hostProcess(true)}
	})
	podHP := with(func(p *corev1.Pod) {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: hostProcess(true)}
	})
	overridden := with(func(p *corev1.Pod) {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: hostProcess(true)}
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].SecurityContext = &corev1.SecurityContext{WindowsOptions: hostProcess(false)}
		}
	})
	tests := []struct {
		name    string
		pod     *corev1.Pod
		on      bool
		wantErr string
	}{
		{name: "historic: a hostProcess container is not privileged", pod: containerHP},
		{name: "historic: a hostProcess pod is not privileged", pod: podHP},
		{name: "container hostProcess", pod: containerHP, on: true, wantErr: "privileged container"},
		{name: "pod hostProcess", pod: podHP, on: true, wantErr: "privileged container"},
		{name: "containers opt out of the pod's hostProcess", pod: overridden, on: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plugin, _ := newPlugin(privileged, v1alpha1.ExecConfiguration{TreatHostProcessAsPrivileged: tt.on}, []*corev1.Pod{tt.pod}, nil)
			checkErr(t, plugin.Validate(context.Background(), connect("exec", ""), nil), tt.wantErr)
		})
	}
}

// coverPortForward judges port-forward like exec; coverNodeProxy judges the
// kubelet's streaming endpoints through nodes/proxy, in every shape the
// kubelet routes and the apiserver forwards; without the options both
// paths stay open, as upstream left them.
func TestCoverPortForwardAndNodeProxy(t *testing.T) {
	hostNetwork := with(func(p *corev1.Pod) { p.Spec.HostNetwork = true })
	both := v1alpha1.ExecConfiguration{CoverPortForward: true, CoverNodeProxy: true}
	tests := []struct {
		name    string
		plugin  string
		config  v1alpha1.ExecConfiguration
		pod     *corev1.Pod
		a       admission.Attributes
		wantErr string // "" admits
	}{
		{name: "port-forward, historic", plugin: escalating, pod: hostNetwork, a: connect("portforward", "")},
		{name: "port-forward to a host network pod", plugin: escalating, config: both, pod: hostNetwork, a: connect("portforward", ""),
			wantErr: `pods "p" is forbidden: DenyEscalatingExec: cannot port-forward to a container using host network`},
		{name: "port-forward to a plain pod", plugin: escalating, config: both, pod: plainPod(), a: connect("portforward", "")},
		{name: "port-forward to a privileged pod, DenyExecOnPrivileged", plugin: privileged, config: both, pod: with(privilegedFirst),
			a: connect("portforward", ""), wantErr: "DenyExecOnPrivileged: cannot port-forward to a privileged container"},
		{name: "port-forward to a host network pod, DenyExecOnPrivileged", plugin: privileged, config: both, pod: hostNetwork, a: connect("portforward", "")},
		{name: "exec keeps upstream's message", plugin: escalating, config: both, pod: hostNetwork, a: connect("exec", ""),
			wantErr: `pods "p" is forbidden: cannot exec into or attach to a container using host network`},

		{name: "nodes/proxy exec, historic", plugin: escalating, pod: with(privilegedFirst), a: nodeProxy("exec/ns/p/a")},
		{name: "nodes/proxy exec", plugin: escalating, config: both, pod: with(privilegedFirst), a: nodeProxy("exec/ns/p/a"),
			wantErr: `nodes "n1" is forbidden: DenyEscalatingExec: cannot exec into or attach to a privileged container (pod ns/p, through nodes/proxy)`},
		{name: "nodes/proxy exec with the pod's uid", plugin: escalating, config: both, pod: with(privilegedFirst), a: nodeProxy("exec/ns/p/0000-uid/a"),
			wantErr: "privileged container (pod ns/p, through nodes/proxy)"},
		{name: "nodes/proxy attach", plugin: escalating, config: both, pod: hostNetwork, a: nodeProxy("/attach/ns/p/a"),
			wantErr: "cannot exec into or attach to a container using host network"},
		{name: "nodes/proxy run", plugin: privileged, config: both, pod: with(privilegedFirst), a: nodeProxy("run/ns/p/b"),
			wantErr: "DenyExecOnPrivileged: cannot exec into or attach to a privileged container"},
		{name: "nodes/proxy path the apiserver cleans", plugin: escalating, config: both, pod: with(privilegedFirst), a: nodeProxy("metrics/../exec//ns/./p/a/"),
			wantErr: "privileged container (pod ns/p, through nodes/proxy)"},
		{name: "nodes/proxy exec in a shape the kubelet does not route: the whole pod", plugin: escalating, config: both, pod: with(privilegedFirst),
			a: nodeProxy("exec/ns/p/x/y/z"), wantErr: "privileged container"},
		{name: "nodes/proxy exec into a plain pod", plugin: escalating, config: both, pod: plainPod(), a: nodeProxy("exec/ns/p/a")},
		{name: "nodes/proxy portForward needs coverPortForward", plugin: escalating, config: v1alpha1.ExecConfiguration{CoverNodeProxy: true},
			pod: hostNetwork, a: nodeProxy("portForward/ns/p")},
		{name: "nodes/proxy portForward", plugin: escalating, config: both, pod: hostNetwork, a: nodeProxy("portForward/ns/p"),
			wantErr: "DenyEscalatingExec: cannot port-forward to a container using host network (pod ns/p, through nodes/proxy)"},
		{name: "nodes/proxy checkpoint, judged as an exec", plugin: escalating, config: both, pod: with(privilegedFirst), a: nodeProxy("checkpoint/ns/p/a"),
			wantErr: "DenyEscalatingExec: cannot exec into or attach to a privileged container (pod ns/p, through nodes/proxy)"},
		{name: "nodes/proxy other endpoints", plugin: escalating, config: both, pod: with(privilegedFirst), a: nodeProxy("containerLogs/ns/p/a")},

		{name: "pods/proxy, historic", plugin: escalating, pod: hostNetwork, a: podProxy("https:p:10250")},
		{name: "pods/proxy to a host network pod", plugin: escalating, config: both, pod: hostNetwork, a: podProxy("https:p:10250"),
			wantErr: `pods "https:p:10250" is forbidden: DenyEscalatingExec: cannot proxy to a container using host network`},
		{name: "pods/proxy by the pod's name alone", plugin: escalating, config: both, pod: hostNetwork, a: podProxy("p"),
			wantErr: "cannot proxy to a container using host network"},
		{name: "pods/proxy to a plain pod", plugin: escalating, config: both, pod: plainPod(), a: podProxy("p:8080")},
		{name: "nodes/proxy too short to name a pod", plugin: escalating, config: both, pod: with(privilegedFirst), a: nodeProxy("exec/ns")},
		{name: "nodes/proxy perContainer reaches a plain container", plugin: escalating,
			config: v1alpha1.ExecConfiguration{CoverNodeProxy: true, PerContainer: true}, pod: with(privilegedFirst), a: nodeProxy("exec/ns/p/b")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plugin, client := newPlugin(tt.plugin, tt.config, []*corev1.Pod{tt.pod}, nil)
			err := plugin.Validate(context.Background(), tt.a, nil)
			checkErr(t, err, tt.wantErr)
			if tt.wantErr != "" && !apierrors.IsForbidden(err) {
				t.Errorf("%v is not Forbidden", err)
			}
			if n := len(client.Actions()); n != 0 {
				t.Errorf("made %d API calls although the lister had the pod: %v", n, client.Actions())
			}
		})
	}
	// A pod the path names that exists nowhere is refused, naming it.
	plugin, _ := newPlugin(escalating, both, nil, nil)
	checkErr(t, plugin.Validate(context.Background(), nodeProxy("exec/ns/p/a"), nil),
		`nodes "n1" is forbidden: DenyEscalatingExec: pods "p" not found (pod ns/p, through nodes/proxy)`)
}

// Spec case 17.
func TestHandles(t *testing.T) {
	p := New(escalating, v1alpha1.ExecConfiguration{})
	for op, want := range map[admission.Operation]bool{
		admission.Connect: true, admission.Create: false, admission.Update: false, admission.Delete: false,
	} {
		if got := p.Handles(op); got != want {
			t.Errorf("Handles(%s) = %v, want %v", op, got, want)
		}
	}
}

func TestValidateInitialization(t *testing.T) {
	p := New(escalating, v1alpha1.ExecConfiguration{})
	if err := p.ValidateInitialization(); err == nil || !strings.Contains(err.Error(), "missing pod lister") {
		t.Errorf("without a lister: %v", err)
	}
	wired, _ := newPlugin(escalating, v1alpha1.ExecConfiguration{}, nil, nil)
	if err := wired.ValidateInitialization(); err != nil {
		t.Errorf("wired: %v", err)
	}
	wired.client = nil
	if err := wired.ValidateInitialization(); err == nil || !strings.Contains(err.Error(), "missing client") {
		t.Errorf("without a client: %v", err)
	}
}

func TestConfiguration(t *testing.T) {
	const header = "apiVersion: exec.admission.turnstile.dev/v1alpha1\nkind: ExecConfiguration\n"
	tests := []struct {
		name, config, wantErr string
		want                  v1alpha1.ExecConfiguration
	}{
		{name: "all", config: header + "perContainer: true\ntreatHostProcessAsPrivileged: true\ncoverPortForward: true\ncoverNodeProxy: true\n",
			want: v1alpha1.ExecConfiguration{PerContainer: true, TreatHostProcessAsPrivileged: true, CoverPortForward: true, CoverNodeProxy: true}},
		{name: "none", config: header},
		{name: "a Pod Security Standards level", config: header + "requirePodSecurityLevel: baseline\n",
			want: v1alpha1.ExecConfiguration{RequirePodSecurityLevel: "baseline"}},
		{name: "no such level", config: header + "requirePodSecurityLevel: privileged\n",
			wantErr: `DenyEscalatingExec: requirePodSecurityLevel: Unsupported value: "privileged": supported values: "baseline", "restricted"`},
		{name: "unknown field", config: header + "perContainers: true\n",
			wantErr: `DenyEscalatingExec: invalid configuration (want apiVersion exec.admission.turnstile.dev/v1alpha1, kind ExecConfiguration): strict decoding error: unknown field "perContainers"`},
		{name: "other group", config: "apiVersion: securitycontextdeny.admission.turnstile.dev/v1alpha1\nkind: ExecConfiguration\n",
			wantErr: "DenyEscalatingExec: invalid configuration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := factory(DenyEscalatingExec)(strings.NewReader(tt.config))
			checkErr(t, err, tt.wantErr)
			if err == nil {
				got := got.(*Plugin).config
				got.TypeMeta = metav1.TypeMeta{}
				if got != tt.want {
					t.Errorf("config = %+v, want %+v", got, tt.want)
				}
			}
		})
	}
}

// The example users copy decodes and turns every option on.
func TestExampleConfiguration(t *testing.T) {
	f, err := os.Open("../../../../examples/admission/exec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := factory(DenyExecOnPrivileged)(f)
	if err != nil {
		t.Fatal(err)
	}
	if c := got.(*Plugin).config; !c.PerContainer || !c.TreatHostProcessAsPrivileged || !c.CoverPortForward || !c.CoverNodeProxy || c.RequirePodSecurityLevel != "baseline" {
		t.Errorf("example: %+v", c)
	}
}

// requirePodSecurityLevel refuses what the plugin judges into a pod that
// fails the level, naming upstream's failing checks: a pod is the node's
// when it mounts the node's root or its runtime's socket, or holds
// CAP_SYS_ADMIN, privileged or not.
func TestRequirePodSecurityLevel(t *testing.T) {
	baseline := v1alpha1.ExecConfiguration{RequirePodSecurityLevel: "baseline", CoverPortForward: true, CoverNodeProxy: true}
	hostPath := func(path string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}})
		}
	}
	sysAdmin := func(p *corev1.Pod) {
		p.Spec.Containers[1].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}
	}
	restrictedOnly := func(p *corev1.Pod) {
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}
	}
	tests := []struct {
		name    string
		plugin  string
		config  v1alpha1.ExecConfiguration
		pod     *corev1.Pod
		a       admission.Attributes
		wantErr string
	}{
		{name: "hostPath /, off: as upstream", plugin: privileged, pod: with(hostPath("/")), a: connect("exec", "a")},
		{name: "hostPath /", plugin: privileged, config: baseline, pod: with(hostPath("/")), a: connect("exec", "a"),
			wantErr: `pods "p" is forbidden: DenyExecOnPrivileged: cannot exec into or attach to a pod that fails the Pod Security Standards baseline level: hostPath volumes (volume "host")`},
		{name: "the containerd socket", plugin: escalating, config: baseline, pod: with(hostPath("/run/containerd/containerd.sock")), a: connect("attach", ""),
			wantErr: `DenyEscalatingExec: cannot exec into or attach to a pod that fails the Pod Security Standards baseline level: hostPath volumes (volume "host")`},
		{name: "CAP_SYS_ADMIN", plugin: privileged, config: baseline, pod: with(sysAdmin), a: connect("exec", "a"),
			wantErr: `DenyExecOnPrivileged: cannot exec into or attach to a pod that fails the Pod Security Standards baseline level: non-default capabilities (container "b" must not include "SYS_ADMIN" in securityContext.capabilities.add)`},
		{name: "port-forward", plugin: escalating, config: baseline, pod: with(sysAdmin), a: connect("portforward", ""),
			wantErr: `DenyEscalatingExec: cannot port-forward to a pod that fails the Pod Security Standards baseline level: non-default capabilities`},
		{name: "nodes/proxy", plugin: escalating, config: baseline, pod: with(hostPath("/")), a: nodeProxy("exec/ns/p/a"),
			wantErr: `DenyEscalatingExec: cannot exec into or attach to a pod that fails the Pod Security Standards baseline level: hostPath volumes (volume "host") (pod ns/p, through nodes/proxy)`},
		{name: "a plain pod meets baseline", plugin: escalating, config: baseline, pod: plainPod(), a: connect("exec", "a")},
		{name: "root meets baseline", plugin: escalating, config: baseline, pod: with(restrictedOnly), a: connect("exec", "a")},
		{name: "root fails restricted", plugin: escalating, config: v1alpha1.ExecConfiguration{RequirePodSecurityLevel: "restricted"}, pod: with(restrictedOnly), a: connect("exec", "a"),
			wantErr: "fails the Pod Security Standards restricted level: allowPrivilegeEscalation != false"},
		{name: "the plugin's own check comes first", plugin: escalating, config: baseline, pod: with(privilegedFirst), a: connect("exec", "a"),
			wantErr: `pods "p" is forbidden: cannot exec into or attach to a privileged container`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plugin, _ := newPlugin(tt.plugin, tt.config, []*corev1.Pod{tt.pod}, nil)
			checkErr(t, plugin.Validate(context.Background(), tt.a, nil), tt.wantErr)
		})
	}
}

// A nodes/proxy path with encoded characters is judged on the pod the
// kubelet would route it to. The request's path is decoded as the
// apiserver decodes it (net/url), joined onto the kubelet's URL as its
// nodes/proxy joins it (upstream's JoinPreservingTrailingSlash), sent, and
// routed by go-restful, the kubelet's router, with the kubelet's route
// templates; the plugin must name the same pod, or refuse.
func TestNodeProxyPathsAsTheKubeletRoutesThem(t *testing.T) {
	// The kubelet's routes of the streaming endpoints (pkg/kubelet/server).
	kubelet := restful.NewContainer()
	routed := map[string]string{}
	ws := new(restful.WebService)
	for _, endpoint := range []string{"exec", "attach", "run", "checkpoint"} {
		for _, template := range []string{"/{podNamespace}/{podID}/{containerName}", "/{podNamespace}/{podID}/{uid}/{containerName}"} {
			ws.Route(ws.POST("/" + endpoint + template).To(func(req *restful.Request, _ *restful.Response) {
				routed["pod"] = req.PathParameter("podNamespace") + "/" + req.PathParameter("podID")
			}))
		}
	}
	kubelet.Add(ws)
	for _, tc := range []struct {
		requestPath string // after /api/v1/nodes/n1/proxy/, as sent
		// pod is what the kubelet routes to, "" for nothing.
		pod string
	}{
		{"exec/ns/p/a", "ns/p"},
		{"exec%2Fns%2Fp%2Fa", "ns/p"},
		{"exec/ns/p%2Fa", "ns/p"},
		{"%2e%2e/exec/ns/p/a", "ns/p"},
		{"x/%2e%2e/exec/ns/p/a", "ns/p"},
		{"exec/ns/x/%2e%2e/p/a", "ns/p"},
		{"exec/ns/p%3Fx=y/a", "ns/p?x=y"},
		{"exec/ns/p/a%3Fcommand=id", "ns/p"},
		{"run/ns/p/uid/a", "ns/p"},
		{"checkpoint/ns/p/a", "ns/p"},
	} {
		t.Run(tc.requestPath, func(t *testing.T) {
			u, err := url.Parse("https://apiserver/api/v1/nodes/n1/proxy/" + tc.requestPath)
			if err != nil {
				t.Fatal(err)
			}
			proxied := strings.TrimPrefix(u.Path, "/api/v1/nodes/n1/proxy/")
			forwarded := url.URL{Scheme: "https", Host: "n1:10250", Path: utilnet.JoinPreservingTrailingSlash("/", proxied)}
			clear(routed)
			rec := httptest.NewRecorder()
			kubelet.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, forwarded.String(), nil))
			if routed["pod"] != tc.pod {
				t.Fatalf("the kubelet routes %s to pod %q, want %q", forwarded.String(), routed["pod"], tc.pod)
			}
			r, judged := kubeletStream(proxied)
			if got := r.namespace + "/" + r.pod; !judged || got != tc.pod {
				t.Errorf("the plugin judges %q as pod %q (judged %t), the kubelet routes it to %q", proxied, got, judged, tc.pod)
			}
		})
	}
}
