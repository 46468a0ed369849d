// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/lineapi"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/apparmor"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/capabilities"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/errs"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/group"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/runtimeclass"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/seccomp"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/selinux"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/sysctl"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/user"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/volumes"
)

// Provider applies one PodSecurityPolicy. It is built once per policy
// version and is safe for concurrent use.
type Provider struct {
	// defaults and lenient come first, with the name: Mutates reads
	// defaults of every policy a requester may use, and validate skips
	// the lenient checks without reading their strategies, each a cache
	// miss in a loaded apiserver.
	defaults defaultedFields // the fields MutatePod may fill
	lenient  check           // the checks the policy cannot fail
	name     string
	spec     *policy.PodSecurityPolicySpec

	user                        *user.Strategy
	runAsGroup                  *group.Strategy // nil: any group
	fsGroup, supplementalGroups *group.Strategy
	seLinux                     *selinux.Strategy
	seccomp                     *seccomp.Strategy
	apparmor                    *apparmor.Strategy
	capabilities                *capabilities.Strategy
	sysctls                     *sysctl.Strategy
	volumes                     *volumes.Strategy
	runtimeClass                *runtimeclass.Strategy
	procMounts                  []api.ProcMountType
}

// NewProvider builds the provider of psp. It fails for policies the API
// accepts but that cannot be applied (a MustRunAs rule without ranges or
// options); the admission plugin skips those.
func NewProvider(psp *policy.PodSecurityPolicy) (*Provider, error) {
	spec := &psp.Spec
	p := &Provider{
		name:         psp.Name,
		spec:         spec,
		capabilities: capabilities.New(spec.DefaultAddCapabilities, spec.RequiredDropCapabilities, spec.AllowedCapabilities),
		sysctls:      sysctl.New(spec.AllowedUnsafeSysctls, spec.ForbiddenSysctls),
		volumes:      volumes.New(spec),
		runtimeClass: runtimeclass.New(spec.RuntimeClass),
		procMounts:   spec.AllowedProcMountTypes,
	}
	if len(p.procMounts) == 0 {
		p.procMounts = []api.ProcMountType{api.DefaultProcMount}
	}
	var err error
	if p.user, err = user.New(spec.RunAsUser); err != nil {
		return nil, err
	}
	if spec.RunAsGroup != nil {
		if p.runAsGroup, err = group.New(string(spec.RunAsGroup.Rule), spec.RunAsGroup.Ranges); err != nil {
			return nil, err
		}
	}
	if p.fsGroup, err = group.New(string(spec.FSGroup.Rule), spec.FSGroup.Ranges); err != nil {
		return nil, err
	}
	if p.supplementalGroups, err = group.New(string(spec.SupplementalGroups.Rule), spec.SupplementalGroups.Ranges); err != nil {
		return nil, err
	}
	if p.seLinux, err = selinux.New(spec.SELinux); err != nil {
		return nil, err
	}
	if p.seccomp, err = seccomp.New(psp.Annotations); err != nil {
		return nil, err
	}
	if p.apparmor, err = apparmor.New(psp.Annotations); err != nil {
		return nil, err
	}
	groupDefault := func(s *group.Strategy) bool { _, ok := s.Default(); return ok }
	_, userDefault := p.user.Default()
	for field, has := range map[defaultedFields]bool{
		supplementalGroupsField:       groupDefault(p.supplementalGroups),
		fsGroupField:                  groupDefault(p.fsGroup),
		seLinuxField:                  p.seLinux.HasDefault(),
		seccompField:                  p.seccomp.HasDefault(),
		runtimeClassField:             p.runtimeClass.Default() != nil,
		runAsUserField:                userDefault,
		runAsGroupField:               p.runAsGroup != nil && groupDefault(p.runAsGroup),
		appArmorField:                 p.apparmor.HasDefault(),
		runAsNonRootField:             p.user.RequiresNonRoot(),
		readOnlyRootFilesystemField:   spec.ReadOnlyRootFilesystem,
		allowPrivilegeEscalationField: p.allowPrivilegeEscalation() != nil,
		capabilitiesField:             p.capabilities.Defaults(),
	} {
		if has {
			p.defaults |= field
		}
	}
	for k, allowsAny := range map[check]bool{
		fsGroupCheck:                p.fsGroup.AllowsAny(),
		supplementalGroupsCheck:     p.supplementalGroups.AllowsAny(),
		seccompCheck:                p.seccomp.AllowsAny(),
		seLinuxCheck:                p.seLinux.AllowsAny(),
		hostNamespacesCheck:         spec.HostNetwork && spec.HostPID && spec.HostIPC,
		runtimeClassCheck:           p.runtimeClass.AllowsAny(),
		userCheck:                   p.user.AllowsAny(),
		runAsGroupCheck:             p.runAsGroup == nil || p.runAsGroup.AllowsAny(),
		appArmorCheck:               p.apparmor.AllowsAny(),
		capabilitiesCheck:           p.capabilities.AllowsAny(),
		privilegedCheck:             spec.Privileged,
		readOnlyRootFilesystemCheck: !spec.ReadOnlyRootFilesystem,
		privilegeEscalationCheck:    spec.AllowPrivilegeEscalation == nil || *spec.AllowPrivilegeEscalation,
	} {
		if allowsAny {
			p.lenient |= k
		}
	}
	return p, nil
}

// check is a check of validate that a policy can make impossible to fail
// (a RunAsAny rule, a wildcard), in the Provider's lenient set: validate
// skips those. A policy like the documentation's privileged one, which
// admins' and system pods are admitted by, then reads only the few rules
// that can still refuse a pod.
type check uint16

const (
	fsGroupCheck check = 1 << iota
	supplementalGroupsCheck
	seccompCheck // the pod's profile and each container's
	seLinuxCheck // the pod's options and each container's
	hostNamespacesCheck
	runtimeClassCheck
	userCheck
	runAsGroupCheck
	appArmorCheck
	capabilitiesCheck
	privilegedCheck
	readOnlyRootFilesystemCheck
	privilegeEscalationCheck // refused only where the policy sets allowPrivilegeEscalation false
)

// strict reports whether the check can fail under the policy.
func (p *Provider) strict(k check) bool { return p.lenient&k == 0 }

// Name is the policy's name.
func (p *Provider) Name() string { return p.name }

// Mutates reports whether MutatePod would change the subject's pod. It
// allocates nothing, so that a request can skip the copy for every policy
// that takes the pod as it is, and it answers from the policy's and the
// subject's defaultedFields without reading the strategies or the pod: a
// requester who may use many policies has Mutates asked of each, and in a
// loaded apiserver reading five strategies per policy was cache misses
// that cost more than the rest of the plugin. A policy without defaults
// needs none of the subject's unset fields, and only a policy that adds
// or drops capabilities looks at the containers.
// TestMutatesAgreesWithMutatePod holds the two to the same answer.
func (p *Provider) Mutates(s *Subject) bool {
	if s.copiesSeccompAnnotation() {
		return true
	}
	if p.defaults == 0 {
		return false
	}
	if p.defaults&s.unsetFields() != 0 {
		return true
	}
	if !s.linux || p.defaults&capabilitiesField == 0 {
		return false
	}
	containers := s.containers()
	for i := range containers {
		var caps *api.Capabilities
		if sc := containers[i].SecurityContext; sc != nil {
			caps = sc.Capabilities
		}
		if p.capabilities.Grows(caps) {
			return true
		}
	}
	return false
}

// MutatePod sets the defaults the policy gives to fields the pod leaves
// unset, in v1.24's order. Windows pods get none of the Linux-only
// defaults, since v1.36 refuses those fields on them. A default is copied
// (ptr.To) where it is written, not taken by address.
func (p *Provider) MutatePod(pod *api.Pod) {
	linux := !isWindows(pod)
	if linux {
		if psc := pod.Spec.SecurityContext; psc == nil || psc.SupplementalGroups == nil {
			if g, ok := p.supplementalGroups.Default(); ok {
				podSC(pod).SupplementalGroups = []int64{g}
			}
		}
		if psc := pod.Spec.SecurityContext; psc == nil || psc.FSGroup == nil {
			if g, ok := p.fsGroup.Default(); ok {
				podSC(pod).FSGroup = ptr.To(g)
			}
		}
		if psc := pod.Spec.SecurityContext; (psc == nil || psc.SELinuxOptions == nil) && p.seLinux.HasDefault() {
			podSC(pod).SELinuxOptions = p.seLinux.Default()
		}
		if f := seccomp.PodAnnotationField(pod); f != nil {
			podSC(pod).SeccompProfile = f
		} else if !seccomp.PodHasProfile(pod) && p.seccomp.HasDefault() {
			podSC(pod).SeccompProfile = p.seccomp.DefaultProfile()
		}
	}
	if pod.Spec.RuntimeClassName == nil {
		if rc := p.runtimeClass.Default(); rc != nil {
			pod.Spec.RuntimeClassName = rc
		}
	}
	p.mutateContainers(pod, linux)
}

// Mutated returns pod with the policy's defaults applied, leaving pod as it
// is. Only what MutatePod writes is copied (the security contexts and the
// container lists), so the result shares everything else with pod; callers
// must not modify either. It is much cheaper than a DeepCopy.
func (p *Provider) Mutated(pod *api.Pod) *api.Pod {
	out := *pod
	if sc := pod.Spec.SecurityContext; sc != nil {
		c := *sc
		out.Spec.SecurityContext = &c
	}
	out.Spec.InitContainers = cloneContainers(pod.Spec.InitContainers)
	out.Spec.Containers = cloneContainers(pod.Spec.Containers)
	if n := len(pod.Spec.EphemeralContainers); n > 0 {
		out.Spec.EphemeralContainers = make([]api.EphemeralContainer, n)
		for i, ec := range pod.Spec.EphemeralContainers {
			if sc := ec.SecurityContext; sc != nil {
				c := *sc
				ec.SecurityContext = &c
			}
			out.Spec.EphemeralContainers[i] = ec
		}
	}
	p.MutatePod(&out)
	return &out
}

// cloneContainers copies the containers and their security contexts, which
// MutatePod writes field by field (every other field it replaces whole).
func cloneContainers(in []api.Container) []api.Container {
	if in == nil {
		return nil
	}
	out := make([]api.Container, len(in))
	for i, c := range in {
		if sc := c.SecurityContext; sc != nil {
			cp := *sc
			c.SecurityContext = &cp
		}
		out[i] = c
	}
	return out
}

// mutateContainers sets each container's defaults.
func (p *Provider) mutateContainers(pod *api.Pod, linux bool) {
	podutil.VisitContainers(&pod.Spec, podutil.AllContainers, func(c *api.Container, _ podutil.ContainerType) bool {
		p.mutateContainer(pod, c, linux)
		return true
	})
}

// mutateContainer sets one container's defaults. runAsUser, runAsGroup,
// runAsNonRoot and seLinuxOptions are judged by their effective value (the
// container's, else the pod's).
func (p *Provider) mutateContainer(pod *api.Pod, c *api.Container, linux bool) {
	psc := pod.Spec.SecurityContext
	if linux {
		if effective(c.SecurityContext, psc, runAsUser) == nil {
			if uid, ok := p.user.Default(); ok {
				containerSC(c).RunAsUser = ptr.To(uid)
			}
		}
		if p.runAsGroup != nil && effective(c.SecurityContext, psc, runAsGroup) == nil {
			if gid, ok := p.runAsGroup.Default(); ok {
				containerSC(c).RunAsGroup = ptr.To(gid)
			}
		}
		if effective(c.SecurityContext, psc, seLinuxOptions) == nil && p.seLinux.HasDefault() {
			containerSC(c).SELinuxOptions = p.seLinux.Default()
		}
		if p.apparmor.HasDefault() && !apparmor.ContainerHasProfile(pod, c.Name, c.SecurityContext) {
			containerSC(c).AppArmorProfile = p.apparmor.DefaultProfile()
		}
		if f := seccomp.ContainerAnnotationField(pod, c.Name, c.SecurityContext); f != nil {
			containerSC(c).SeccompProfile = f
		}
	}
	if p.user.RequiresNonRoot() && effective(c.SecurityContext, psc, runAsNonRoot) == nil && effective(c.SecurityContext, psc, runAsUser) == nil {
		containerSC(c).RunAsNonRoot = ptr.To(true)
	}
	if !linux {
		return
	}
	var caps *api.Capabilities
	if c.SecurityContext != nil {
		caps = c.SecurityContext.Capabilities
	}
	if generated, grew := p.capabilities.Generate(caps); grew {
		containerSC(c).Capabilities = generated
	}
	if p.spec.ReadOnlyRootFilesystem && (c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil) {
		containerSC(c).ReadOnlyRootFilesystem = ptr.To(true)
	}
	if c.SecurityContext == nil || c.SecurityContext.AllowPrivilegeEscalation == nil {
		if ape := p.allowPrivilegeEscalation(); ape != nil {
			containerSC(c).AllowPrivilegeEscalation = ptr.To(*ape)
		}
	}
}

// allowPrivilegeEscalation is the default of a container's
// allowPrivilegeEscalation: the policy's default, else false where the
// policy forbids escalation, else none.
func (p *Provider) allowPrivilegeEscalation() *bool {
	if ape := p.spec.DefaultAllowPrivilegeEscalation; ape != nil {
		return ape
	}
	if ape := p.spec.AllowPrivilegeEscalation; ape != nil && !*ape {
		return ape
	}
	return nil
}

// ValidatePod returns every way the pod breaks the policy, for callers that
// validate one pod against one policy.
func (p *Provider) ValidatePod(pod *api.Pod) field.ErrorList {
	s := NewSubject(pod)
	return p.Validate(&s)
}

// Validate returns every way the subject breaks the policy.
func (p *Provider) Validate(s *Subject) field.ErrorList {
	return errs.All(func(c *errs.Collector) { p.validate(s, c) })
}

// Admits reports whether the subject meets the policy. It stops at the
// first error and builds none, so that trying a pod against many policies
// that refuse it stays cheap.
func (p *Provider) Admits(s *Subject) bool {
	c := errs.Quick()
	p.validate(s, &c)
	return !c.Failed()
}

// validate runs the checks in v1.24's order: the pod's, then each
// container's.
func (p *Provider) validate(s *Subject, c *errs.Collector) {
	if p.strict(seccompCheck) || p.strict(appArmorCheck) {
		s.profiles()
	}
	pod := s.Pod
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = noPodSC
	}
	checks := [...]func(){
		func() {
			if p.strict(fsGroupCheck) {
				p.fsGroup.ValidateOne(c, fsGroupPath, psc.FSGroup)
			}
		},
		func() {
			if p.strict(supplementalGroupsCheck) {
				p.supplementalGroups.ValidateList(c, suppGroupPath, psc.SupplementalGroups)
			}
		},
		func() {
			if p.strict(seccompCheck) {
				p.seccomp.Validate(c, func() *field.Path { return seccompPod }, s.seccomp)
			}
		},
		func() {
			if p.strict(seLinuxCheck) {
				p.seLinux.Validate(c, podSCPath, psc.SELinuxOptions)
			}
		},
		func() {
			if p.strict(hostNamespacesCheck) {
				p.validateHostNamespaces(c, lineapi.PodHostNamespaces(&pod.Spec))
			}
		},
		func() { p.sysctls.Validate(c, sysctlsPath, psc.Sysctls) },
		func() { p.volumes.Validate(c, pod) },
		func() {
			if p.strict(runtimeClassCheck) {
				p.runtimeClass.Validate(c, runtimeClassPath, pod.Spec.RuntimeClassName)
			}
		},
	}
	for _, check := range checks {
		if check(); c.Stop() {
			return
		}
	}
	containers := s.containers()
	for i := range containers {
		if p.validateContainer(c, pod, &containers[i]); c.Stop() {
			return
		}
	}
}

func (p *Provider) validateHostNamespaces(c *errs.Collector, h lineapi.HostNamespaces) {
	if h.Network && !p.spec.HostNetwork {
		c.Add(func() *field.Error {
			return field.Invalid(podSCPath.Child("hostNetwork"), h.Network, "Host network is not allowed to be used")
		})
	}
	if h.PID && !p.spec.HostPID {
		c.Add(func() *field.Error {
			return field.Invalid(podSCPath.Child("hostPID"), h.PID, "Host PID is not allowed to be used")
		})
	}
	if h.IPC && !p.spec.HostIPC {
		c.Add(func() *field.Error {
			return field.Invalid(podSCPath.Child("hostIPC"), h.IPC, "Host IPC is not allowed to be used")
		})
	}
}

// validateContainer checks one container.
func (p *Provider) validateContainer(c *errs.Collector, pod *api.Pod, ctr *container) {
	sc, psc := ctr.SecurityContext, pod.Spec.SecurityContext
	if p.strict(userCheck) {
		p.user.Validate(c, ctr.scPath, effective(sc, psc, runAsNonRoot), effective(sc, psc, runAsUser))
	}
	if p.runAsGroup != nil && p.strict(runAsGroupCheck) {
		p.runAsGroup.ValidateOne(c, ctr.scPath, effective(sc, psc, runAsGroup))
	}
	if p.strict(seLinuxCheck) {
		p.seLinux.Validate(c, ctr.scPath, effective(sc, psc, seLinuxOptions))
	}
	if p.strict(appArmorCheck) {
		p.apparmor.Validate(c, ctr.apparmorPath, ctr.apparmor)
	}
	if p.strict(seccompCheck) {
		p.seccomp.Validate(c, ctr.seccompPath, ctr.seccomp)
	}
	if sc == nil {
		sc = noContainerSC
	}
	if p.strict(privilegedCheck) && sc.Privileged != nil && *sc.Privileged && !p.spec.Privileged {
		c.Add(func() *field.Error {
			return field.Invalid(ctr.scPath.Child("privileged"), *sc.Privileged, "Privileged containers are not allowed")
		})
	}
	procMount := api.DefaultProcMount
	if sc.ProcMount != nil {
		procMount = *sc.ProcMount
	}
	if !slices.Contains(p.procMounts, procMount) {
		c.Add(func() *field.Error {
			return field.Invalid(ctr.scPath.Child("procMount"), procMount, "ProcMountType is not allowed")
		})
	}
	if p.strict(capabilitiesCheck) {
		p.capabilities.Validate(c, ctr.scPath, sc.Capabilities)
	}
	for _, port := range ctr.Ports {
		if port.HostPort > 0 && !hostPortAllowed(p.spec.HostPorts, port.HostPort) {
			c.Add(func() *field.Error {
				return field.Invalid(ctr.path.Child("hostPort"), port.HostPort,
					fmt.Sprintf("Host port %d is not allowed to be used. Allowed ports: [%s]", port.HostPort, formatPortRanges(p.spec.HostPorts)))
			})
		}
	}
	if p.strict(readOnlyRootFilesystemCheck) && p.spec.ReadOnlyRootFilesystem {
		switch ro := sc.ReadOnlyRootFilesystem; {
		case ro == nil:
			c.Add(func() *field.Error {
				return field.Invalid(ctr.scPath.Child("readOnlyRootFilesystem"), ro, "ReadOnlyRootFilesystem may not be nil and must be set to true")
			})
		case !*ro:
			c.Add(func() *field.Error {
				return field.Invalid(ctr.scPath.Child("readOnlyRootFilesystem"), *ro, "ReadOnlyRootFilesystem must be set to true")
			})
		}
	}
	if p.strict(privilegeEscalationCheck) && (sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation) {
		if ape := p.spec.AllowPrivilegeEscalation; ape != nil && !*ape {
			c.Add(func() *field.Error {
				return field.Invalid(ctr.scPath.Child("allowPrivilegeEscalation"), sc.AllowPrivilegeEscalation, "Allowing privilege escalation for containers is not allowed")
			})
		}
	}
}

func hostPortAllowed(ranges []policy.HostPortRange, port int32) bool {
	for _, r := range ranges {
		if port >= r.Min && port <= r.Max {
			return true
		}
	}
	return false
}

// formatPortRanges prints ranges as "1-10,80", as v1.24's message did.
func formatPortRanges(ranges []policy.HostPortRange) string {
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = strconv.Itoa(int(r.Min))
		if r.Max != r.Min {
			parts[i] += "-" + strconv.Itoa(int(r.Max))
		}
	}
	return strings.Join(parts, ",")
}

// effective returns a container's value of a field it inherits from the
// pod: its own, else the pod's.
func effective[T any](c *api.SecurityContext, p *api.PodSecurityContext, f inherited[T]) *T {
	if c != nil {
		if v := f.container(c); v != nil {
			return v
		}
	}
	if p != nil {
		return f.pod(p)
	}
	return nil
}

// inherited is a field present in both a container's and the pod's
// security context.
type inherited[T any] struct {
	container func(*api.SecurityContext) *T
	pod       func(*api.PodSecurityContext) *T
}

var (
	runAsUser = inherited[int64]{
		func(c *api.SecurityContext) *int64 { return c.RunAsUser },
		func(p *api.PodSecurityContext) *int64 { return p.RunAsUser },
	}
	runAsGroup = inherited[int64]{
		func(c *api.SecurityContext) *int64 { return c.RunAsGroup },
		func(p *api.PodSecurityContext) *int64 { return p.RunAsGroup },
	}
	runAsNonRoot = inherited[bool]{
		func(c *api.SecurityContext) *bool { return c.RunAsNonRoot },
		func(p *api.PodSecurityContext) *bool { return p.RunAsNonRoot },
	}
	seLinuxOptions = inherited[api.SELinuxOptions]{
		func(c *api.SecurityContext) *api.SELinuxOptions { return c.SELinuxOptions },
		func(p *api.PodSecurityContext) *api.SELinuxOptions { return p.SELinuxOptions },
	}
)

// podSC returns the pod's security context, allocating it on first write.
func podSC(pod *api.Pod) *api.PodSecurityContext {
	if pod.Spec.SecurityContext == nil {
		pod.Spec.SecurityContext = &api.PodSecurityContext{}
	}
	return pod.Spec.SecurityContext
}

// containerSC returns the container's security context, allocating it on
// first write.
func containerSC(c *api.Container) *api.SecurityContext {
	if c.SecurityContext == nil {
		c.SecurityContext = &api.SecurityContext{}
	}
	return c.SecurityContext
}

// Read-only stand-ins for an unset security context.
var (
	noPodSC       = &api.PodSecurityContext{}
	noContainerSC = &api.SecurityContext{}
)
