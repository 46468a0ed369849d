// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package pspmigration

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
)

// The CEL below judges a v1 pod (`object`) as one PodSecurityPolicy does,
// check for check in the order and with the meaning of
// pkg/security/podsecuritypolicy's Provider. It reads the variables every
// generated policy declares: `linux` (the pod is not a Windows pod, and so
// gets the Linux-only defaults).
//
// Each check is written in two ways: strict, the pod as it is (what the
// ValidatingAdmissionPolicy sees, after the MutatingAdmissionPolicies set
// the chosen policy's defaults), and defaulted, the pod as the policy's
// defaults would leave it (what PodSecurityPolicy judges when it chooses
// a policy that mutates, and so what chooses the MutatingAdmissionPolicy).

// celValid is the policy's verdict on the pod, strict or defaulted: its
// checks, each interned in a (nil: written out).
func celValid(psp *policy.PodSecurityPolicy, defaulted bool, a *atoms) string {
	g := celGen{spec: &psp.Spec, annotations: psp.Annotations, def: defaulted}
	var parts []string
	for _, check := range g.podChecks() {
		parts = append(parts, a.ref(check))
	}
	for _, check := range g.containerChecks() {
		parts = append(parts, a.ref(allContainers(check)))
	}
	return and(parts...)
}

// celMutates is true when the policy's defaults would change the pod: when
// PodSecurityPolicy tries it only after every policy that takes the pod as
// it is. Its conditions are interned in a (nil: written out).
func celMutates(psp *policy.PodSecurityPolicy, a *atoms) string {
	g := celGen{spec: &psp.Spec, annotations: psp.Annotations}
	var parts []string
	for _, d := range g.podDefaults() {
		parts = append(parts, a.ref(d))
	}
	for _, d := range g.containerDefaults() {
		parts = append(parts, a.ref(anyContainer(d)))
	}
	return or(parts...)
}

// atoms are the checks of the policies one object holds, each a variable
// of its own, evaluated once per request however many policies read it.
// Policies share most checks (no host network, no privileged container,
// the same volumes), and CEL's cost per request grows with what it
// evaluates, so a group of policies costs about as much as its distinct
// checks.
type atoms struct {
	names map[string]string // expression → variable
	vars  []admissionv1.Variable
}

func newAtoms() *atoms { return &atoms{names: map[string]string{}} }

// ref is the variable that holds expr, made if new; expr itself when a is
// nil or expr is a constant.
func (a *atoms) ref(expr string) string {
	if a == nil || expr == "true" || expr == "false" {
		return expr
	}
	name, ok := a.names[expr]
	if !ok {
		name = fmt.Sprintf("check%d", len(a.vars))
		a.names[expr] = name
		a.vars = append(a.vars, admissionv1.Variable{Name: name, Expression: expr})
	}
	return "variables." + name
}

type celGen struct {
	spec        *policy.PodSecurityPolicySpec
	annotations map[string]string
	def         bool
}

// Expressions for the pod's fields. A container `c` inherits runAsUser,
// runAsGroup, runAsNonRoot and seLinuxOptions from the pod.
const (
	podSC      = "object.spec.?securityContext"
	podSeccomp = "object.metadata.?annotations[?'seccomp.security.alpha.kubernetes.io/pod']"
	linux      = "variables.linux"
	// A profile field by its annotation form; a type without one (v1.38's
	// OCI) by its own name, which no policy's list can hold
	// (pkg/security/podsecuritypolicy/profile.Name).
	seccompNames = `(p.type == 'RuntimeDefault' ? 'runtime/default' : p.type == 'Unconfined' ? 'unconfined' : p.type == 'Localhost' ? (has(p.localhostProfile) ? 'localhost/' + p.localhostProfile : '') : p.type)`
)

func effective(field string) string {
	return fmt.Sprintf("c.?securityContext.?%s.or(%s.?%s)", field, podSC, field)
}

// podSeccompName is the pod's seccomp profile by PodSecurityPolicy's name
// for it: its field, else its annotation; with the policy's default when
// judging the defaulted pod and the pod names none.
func (g celGen) podSeccompName() string {
	if d := g.annotations[policy.SeccompDefaultProfileAnnotationKey]; g.def && d != "" {
		return fmt.Sprintf("(variables.podSeccompSet || !%s ? variables.podSeccomp : %s)", linux, quote(d))
	}
	return "variables.podSeccomp"
}

// containerSeccompName is the container's: its field, else its
// annotation (set, even empty), else the pod's.
func (g celGen) containerSeccompName() string {
	return fmt.Sprintf("(size(variables.ownSeccomp[c.name]) > 0 ? variables.ownSeccomp[c.name][0] : %s)", g.podSeccompName())
}

// sharedVariables are what the checks and defaults of every policy read
// the same way: computed once per request and object, not once per policy
// (CEL's cost per request grows with the number of policies, so each
// policy's part is kept small).
func sharedVariables() []admissionv1.Variable {
	return []admissionv1.Variable{
		{Name: "linux", Expression: "object.spec.?os.?name.orValue('') != 'windows'"},
		// Every container of the pod (containers, init containers,
		// ephemeral containers) in one list: one comprehension per policy
		// instead of three. The kinds' types differ, so it is dyn.
		{Name: "containers", Expression: "dyn(object.spec.containers) + dyn(object.spec.?initContainers.orValue([])) + dyn(object.spec.?ephemeralContainers.orValue([]))"},
		{Name: "podSeccomp", Expression: fmt.Sprintf("%s.?seccompProfile.optMap(p, %s).orValue(%s.orValue(''))", podSC, seccompNames, podSeccomp)},
		{Name: "podSeccompSet", Expression: fmt.Sprintf("%s.?seccompProfile.hasValue() || %s.orValue('') != ''", podSC, podSeccomp)},
		// By container name (unique across the kinds): its own seccomp
		// profile name, field or annotation, as a list of one, or none.
		{Name: "ownSeccomp", Expression: fmt.Sprintf("variables.containers.transformMapEntry(i, c, {c.name: c.?securityContext.?seccompProfile.optMap(p, %s).or(object.metadata.?annotations[?('container.seccomp.security.alpha.kubernetes.io/' + c.name)]).optMap(n, [n]).orValue([])})", seccompNames)},
		// By container name: its AppArmor profile name: its field, else its
		// annotation, else the pod's field.
		{Name: "appArmor", Expression: fmt.Sprintf("variables.containers.transformMapEntry(i, c, {c.name: c.?securityContext.?appArmorProfile.optMap(p, %s).orValue(object.metadata.?annotations[?('container.apparmor.security.beta.kubernetes.io/' + c.name)].orValue('') != '' ? object.metadata.annotations['container.apparmor.security.beta.kubernetes.io/' + c.name] : %s.?appArmorProfile.optMap(p, %s).orValue(''))})",
			seccompNames, podSC, seccompNames)},
	}
}

func (g celGen) podChecks() []string {
	s := g.spec
	var out []string
	out = append(out,
		g.groupOne(string(s.FSGroup.Rule), s.FSGroup.Ranges, podSC+".?fsGroup"),
		g.groupList(string(s.SupplementalGroups.Rule), s.SupplementalGroups.Ranges),
		g.seccomp(g.podSeccompName()),
		g.seLinux(podSC+".?seLinuxOptions"),
	)
	for _, h := range []struct {
		field   string
		allowed bool
	}{{"hostNetwork", s.HostNetwork}, {"hostPID", s.HostPID}, {"hostIPC", s.HostIPC}} {
		if !h.allowed {
			out = append(out, fmt.Sprintf("!object.spec.?%s.orValue(false)", h.field))
		}
	}
	out = append(out, g.sysctls(), g.volumes(), g.runtimeClass())
	return out
}

func (g celGen) containerChecks() []string {
	s := g.spec
	out := []string{g.user()}
	if s.RunAsGroup != nil {
		out = append(out, g.groupOne(string(s.RunAsGroup.Rule), s.RunAsGroup.Ranges, effective("runAsGroup")))
	}
	out = append(out, g.seLinux(effective("seLinuxOptions")), g.apparmor(), g.seccomp(g.containerSeccompName()))
	if !s.Privileged {
		out = append(out, "!c.?securityContext.?privileged.orValue(false)")
	}
	procMounts := s.AllowedProcMountTypes
	if len(procMounts) == 0 {
		procMounts = []api.ProcMountType{api.DefaultProcMount}
	}
	out = append(out, fmt.Sprintf("c.?securityContext.?procMount.orValue('Default') in %s", list(procMounts)))
	out = append(out, g.capabilities())
	var ports []string
	for _, r := range s.HostPorts {
		ports = append(ports, fmt.Sprintf("(p.hostPort >= %d && p.hostPort <= %d)", r.Min, r.Max))
	}
	out = append(out, fmt.Sprintf("c.?ports.orValue([]).all(p, !has(p.hostPort) || p.hostPort <= 0 || %s)", or(ports...)))
	if s.ReadOnlyRootFilesystem {
		out = append(out, g.defaultedBool("c.?securityContext.?readOnlyRootFilesystem", ptr.To(true), false))
	}
	if ape := s.AllowPrivilegeEscalation; ape != nil && !*ape {
		// A container must say false; the policy's default may.
		def := s.DefaultAllowPrivilegeEscalation
		if def == nil {
			def = ape
		}
		out = append(out, fmt.Sprintf("!%s", g.defaultedBool("c.?securityContext.?allowPrivilegeEscalation", def, true)))
	}
	return out
}

// defaultedBool is an optional bool container field, read as unset when
// it is unset, or as the policy's default when judging the defaulted pod
// (Linux pods only get it).
func (g celGen) defaultedBool(value string, def *bool, unset bool) string {
	if g.def && def != nil {
		return fmt.Sprintf("%s.orValue(%s ? %t : %t)", value, linux, *def, unset)
	}
	return fmt.Sprintf("%s.orValue(%t)", value, unset)
}

// groupOne is a group strategy on one optional ID.
func (g celGen) groupOne(rule string, ranges []policy.IDRange, value string) string {
	in := inRanges("v", ranges)
	switch rule {
	case "MustRunAs":
		if g.def {
			return fmt.Sprintf("%s.optMap(v, %s).orValue(%s)", value, in, linux)
		}
		return fmt.Sprintf("%s.optMap(v, %s).orValue(false)", value, in)
	case "MayRunAs":
		return fmt.Sprintf("%s.optMap(v, %s).orValue(true)", value, in)
	}
	return "true"
}

// groupList is the supplemental groups strategy.
func (g celGen) groupList(rule string, ranges []policy.IDRange) string {
	groups := podSC + ".?supplementalGroups.orValue([])"
	all := fmt.Sprintf("%s.all(v, %s)", groups, inRanges("v", ranges))
	switch rule {
	case "MustRunAs":
		empty := "false"
		if g.def {
			empty = linux
		}
		return fmt.Sprintf("(size(%s) == 0 ? %s : %s)", groups, empty, all)
	case "MayRunAs":
		return all
	}
	return "true"
}

func inRanges(v string, ranges []policy.IDRange) string {
	var parts []string
	for _, r := range ranges {
		parts = append(parts, fmt.Sprintf("(%s >= %d && %s <= %d)", v, r.Min, v, r.Max))
	}
	return or(parts...)
}

// user is the runAsUser strategy on a container's effective values.
func (g celGen) user() string {
	s := g.spec.RunAsUser
	switch s.Rule {
	case policy.RunAsUserStrategyMustRunAs:
		unset := "false"
		if g.def {
			unset = linux
		}
		return fmt.Sprintf("%s.optMap(v, %s).orValue(%s)", effective("runAsUser"), inRanges("v", s.Ranges), unset)
	case policy.RunAsUserStrategyMustRunAsNonRoot:
		// Unset both ways is refused, unless the policy sets runAsNonRoot
		// (on every OS).
		unset := "false"
		if g.def {
			unset = "true"
		}
		return fmt.Sprintf("(!%s.hasValue() && !%s.hasValue() ? %s : %s.orValue(true) && %s.orValue(1) != 0)",
			effective("runAsNonRoot"), effective("runAsUser"), unset, effective("runAsNonRoot"), effective("runAsUser"))
	}
	return "true"
}

// seLinux is the seLinux strategy on optional seLinuxOptions.
func (g celGen) seLinux(value string) string {
	r := g.spec.SELinux.SELinuxOptions
	if g.spec.SELinux.Rule != policy.SELinuxStrategyMustRunAs || r == nil {
		return "true"
	}
	level := fmt.Sprintf("(o.?level.orValue('') == %s", quote(r.Level))
	if sens, cats, ok := strings.Cut(r.Level, ":"); ok {
		// The same sensitivity and set of categories, in any order.
		want := list(strings.Split(cats, ","))
		level += fmt.Sprintf(" || (o.?level.orValue('').contains(':') && o.level.split(':')[0] == %s && o.level.substring(o.level.indexOf(':') + 1).split(',').all(x, x in %s) && %s.all(x, x in o.level.substring(o.level.indexOf(':') + 1).split(',')))",
			quote(sens), want, want)
	}
	level += ")"
	match := and(level,
		fmt.Sprintf("o.?role.orValue('') == %s", quote(r.Role)),
		fmt.Sprintf("o.?type.orValue('') == %s", quote(r.Type)),
		fmt.Sprintf("o.?user.orValue('') == %s", quote(r.User)))
	unset := "false"
	if g.def {
		unset = linux
	}
	return fmt.Sprintf("%s.optMap(o, %s).orValue(%s)", value, match, unset)
}

// seccomp is the seccomp strategy on a profile name (” for none).
func (g celGen) seccomp(name string) string {
	raw := g.annotations[policy.SeccompAllowedProfilesAnnotationKey]
	var allowed []string
	if raw != "" {
		for _, p := range strings.Split(raw, ",") {
			if p == policy.SeccompAllowAny {
				return "true"
			}
			allowed = append(allowed, p)
		}
	}
	if len(allowed) == 0 {
		return fmt.Sprintf("%s == ''", name)
	}
	// docker/default and runtime/default stand for each other.
	for _, pair := range [][2]string{{api.SeccompProfileRuntimeDefault, api.DeprecatedSeccompProfileDockerDefault}, {api.DeprecatedSeccompProfileDockerDefault, api.SeccompProfileRuntimeDefault}} {
		if slices.Contains(allowed, pair[0]) && !slices.Contains(allowed, pair[1]) {
			allowed = append(allowed, pair[1])
		}
	}
	return fmt.Sprintf("%s in %s", name, list(allowed))
}

// apparmor is the AppArmor strategy on a container's profile: its field,
// else its annotation, else the pod's field.
func (g celGen) apparmor() string {
	raw, ok := g.annotations[policy.AppArmorAllowedProfilesAnnotationKey]
	if !ok {
		return "true"
	}
	name := containerAppArmorName()
	if d := g.annotations[policy.AppArmorDefaultProfileAnnotationKey]; g.def && d != "" {
		name = fmt.Sprintf("(%s == '' && %s ? %s : %s)", name, linux, quote(d), name)
	}
	return fmt.Sprintf("%s in %s", name, list(strings.Split(raw, ",")))
}

// containerAppArmorName is the container's AppArmor profile name.
func containerAppArmorName() string { return "variables.appArmor[c.name]" }

// capabilities is the capabilities strategy.
func (g celGen) capabilities() string {
	s := g.spec
	caps := "c.?securityContext.?capabilities"
	required := len(s.DefaultAddCapabilities) > 0 || len(s.RequiredDropCapabilities) > 0
	if slices.Contains(s.AllowedCapabilities, "*") {
		switch {
		case !required:
			return "true"
		case g.def:
			return caps + ".hasValue() || " + linux
		}
		return caps + ".hasValue()"
	}
	addable := list(append(slices.Clone(s.DefaultAddCapabilities), s.AllowedCapabilities...))
	add := fmt.Sprintf("%s.?add.orValue([]).all(x, x in %s)", caps, addable)
	drop := fmt.Sprintf("%s.all(x, x in %s.?drop.orValue([]))", list(s.RequiredDropCapabilities), caps)
	strict := and(add, drop)
	if required {
		strict = and(caps+".hasValue()", strict)
	}
	if !g.def {
		return strict
	}
	// The defaults add defaultAddCapabilities and requiredDropCapabilities,
	// on Linux; what is left to judge is what the container adds itself.
	return fmt.Sprintf("(%s ? %s : %s)", linux, add, strict)
}

// sysctls is the sysctl strategy, on names normalized as the kubelet
// does (a name whose first separator is '/' has '.' and '/' swapped).
func (g celGen) sysctls() string {
	s := g.spec
	norm := "(n.indexOf('/') >= 0 && (n.indexOf('.') < 0 || n.indexOf('/') < n.indexOf('.')) ? n.replace('.', '\\u0000').replace('/', '.').replace('\\u0000', '/') : n)"
	matches := func(patterns []string) string {
		var parts []string
		for _, p := range patterns {
			if prefix, ok := strings.CutSuffix(p, "*"); ok {
				parts = append(parts, fmt.Sprintf("m.startsWith(%s)", quote(prefix)))
			} else {
				parts = append(parts, fmt.Sprintf("m == %s", quote(p)))
			}
		}
		return or(parts...)
	}
	safe := []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"}
	return fmt.Sprintf("%s.?sysctls.orValue([]).all(s, [s.name].map(n, %s).all(m, !(%s) && (m in %s || %s)))",
		podSC, norm, matches(s.ForbiddenSysctls), list(safe), matches(s.AllowedUnsafeSysctls))
}

// volumeFields are the pod volume source fields, by PodSecurityPolicy's
// FSType names (which are the same words).
var volumeFields = []policy.FSType{
	policy.HostPath, policy.EmptyDir, policy.GCEPersistentDisk, policy.AWSElasticBlockStore, policy.GitRepo,
	policy.Secret, policy.NFS, policy.ISCSI, policy.Glusterfs, policy.PersistentVolumeClaim, policy.RBD,
	policy.Quobyte, policy.FlexVolume, policy.Cinder, policy.CephFS, policy.Flocker, policy.DownwardAPI,
	policy.FC, policy.AzureFile, policy.ConfigMap, policy.VsphereVolume, policy.AzureDisk,
	policy.PhotonPersistentDisk, policy.Projected, policy.PortworxVolume, policy.ScaleIO, policy.StorageOS,
	policy.CSI, policy.Ephemeral, policy.Image,
}

// volumes is the volume strategy: allowed types, host path prefixes (and
// their read-only mounts), flex volume and inline CSI drivers.
func (g celGen) volumes() string {
	s := g.spec
	var checks []string
	if !slices.Contains(s.Volumes, policy.All) {
		var allowed []string
		for _, t := range volumeFields {
			if slices.Contains(s.Volumes, t) {
				allowed = append(allowed, "has(v."+string(t)+")")
			}
		}
		if slices.Contains(s.Volumes, policy.Secret) && !slices.Contains(s.Volumes, policy.Projected) {
			// The service account token volume that the apiserver adds.
			allowed = append(allowed, `(has(v.projected) && v.projected.?sources.orValue([]).all(src,
  (has(src.serviceAccountToken) && src.serviceAccountToken.path == 'token' && src.serviceAccountToken.?audience.orValue('') == '') ||
  (has(src.configMap) && src.configMap.?name.orValue('') == 'kube-root-ca.crt') ||
  (has(src.downwardAPI) && src.downwardAPI.?items.orValue([]).all(i, i.path == 'namespace' && has(i.fieldRef) && i.fieldRef.?apiVersion.orValue('') == 'v1' && i.fieldRef.fieldPath == 'metadata.namespace'))))`)
		}
		checks = append(checks, or(allowed...))
	}
	if len(s.AllowedHostPaths) > 0 && (slices.Contains(s.Volumes, policy.All) || slices.Contains(s.Volumes, policy.HostPath)) {
		var any, writable []string
		for _, p := range s.AllowedHostPaths {
			prefix := strings.TrimSuffix(p.PathPrefix, "/")
			m := fmt.Sprintf("(h == %s || h.startsWith(%s))", quote(prefix), quote(prefix+"/"))
			any = append(any, m)
			if !p.ReadOnly {
				writable = append(writable, m)
			}
		}
		readOnlyMounts := "variables.containers.all(c, c.?volumeMounts.orValue([]).all(m, m.name != v.name || m.?readOnly.orValue(false)))"
		checks = append(checks, fmt.Sprintf("!has(v.hostPath) || [v.hostPath.path.endsWith('/') ? v.hostPath.path.substring(0, size(v.hostPath.path) - 1) : v.hostPath.path].all(h, %s && (%s || %s))",
			or(any...), or(writable...), readOnlyMounts))
	}
	if len(s.AllowedFlexVolumes) > 0 {
		var drivers []string
		for _, f := range s.AllowedFlexVolumes {
			drivers = append(drivers, f.Driver)
		}
		checks = append(checks, fmt.Sprintf("!has(v.flexVolume) || v.flexVolume.driver in %s", list(drivers)))
	}
	if len(s.AllowedCSIDrivers) > 0 {
		var drivers []string
		for _, d := range s.AllowedCSIDrivers {
			drivers = append(drivers, d.Name)
		}
		checks = append(checks, fmt.Sprintf("!has(v.csi) || v.csi.driver in %s", list(drivers)))
	}
	if len(checks) == 0 {
		return "true"
	}
	return fmt.Sprintf("object.spec.?volumes.orValue([]).all(v, %s)", and(checks...))
}

// runtimeClass is the runtime class strategy.
func (g celGen) runtimeClass() string {
	rc := g.spec.RuntimeClass
	if rc == nil || slices.Contains(rc.AllowedRuntimeClassNames, policy.AllowAllRuntimeClassNames) {
		return "true"
	}
	unset := "true"
	if g.def && rc.DefaultRuntimeClassName != nil {
		unset = strconv.FormatBool(slices.Contains(rc.AllowedRuntimeClassNames, *rc.DefaultRuntimeClassName))
	}
	return fmt.Sprintf("object.spec.?runtimeClassName.optMap(n, n in %s).orValue(%s)", list(rc.AllowedRuntimeClassNames), unset)
}

// podDefaults are, for the pod, when each of the policy's defaults applies
// (Provider.Mutates).
func (g celGen) podDefaults() []string {
	s := g.spec
	var out []string
	if s.SupplementalGroups.Rule == policy.SupplementalGroupsStrategyMustRunAs {
		out = append(out, fmt.Sprintf("%s && !%s.?supplementalGroups.hasValue()", linux, podSC))
	}
	if s.FSGroup.Rule == policy.FSGroupStrategyMustRunAs {
		out = append(out, fmt.Sprintf("%s && !%s.?fsGroup.hasValue()", linux, podSC))
	}
	if s.SELinux.Rule == policy.SELinuxStrategyMustRunAs {
		out = append(out, fmt.Sprintf("%s && !%s.?seLinuxOptions.hasValue()", linux, podSC))
	}
	noField := fmt.Sprintf("!%s.?seccompProfile.hasValue()", podSC)
	// The pod's seccomp annotation becomes its field.
	out = append(out, fmt.Sprintf("%s && %s && (%s.orValue('') in ['runtime/default', 'docker/default', 'unconfined'] || %s.orValue('').startsWith('localhost/') && size(%s.orValue('')) > 10)", linux, noField, podSeccomp, podSeccomp, podSeccomp))
	if g.annotations[policy.SeccompDefaultProfileAnnotationKey] != "" {
		out = append(out, fmt.Sprintf("%s && %s && %s.orValue('') == ''", linux, noField, podSeccomp))
	}
	if s.RuntimeClass != nil && s.RuntimeClass.DefaultRuntimeClassName != nil {
		out = append(out, "!has(object.spec.runtimeClassName)")
	}
	return out
}

// containerDefaults are, for a container, when each default applies.
func (g celGen) containerDefaults() []string {
	s := g.spec
	var out []string
	if s.RunAsUser.Rule == policy.RunAsUserStrategyMustRunAs {
		out = append(out, fmt.Sprintf("%s && !%s.hasValue()", linux, effective("runAsUser")))
	}
	if s.RunAsGroup != nil && s.RunAsGroup.Rule == policy.RunAsGroupStrategyMustRunAs {
		out = append(out, fmt.Sprintf("%s && !%s.hasValue()", linux, effective("runAsGroup")))
	}
	if s.SELinux.Rule == policy.SELinuxStrategyMustRunAs {
		out = append(out, fmt.Sprintf("%s && !%s.hasValue()", linux, effective("seLinuxOptions")))
	}
	if g.annotations[policy.AppArmorDefaultProfileAnnotationKey] != "" {
		out = append(out, fmt.Sprintf("%s && %s == ''", linux, containerAppArmorName()))
	}
	// A container's seccomp annotation becomes its field.
	annotation := "object.metadata.?annotations[?('container.seccomp.security.alpha.kubernetes.io/' + c.name)].orValue('')"
	out = append(out, fmt.Sprintf("%s && !c.?securityContext.?seccompProfile.hasValue() && (%s in ['runtime/default', 'docker/default', 'unconfined'] || %s.startsWith('localhost/') && size(%s) > 10)", linux, annotation, annotation, annotation))
	if s.RunAsUser.Rule == policy.RunAsUserStrategyMustRunAsNonRoot {
		out = append(out, fmt.Sprintf("!%s.hasValue() && !%s.hasValue()", effective("runAsNonRoot"), effective("runAsUser")))
	}
	if grows := g.capsGrow(); grows != "" {
		out = append(out, linux+" && "+grows)
	}
	if s.ReadOnlyRootFilesystem {
		out = append(out, linux+" && !c.?securityContext.?readOnlyRootFilesystem.hasValue()")
	}
	if s.DefaultAllowPrivilegeEscalation != nil || (s.AllowPrivilegeEscalation != nil && !*s.AllowPrivilegeEscalation) {
		out = append(out, linux+" && !c.?securityContext.?allowPrivilegeEscalation.hasValue()")
	}
	return out
}

// capsGrow is when the defaults add to a container's capabilities.
func (g celGen) capsGrow() string {
	s := g.spec
	add, drop := "c.?securityContext.?capabilities.?add.orValue([])", "c.?securityContext.?capabilities.?drop.orValue([])"
	var parts []string
	if len(s.DefaultAddCapabilities) > 0 {
		parts = append(parts, fmt.Sprintf("%s.exists(x, !(x in %s) && !(x in %s))", list(s.DefaultAddCapabilities), drop, add))
	}
	if len(s.RequiredDropCapabilities) > 0 {
		parts = append(parts, fmt.Sprintf("%s.exists(x, !(x in %s))", list(s.RequiredDropCapabilities), drop))
	}
	if len(parts) == 0 {
		return ""
	}
	return "(" + or(parts...) + ")"
}

// allContainers holds pred, over `c`, for every container of every kind.
func allContainers(pred string) string {
	if pred == "true" {
		return pred
	}
	return fmt.Sprintf("variables.containers.all(c, %s)", pred)
}

// anyContainer holds pred for some container.
func anyContainer(pred string) string {
	if pred == "false" {
		return pred
	}
	return fmt.Sprintf("variables.containers.exists(c, %s)", pred)
}

// and joins conjuncts, dropping those that are always true.
func and(parts ...string) string { return join(" && ", "true", "false", parts) }

// or joins disjuncts, dropping those that are always false.
func or(parts ...string) string { return join(" || ", "false", "true", parts) }

// join joins parts with op, dropping the neutral ones and becoming
// absorbing if one is; in parentheses, so that it reads the same wherever
// it is put.
func join(op, neutral, absorbing string, parts []string) string {
	var kept []string
	for _, p := range parts {
		switch p {
		case neutral, "":
			continue
		case absorbing:
			return absorbing
		}
		kept = append(kept, "("+p+")")
	}
	switch len(kept) {
	case 0:
		return neutral
	case 1:
		return kept[0]
	}
	return "(" + strings.Join(kept, op) + ")"
}

// list is a CEL list of strings.
func list[S ~string](items []S) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = quote(string(s))
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// quote is a CEL string literal.
func quote(s string) string { return strconv.Quote(s) }
