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
// A Subject is a value that its caller keeps on its stack: in a loaded
// apiserver's profiles, allocating the two heap objects it was (the
// Subject and its containers) was a ninth of the plugin's CPU. So it
// holds up to inlineContainers containers in an array, and holds no
// pointer into itself (which would move it to the heap): containers
// slices the array when asked.
type Subject struct {
	Pod     *api.Pod
	seccomp string
	linux   bool
	// unset are the fields that a policy's defaults would fill: the
	// pod's, and each container's where any container leaves it unset;
	// seccompFromAnnotation is set when every policy would copy a
	// deprecated seccomp annotation (the pod's or a container's) into
	// its field. Provider.Mutates reads them instead of the pod.
	unset                 defaultedFields
	seccompFromAnnotation bool
	// The init, regular and ephemeral containers, in that order: the
	// first n in inline, or all of them in more when they do not fit.
	n      int
	inline [inlineContainers]container
	more   []container
}

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
	seccomp      string
	apparmor     string
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
	s := Subject{
		Pod:     pod,
		seccomp: seccomp.PodProfile(pod),
	}
	if n := len(spec.InitContainers) + len(spec.Containers) + len(spec.EphemeralContainers); n > inlineContainers {
		s.more = make([]container, 0, n)
	}
	s.linux = !isWindows(pod)
	if psc := spec.SecurityContext; s.linux {
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
		s.seccompFromAnnotation = seccomp.PodAnnotationField(pod) != nil
	}
	if spec.RuntimeClassName == nil {
		s.unset |= runtimeClassField
	}
	add := func(l, i int, c *api.Container) {
		path, scPath := containerPaths(l, i)
		ctr := container{
			Container: c,
			path:      path,
			scPath:    scPath,
			seccomp:   seccomp.ContainerProfile(pod, c.Name, c.SecurityContext),
			apparmor:  apparmor.ContainerProfile(pod, c.Name, c.SecurityContext),
		}
		if s.more != nil {
			s.more = append(s.more, ctr)
		} else {
			s.inline[s.n] = ctr
			s.n++
		}
		s.unset |= ctr.unset(spec.SecurityContext, s.linux)
		if s.linux && seccomp.ContainerAnnotationField(pod, c.Name, c.SecurityContext) != nil {
			s.seccompFromAnnotation = true
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

// unset returns the container fields that the container leaves unset,
// of those policies default on the pod's OS (linux or not).
func (c *container) unset(psc *api.PodSecurityContext, linux bool) defaultedFields {
	sc := c.SecurityContext
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
	// c.apparmor is the annotation's profile when neither field is set:
	// apparmor.ContainerHasProfile, without a second look-up.
	if c.apparmor == "" && (sc == nil || sc.AppArmorProfile == nil) && (psc == nil || psc.AppArmorProfile == nil) {
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
