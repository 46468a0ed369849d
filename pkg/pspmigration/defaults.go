// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package pspmigration

import (
	"fmt"
	"strings"

	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
)

// celDefaultOps is the JSON patch that sets the policy's defaults on the
// fields a pod leaves unset (Provider.MutatePod), as a CEL list of plain
// maps ({'op': 'add', 'path': ..., 'value': ...}) that an applier turns
// into its one JSONPatch mutation; "" for a policy without defaults. A
// list is data, not a mutation, so an applier holds the defaults of many
// policies at the price of one mutation (each costs the apiserver a
// conversion of the whole pod), and reads only the chosen one's. Fields
// are set only where they are unset, so a container or security context
// the policy leaves alone is not created; each condition reads the pod as
// the request sent it.
func celDefaultOps(psp *policy.PodSecurityPolicy) string {
	g := celGen{spec: &psp.Spec, annotations: psp.Annotations}
	s := g.spec
	var pod []field
	if r := s.SupplementalGroups; r.Rule == policy.SupplementalGroupsStrategyMustRunAs {
		pod = append(pod, field{"supplementalGroups", fmt.Sprintf("%s && !%s.?supplementalGroups.hasValue()", linux, podSC), fmt.Sprintf("[%d]", r.Ranges[0].Min)})
	}
	if s.FSGroup.Rule == policy.FSGroupStrategyMustRunAs {
		pod = append(pod, field{"fsGroup", fmt.Sprintf("%s && !%s.?fsGroup.hasValue()", linux, podSC), fmt.Sprint(s.FSGroup.Ranges[0].Min)})
	}
	if o := s.SELinux.SELinuxOptions; s.SELinux.Rule == policy.SELinuxStrategyMustRunAs && o != nil {
		pod = append(pod, field{"seLinuxOptions", fmt.Sprintf("%s && !%s.?seLinuxOptions.hasValue()", linux, podSC), seLinuxMap(o)})
	}
	// The pod's seccomp annotation becomes its field; else the default.
	fromAnnotation := fmt.Sprintf("%s && !%s.?seccompProfile.hasValue() && %s", linux, podSC, convertibleProfile(podSeccomp+".orValue('')"))
	value := profileMap(podSeccomp + ".orValue('')")
	if d := g.annotations[policy.SeccompDefaultProfileAnnotationKey]; d != "" {
		fromAnnotation = fmt.Sprintf("%s && !%s.?seccompProfile.hasValue() && %s.orValue('') == '' || %s", linux, podSC, podSeccomp, fromAnnotation)
		value = fmt.Sprintf("(%s.orValue('') == '' ? %s : %s)", podSeccomp, profileMap(quote(d)), value)
	}
	pod = append(pod, field{"seccompProfile", fromAnnotation, value})
	ops := []string{setFields("'/spec/securityContext'", "object.spec", "securityContext", pod)}
	if s.RuntimeClass != nil && s.RuntimeClass.DefaultRuntimeClassName != nil {
		ops = append(ops, fmt.Sprintf("(has(object.spec.runtimeClassName) ? [] : [%s])", addOp("'/spec/runtimeClassName'", quote(*s.RuntimeClass.DefaultRuntimeClassName))))
	}
	containers := g.containerFields()
	for _, kind := range createdContainers {
		items := fmt.Sprintf("object.spec.?%s.orValue([])", kind)
		path := fmt.Sprintf("'/spec/%s/' + string(i) + '/securityContext'", kind)
		ops = append(ops, fmt.Sprintf("lists.range(size(%s)).map(i, [%s[i]].map(c, %s)[0]).flatten()", items, items, setFields(path, "c", "securityContext", containers)))
	}
	return strings.Join(ops, " +\n")
}

// createdContainers are the kinds of container a pod is created with, to
// which the defaults apply: the apiserver refuses a new pod with ephemeral
// containers.
var createdContainers = []string{"containers", "initContainers"}

// field is one field a policy's defaults set: to value when when holds.
type field struct{ name, when, value string }

// setFields are the operations that set fields of the object at path (a
// CEL string), parent's field name: one for each field that is wanted, if
// the object exists; else, if any field is wanted, one that adds the
// object with them. The wanted fields are a map, written once.
func setFields(path, parent, name string, fields []field) string {
	var entries []string
	for _, f := range fields {
		entries = append(entries, fmt.Sprintf("?%s: (%s) ? optional.of(dyn(%s)) : optional.none()", quote(f.name), f.when, f.value))
	}
	return fmt.Sprintf("[{%s}].map(m, has(%s.%s) ? m.map(k, %s) : size(m) > 0 ? [%s] : [])[0]",
		strings.Join(entries, ", "), parent, name, addOp(path+" + '/' + k", "m[k]"), addOp(path, "m"))
}

// addOp is a JSON patch operation that adds value at path.
func addOp(path, value string) string {
	// CEL's literals hold one type: dyn here.
	return fmt.Sprintf("{'op': dyn('add'), 'path': dyn(%s), 'value': dyn(%s)}", path, value)
}

// containerFields are a container's defaults, as its conditions read
// them: `c` is the container.
func (g celGen) containerFields() []field {
	s := g.spec
	var sc []field
	if s.RunAsUser.Rule == policy.RunAsUserStrategyMustRunAs {
		sc = append(sc, field{"runAsUser", fmt.Sprintf("%s && !%s.hasValue()", linux, effective("runAsUser")), fmt.Sprint(s.RunAsUser.Ranges[0].Min)})
	}
	if s.RunAsGroup != nil && s.RunAsGroup.Rule == policy.RunAsGroupStrategyMustRunAs {
		sc = append(sc, field{"runAsGroup", fmt.Sprintf("%s && !%s.hasValue()", linux, effective("runAsGroup")), fmt.Sprint(s.RunAsGroup.Ranges[0].Min)})
	}
	// No container's seLinuxOptions: the pod's default is every
	// container's.
	if d := g.annotations[policy.AppArmorDefaultProfileAnnotationKey]; d != "" {
		sc = append(sc, field{"appArmorProfile", fmt.Sprintf("%s && %s == ''", linux, containerAppArmorName()), profileMap(quote(d))})
	}
	annotation := "object.metadata.?annotations[?('container.seccomp.security.alpha.kubernetes.io/' + c.name)].orValue('')"
	sc = append(sc, field{"seccompProfile",
		fmt.Sprintf("%s && !c.?securityContext.?seccompProfile.hasValue() && %s", linux, convertibleProfile(annotation)),
		profileMap(annotation)})
	if s.RunAsUser.Rule == policy.RunAsUserStrategyMustRunAsNonRoot {
		sc = append(sc, field{"runAsNonRoot", fmt.Sprintf("!%s.hasValue() && !%s.hasValue()", effective("runAsNonRoot"), effective("runAsUser")), "true"})
	}
	if s.ReadOnlyRootFilesystem {
		sc = append(sc, field{"readOnlyRootFilesystem", linux + " && !c.?securityContext.?readOnlyRootFilesystem.hasValue()", "true"})
	}
	ape := s.DefaultAllowPrivilegeEscalation
	if ape == nil && s.AllowPrivilegeEscalation != nil && !*s.AllowPrivilegeEscalation {
		ape = s.AllowPrivilegeEscalation
	}
	if ape != nil {
		sc = append(sc, field{"allowPrivilegeEscalation", linux + " && !c.?securityContext.?allowPrivilegeEscalation.hasValue()", fmt.Sprint(*ape)})
	}
	if grows := g.capsGrow(); grows != "" {
		sc = append(sc, field{"capabilities", linux + " && " + grows, g.capabilitiesMap()})
	}
	return sc
}

// capabilitiesMap is a container's capabilities with the policy's added
// and dropped ones, sorted and each once, as Go's capabilities.Generate
// leaves them.
func (g celGen) capabilitiesMap() string {
	s := g.spec
	add, drop := "c.?securityContext.?capabilities.?add.orValue([])", "c.?securityContext.?capabilities.?drop.orValue([])"
	newAdd, newDrop := add, drop
	if len(s.DefaultAddCapabilities) > 0 {
		newAdd = fmt.Sprintf("(%s + %s.filter(x, !(x in %s))).distinct().sort()", add, list(s.DefaultAddCapabilities), drop)
	}
	if len(s.RequiredDropCapabilities) > 0 {
		newDrop = fmt.Sprintf("(%s + %s).distinct().sort()", drop, list(s.RequiredDropCapabilities))
	}
	return fmt.Sprintf("{?'add': size(%s) > 0 ? optional.of(dyn(%s)) : optional.none(), ?'drop': size(%s) > 0 ? optional.of(dyn(%s)) : optional.none()}", newAdd, newAdd, newDrop, newDrop)
}

// convertibleProfile holds when a seccomp annotation's profile name (a CEL
// string) becomes a field: runtime/default, docker/default, unconfined,
// or localhost/ and a name.
func convertibleProfile(name string) string {
	return fmt.Sprintf("(%s in ['runtime/default', 'docker/default', 'unconfined'] || %s.startsWith('localhost/') && size(%s) > 10)", name, name, name)
}

// seLinuxMap is the policy's SELinux options.
func seLinuxMap(o *api.SELinuxOptions) string {
	var entries []string
	for _, f := range [][2]string{{"user", o.User}, {"role", o.Role}, {"type", o.Type}, {"level", o.Level}} {
		if f[1] != "" {
			entries = append(entries, fmt.Sprintf("%s: %s", quote(f[0]), quote(f[1])))
		}
	}
	return "{" + strings.Join(entries, ", ") + "}"
}

// profileMap is a seccomp or AppArmor profile field from a profile name
// (runtime/default, docker/default, unconfined, localhost/NAME).
func profileMap(name string) string {
	return fmt.Sprintf("[%s].map(n, n == 'unconfined' ? {'type': 'Unconfined'} : n.startsWith('localhost/') ? {'type': 'Localhost', 'localhostProfile': n.substring(10)} : {'type': 'RuntimeDefault'})[0]", name)
}
