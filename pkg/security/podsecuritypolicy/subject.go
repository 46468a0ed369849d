// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/apparmor"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/seccomp"
)

// Subject is a pod as every provider reads it: the field paths and
// effective profiles that do not depend on the policy are worked out once
// per request, not once per policy. It must be rebuilt when the pod changes.
//
// What only some policies read is worked out on first use: the profiles
// (read by policies that restrict seccomp or AppArmor), the unset fields
// (by policies with defaults), and whether a seccomp annotation is copied
// (by Mutates). A Validate of a pod admitted by a policy like the
// documentation's privileged one, which has no defaults and restricts no
// profile, then reads none of them. Building Subjects was a quarter of the
// plugin's CPU in a loaded apiserver's profile; worked out on first use,
// a fifth less (much of the rest is the first read of the pod's
// containers, which moves to whoever reads them first).
//
// A Subject is a value that its caller keeps on its stack: in a loaded
// apiserver's profiles, allocating the two heap objects it was (the
// Subject and its containers) was a ninth of the plugin's CPU. So it
// holds up to inlineContainers containers in an array, and holds no
// pointer into itself (which would move it to the heap): containers
// slices the array when asked.
type Subject struct {
	Pod   *api.Pod
	linux bool
	// known are the parts worked out so far.
	known subjectParts
	// seccomp is the pod's effective seccomp profile (profilesPart).
	seccomp string
	// unset are the fields that a policy's defaults would fill: the
	// pod's, and each container's where any container leaves it unset
	// (unsetPart). Provider.Mutates reads them instead of the pod.
	unset defaultedFields
	// seccompFromAnnotation is set when every policy would copy a
	// deprecated seccomp annotation (the pod's or a container's) into
	// its field (annotationPart).
	seccompFromAnnotation bool
	// The init, regular and ephemeral containers, in that order: the
	// first n in inline, or all of them in more when they do not fit.
	n      int
	inline [inlineContainers]container
	more   []container
}

// subjectParts are the parts of a Subject worked out on first use.
type subjectParts uint8

const (
	profilesPart   subjectParts = 1 << iota // seccomp, and each container's seccomp and apparmor
	unsetPart                               // unset
	annotationPart                          // seccompFromAnnotation
)

// inlineContainers is how many containers a Subject holds without an
// allocation: an init container and three others, as the benchmarks' pod.
const inlineContainers = 4

// containers are the pod's containers, in the order v1.24 checked them.
func (s *Subject) containers() []container {
	if s.more != nil {
		return s.more
	}
	return s.inline[:s.n]
}

// defaultedFields is a set of the fields that policies default: a
// Subject's are those the pod leaves unset, a Provider's those its
// defaults fill. A policy changes a pod when the two sets meet, or when it
// changes a container's capabilities (Provider.Mutates). The container
// fields stand for the field in any of the pod's containers; runAsUser,
// runAsGroup and runAsNonRoot are unset when neither the container nor the
// pod sets them. A container's seLinuxOptions needs no field of its own:
// it is defaulted only when the pod's is unset too, and a policy that
// defaults one defaults both. All but the runtime class and runAsNonRoot
// are defaulted on Linux only.
type defaultedFields uint16

const (
	supplementalGroupsField defaultedFields = 1 << iota
	fsGroupField
	seLinuxField
	seccompField
	runtimeClassField
	runAsUserField
	runAsGroupField
	appArmorField
	runAsNonRootField // runAsNonRoot, when runAsUser is unset too
	readOnlyRootFilesystemField
	allowPrivilegeEscalationField
	// capabilitiesField is a Provider's only: it adds or requires
	// dropping capabilities, which Mutates checks container by container.
	capabilitiesField
)

// container is one init, regular or ephemeral container of a Subject.
type container struct {
	*api.Container
	path, scPath *field.Path
	// The effective profiles, once Subject.profiles has run.
	seccomp  string
	apparmor string
}

// seccompPath and apparmorPath are where the container's deprecated
// profile annotations are, for errors only: built when an error is.
func (c *container) seccompPath() *field.Path {
	return annotations.Key(api.SeccompContainerAnnotationKeyPrefix + c.Name)
}

func (c *container) apparmorPath() *field.Path {
	return annotations.Key(api.DeprecatedAppArmorAnnotationKeyPrefix + c.Name)
}

// Paths of the pod-level fields, shared by every request.
var (
	podSCPath        = field.NewPath("spec", "securityContext")
	sysctlsPath      = podSCPath.Child("sysctls")
	annotations      = field.NewPath("pod", "metadata", "annotations")
	seccompPod       = annotations.Key(api.SeccompPodAnnotationKey)
	runtimeClassPath = field.NewPath("spec", "runtimeClassName")
	fsGroupPath      = podSCPath.Child("fsGroup")
	suppGroupPath    = podSCPath.Child("supplementalGroups")
)

// containerLists are the pod's three lists of containers, in the order
// v1.24 checked them; sharedPaths holds the paths of their first
// containers, built once: they are read only for errors, and building them
// for every pod was most of a Subject's allocations.
var containerLists = [...]string{"initContainers", "containers", "ephemeralContainers"}

const sharedPathsPerList = 8

var sharedPaths = func() (paths [len(containerLists)][sharedPathsPerList][2]*field.Path) {
	for l, list := range containerLists {
		for i := range sharedPathsPerList {
			path := field.NewPath("spec", list).Index(i)
			paths[l][i] = [2]*field.Path{path, path.Child("securityContext")}
		}
	}
	return paths
}()

// containerPaths are the path of container i of list l and of its
// securityContext.
func containerPaths(l, i int) (path, scPath *field.Path) {
	if i < sharedPathsPerList {
		return sharedPaths[l][i][0], sharedPaths[l][i][1]
	}
	path = field.NewPath("spec", containerLists[l]).Index(i)
	return path, path.Child("securityContext")
}

// NewSubject prepares pod for the providers. Callers pass the providers
// its address, and keep the value on their stack.
func NewSubject(pod *api.Pod) Subject {
	spec := &pod.Spec
	s := Subject{Pod: pod, linux: !isWindows(pod)}
	if n := len(spec.InitContainers) + len(spec.Containers) + len(spec.EphemeralContainers); n > inlineContainers {
		s.more = make([]container, 0, n)
	}
	add := func(l, i int, c *api.Container) {
		path, scPath := containerPaths(l, i)
		ctr := container{Container: c, path: path, scPath: scPath}
		if s.more != nil {
			s.more = append(s.more, ctr)
		} else {
			s.inline[s.n] = ctr
			s.n++
		}
	}
	for i := range spec.InitContainers {
		add(0, i, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		add(1, i, &spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		add(2, i, (*api.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return s
}

// profiles works out the effective seccomp profiles of the pod and its
// containers, and their AppArmor profiles, once.
func (s *Subject) profiles() {
	if s.known&profilesPart != 0 {
		return
	}
	s.known |= profilesPart
	pod := s.Pod
	s.seccomp = seccomp.PodProfile(pod)
	containers := s.containers()
	for i := range containers {
		c := &containers[i]
		c.seccomp = seccomp.ContainerProfile(pod, c.Name, c.SecurityContext)
		c.apparmor = apparmor.ContainerProfile(pod, c.Name, c.SecurityContext)
	}
}

// unsetFields returns the fields that a policy's defaults would fill,
// worked out once. It is small enough to be inlined in Mutates, which is
// asked of many policies; workOutUnset is not.
func (s *Subject) unsetFields() defaultedFields {
	if s.known&unsetPart == 0 {
		s.workOutUnset()
	}
	return s.unset
}

func (s *Subject) workOutUnset() {
	s.known |= unsetPart
	pod := s.Pod
	psc := pod.Spec.SecurityContext
	if s.linux {
		if psc == nil || psc.SupplementalGroups == nil {
			s.unset |= supplementalGroupsField
		}
		if psc == nil || psc.FSGroup == nil {
			s.unset |= fsGroupField
		}
		if psc == nil || psc.SELinuxOptions == nil {
			s.unset |= seLinuxField
		}
		if !seccomp.PodHasProfile(pod) {
			s.unset |= seccompField
		}
	}
	if pod.Spec.RuntimeClassName == nil {
		s.unset |= runtimeClassField
	}
	containers := s.containers()
	for i := range containers {
		s.unset |= containers[i].unset(pod, s.linux)
	}
}

// copiesSeccompAnnotation reports, worked out once, whether every policy
// would copy a deprecated seccomp annotation into its field.
func (s *Subject) copiesSeccompAnnotation() bool {
	if s.known&annotationPart == 0 {
		s.workOutAnnotation()
	}
	return s.seccompFromAnnotation
}

func (s *Subject) workOutAnnotation() {
	s.known |= annotationPart
	pod := s.Pod
	if !s.linux || len(pod.Annotations) == 0 {
		return
	}
	s.seccompFromAnnotation = seccomp.PodAnnotationField(pod) != nil
	containers := s.containers()
	for i := range containers {
		if s.seccompFromAnnotation {
			break
		}
		c := &containers[i]
		s.seccompFromAnnotation = seccomp.ContainerAnnotationField(pod, c.Name, c.SecurityContext) != nil
	}
}

// unset returns the container fields that the container leaves unset,
// of those policies default on the pod's OS (linux or not).
func (c *container) unset(pod *api.Pod, linux bool) defaultedFields {
	sc, psc := c.SecurityContext, pod.Spec.SecurityContext
	var unset defaultedFields
	if effective(sc, psc, runAsNonRoot) == nil && effective(sc, psc, runAsUser) == nil {
		unset |= runAsNonRootField
	}
	if !linux {
		return unset
	}
	if effective(sc, psc, runAsUser) == nil {
		unset |= runAsUserField
	}
	if effective(sc, psc, runAsGroup) == nil {
		unset |= runAsGroupField
	}
	if !apparmor.ContainerHasProfile(pod, c.Name, sc) {
		unset |= appArmorField
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil {
		unset |= readOnlyRootFilesystemField
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil {
		unset |= allowPrivilegeEscalationField
	}
	return unset
}

// isWindows reports whether the pod declares the Windows OS, where the
// Linux-only security fields are forbidden.
func isWindows(pod *api.Pod) bool {
	return pod.Spec.OS != nil && pod.Spec.OS.Name == api.Windows
}
