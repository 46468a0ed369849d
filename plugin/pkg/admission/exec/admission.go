// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package exec restores the DenyEscalatingExec and DenyExecOnPrivileged
// admission plugins that upstream removed in v1.21. Both deny exec and
// attach into pods with more privilege than a user who may exec should
// reach; DenyExecOnPrivileged looks at privileged containers only. Options
// extend the same judgement to port-forward and to the kubelet's streaming
// endpoints reached through nodes/proxy, which upstream never saw.
//
// Upstream fetched the pod with a live GET on every request. We read it from
// the shared informer and fall back to one live GET when the informer has
// not seen the pod, or the container the request names, yet.
package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	api "k8s.io/kubernetes/pkg/apis/core"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"

	"github.com/turnstile-k8s/turnstile/pkg/admission/descriptor"
	"github.com/turnstile-k8s/turnstile/pkg/admission/pluginconfig"
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/exec/apis/v1alpha1"
)

const (
	// DenyEscalatingExec denies exec and attach into pods that use the
	// host's network, PID or IPC namespace, or run a privileged container.
	DenyEscalatingExec = "DenyEscalatingExec"
	// DenyExecOnPrivileged denies exec and attach into pods that run a
	// privileged container.
	DenyExecOnPrivileged = "DenyExecOnPrivileged"
)

// config is both plugins' configuration kind.
var config = pluginconfig.NewKind[v1alpha1.ExecConfiguration](v1alpha1.SchemeGroupVersion, v1alpha1.Validate)

// Register adds both plugins to a registry.
func Register(plugins *admission.Plugins) {
	for _, d := range Descriptors {
		d.Register(plugins)
	}
}

// Descriptors is how Turnstile wires the two plugins
// (pkg/admission/descriptor): where upstream last ran them, their
// configuration's check, reloadable.
var Descriptors = []descriptor.Plugin{describe(DenyEscalatingExec), describe(DenyExecOnPrivileged)}

func describe(name string) descriptor.Plugin {
	return descriptor.Plugin{
		Name:       name,
		Register:   func(plugins *admission.Plugins) { plugins.Register(name, factory(name)) },
		After:      "PodTolerationRestriction",
		Check:      config.Check,
		Reloadable: true,
	}
}

// checks are what each plugin denies on.
var checks = map[string]Checks{
	DenyEscalatingExec:   {HostNetwork: true, HostPID: true, HostIPC: true, Privileged: true},
	DenyExecOnPrivileged: {Privileged: true},
}

func factory(name string) admission.Factory {
	return func(r io.Reader) (admission.Interface, error) {
		c, err := config.Load(name, r)
		if err != nil {
			return nil, err
		}
		klog.InfoS("Admission plugin is deprecated upstream (removed in v1.21); a policy-based admission replaces it",
			"plugin", name, "perContainer", c.PerContainer, "treatHostProcessAsPrivileged", c.TreatHostProcessAsPrivileged,
			"coverPortForward", c.CoverPortForward, "coverNodeProxy", c.CoverNodeProxy, "requirePodSecurityLevel", c.RequirePodSecurityLevel)
		return New(name, *c), nil
	}
}

// Checks says which pod properties deny an exec or attach.
type Checks struct {
	HostNetwork, HostPID, HostIPC, Privileged bool
}

// Plugin is the admission plugin behind both names.
type Plugin struct {
	*admission.Handler
	name   string
	checks Checks
	config v1alpha1.ExecConfiguration
	// level is RequirePodSecurityLevel's, judged by evaluator; none when
	// it is empty.
	level  *psaapi.LevelVersion
	pods   corev1listers.PodLister
	client kubernetes.Interface
}

// evaluator is Pod Security Admission's, with its checks; it holds no
// state of a request.
var evaluator = sync.OnceValues(func() (psapolicy.Evaluator, error) {
	return psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
})

var (
	_ admission.ValidationInterface                                = &Plugin{}
	_ genericadmissioninitializer.WantsExternalKubeInformerFactory = &Plugin{}
	_ genericadmissioninitializer.WantsExternalKubeClientSet       = &Plugin{}
)

// New returns the plugin registered as name (DenyEscalatingExec or
// DenyExecOnPrivileged), configured by c.
func New(name string, c v1alpha1.ExecConfiguration) *Plugin {
	p := &Plugin{Handler: admission.NewHandler(admission.Connect), name: name, checks: checks[name], config: c}
	if c.RequirePodSecurityLevel != "" {
		p.level = &psaapi.LevelVersion{Level: psaapi.Level(c.RequirePodSecurityLevel), Version: psaapi.LatestVersion()}
	}
	return p
}

// SetExternalKubeInformerFactory wires the pod lister. The plugin does not
// wait for it to sync: until it has, misses fall back to a live GET.
func (p *Plugin) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	p.pods = f.Core().V1().Pods().Lister()
}

// SetExternalKubeClientSet wires the client for lister misses.
func (p *Plugin) SetExternalKubeClientSet(c kubernetes.Interface) { p.client = c }

// ValidateInitialization checks that the lister and client were wired.
func (p *Plugin) ValidateInitialization() error {
	switch {
	case p.pods == nil:
		return errors.New("missing pod lister")
	case p.client == nil:
		return errors.New("missing client")
	}
	return nil
}

// Validate denies exec and attach into a pod that fails the checks, and,
// as configured, port-forward and the same through nodes/proxy.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	r, ok := p.request(a)
	if !ok {
		return nil
	}
	pod, err := p.pod(ctx, r.namespace, r.pod, r.container)
	if err != nil {
		return admission.NewForbidden(a, r.refusal(p.name, err.Error()))
	}
	if what := p.deny(pod, r.container); what != "" {
		return admission.NewForbidden(a, r.refusal(p.name, "cannot "+r.action+" "+what))
	}
	if p.level != nil {
		e, err := evaluator()
		if err != nil {
			return admission.NewForbidden(a, r.refusal(p.name, err.Error()))
		}
		if result := psapolicy.AggregateCheckResults(e.EvaluatePod(*p.level, &pod.ObjectMeta, &pod.Spec)); !result.Allowed {
			// Not a check of upstream's: the plugin is named even for exec.
			return admission.NewForbidden(a, r.named(p.name, fmt.Sprintf("cannot %s a pod that fails the Pod Security Standards %s level: %s",
				r.action, p.level.Level, result.ForbiddenDetail())))
		}
	}
	return nil
}

// request is what a connect request asks of a pod.
type request struct {
	namespace, pod, container string
	action                    string // "exec into or attach to", "port-forward to"
	via                       string // "" for the pod's own subresources, or "nodes/proxy"
}

const (
	execOrAttach = "exec into or attach to"
	portForward  = "port-forward to"
	proxyTo      = "proxy to"
)

// request returns the pod request a judges, if the plugin judges it:
// pods/exec and pods/attach always; pods/portforward and pods/proxy with
// coverPortForward (to a pod on the host's network, either reaches the
// node's ports); the kubelet's streaming endpoints through nodes/proxy
// with coverNodeProxy.
func (p *Plugin) request(a admission.Attributes) (request, bool) {
	switch gr, sub := a.GetResource().GroupResource(), a.GetSubresource(); {
	case gr == api.Resource("pods") && (sub == "exec" || sub == "attach"):
		return request{namespace: a.GetNamespace(), pod: a.GetName(), container: targetContainer(a.GetObject()), action: execOrAttach}, true
	case gr == api.Resource("pods") && sub == "portforward" && p.config.CoverPortForward:
		return request{namespace: a.GetNamespace(), pod: a.GetName(), action: portForward}, true
	case gr == api.Resource("pods") && sub == "proxy" && p.config.CoverPortForward:
		// The name is [scheme:]pod[:port], as the apiserver reads it.
		_, pod, _, valid := utilnet.SplitSchemeNamePort(a.GetName())
		if !valid {
			return request{}, false
		}
		return request{namespace: a.GetNamespace(), pod: pod, action: proxyTo}, true
	case gr == api.Resource("nodes") && sub == "proxy" && p.config.CoverNodeProxy:
		opts, ok := a.GetObject().(*api.NodeProxyOptions)
		if !ok {
			return request{}, false
		}
		r, ok := kubeletStream(opts.Path)
		if !ok || r.action == portForward && !p.config.CoverPortForward {
			return request{}, false
		}
		return r, true
	}
	return request{}, false
}

// kubeletStream reads a nodes/proxy path the way the kubelet routes it
// (pkg/kubelet/server): /exec, /attach, /run and /checkpoint (an archive
// of the container's memory and files, which tells as much as a shell)
// take /{namespace}/{pod}[/{uid}]/{container}, /portForward
// /{namespace}/{pod}[/{uid}]. The apiserver cleans the path before it
// proxies it (net.JoinPreservingTrailingSlash), so it is judged cleaned. A
// path that names a pod but not in a shape the kubelet routes is judged on
// the whole pod rather than let through.
func kubeletStream(proxyPath string) (request, bool) {
	parts := strings.Split(strings.TrimPrefix(path.Clean("/"+proxyPath), "/"), "/")
	if len(parts) < 3 {
		return request{}, false
	}
	r := request{namespace: parts[1], pod: parts[2], action: execOrAttach, via: "nodes/proxy"}
	switch parts[0] {
	case "exec", "attach", "run", "checkpoint":
		if len(parts) == 4 || len(parts) == 5 {
			r.container = parts[len(parts)-1]
		}
	case "portForward":
		r.action = portForward
	default:
		return request{}, false
	}
	return r, true
}

// refusal is the reason given for refusing r: upstream's own words for
// pods/exec and pods/attach; for the paths upstream did not judge, the
// plugin's name first (so the user knows which option refused it) and, for
// nodes/proxy, the pod.
func (r request) refusal(plugin, reason string) error {
	if r.via == "" && r.action == execOrAttach {
		return errors.New(reason)
	}
	return r.named(plugin, reason)
}

// named is reason with the plugin's name first and, for nodes/proxy, the
// pod.
func (r request) named(plugin, reason string) error {
	if r.via != "" {
		return fmt.Errorf("%s: %s (pod %s/%s, through %s)", plugin, reason, r.namespace, r.pod, r.via)
	}
	return fmt.Errorf("%s: %s", plugin, reason)
}

// pod returns the pod from the informer, or with one live GET when the
// informer does not have it yet or has not yet seen the target container
// (kubectl debug attaches to an ephemeral container right after adding it).
func (p *Plugin) pod(ctx context.Context, namespace, name, target string) (*corev1.Pod, error) {
	pod, err := p.pods.Pods(namespace).Get(name)
	switch {
	case err == nil && (target == "" || hasContainer(pod, target)):
		return pod, nil
	case err != nil && !apierrors.IsNotFound(err):
		return nil, err
	}
	return p.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

// deny returns what about the pod denies the request ("a privileged
// container"), or "" to admit. The checks run in upstream's order and the
// first that matches wins.
func (p *Plugin) deny(pod *corev1.Pod, target string) string {
	switch {
	case p.checks.HostNetwork && pod.Spec.HostNetwork:
		return "a container using host network"
	case p.checks.HostPID && pod.Spec.HostPID:
		return "a container using host pid"
	case p.checks.HostIPC && pod.Spec.HostIPC:
		return "a container using host ipc"
	case p.checks.Privileged && p.privileged(pod, target):
		return "a privileged container"
	}
	return ""
}

// privileged reports whether the pod, or with perContainer the target
// container, runs privileged. Upstream judged the whole pod: init, regular
// and ephemeral containers.
func (p *Plugin) privileged(pod *corev1.Pod, target string) bool {
	if p.config.PerContainer {
		if target == "" && len(pod.Spec.Containers) == 1 {
			target = pod.Spec.Containers[0].Name // the apiserver's own default
		}
		if target != "" {
			found, privileged := false, false
			visitContainers(pod, func(name string, sc *corev1.SecurityContext) {
				if name == target {
					found, privileged = true, p.privilegedContainer(pod, sc)
				}
			})
			if found {
				return privileged
			}
		}
	}
	anyPrivileged := false
	visitContainers(pod, func(_ string, sc *corev1.SecurityContext) {
		anyPrivileged = anyPrivileged || p.privilegedContainer(pod, sc)
	})
	return anyPrivileged
}

func (p *Plugin) privilegedContainer(pod *corev1.Pod, sc *corev1.SecurityContext) bool {
	if sc != nil && sc.Privileged != nil && *sc.Privileged {
		return true
	}
	if !p.config.TreatHostProcessAsPrivileged {
		return false
	}
	if sc != nil && sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil {
		return *sc.WindowsOptions.HostProcess
	}
	psc := pod.Spec.SecurityContext
	return psc != nil && psc.WindowsOptions != nil && psc.WindowsOptions.HostProcess != nil && *psc.WindowsOptions.HostProcess
}

func visitContainers(pod *corev1.Pod, visit func(name string, sc *corev1.SecurityContext)) {
	for i := range pod.Spec.InitContainers {
		visit(pod.Spec.InitContainers[i].Name, pod.Spec.InitContainers[i].SecurityContext)
	}
	for i := range pod.Spec.Containers {
		visit(pod.Spec.Containers[i].Name, pod.Spec.Containers[i].SecurityContext)
	}
	for i := range pod.Spec.EphemeralContainers {
		visit(pod.Spec.EphemeralContainers[i].Name, pod.Spec.EphemeralContainers[i].SecurityContext)
	}
}

func hasContainer(pod *corev1.Pod, name string) bool {
	found := false
	visitContainers(pod, func(n string, _ *corev1.SecurityContext) { found = found || n == name })
	return found
}

// targetContainer is the container an exec or attach names, if any.
func targetContainer(obj runtime.Object) string {
	switch o := obj.(type) {
	case *api.PodExecOptions:
		return o.Container
	case *api.PodAttachOptions:
		return o.Container
	}
	return ""
}
