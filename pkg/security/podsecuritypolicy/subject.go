package podsecuritypolicy

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/core/pods"

	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/apparmor"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/seccomp"
)

// Subject is a pod as every provider reads it: the field paths and
// effective profiles that do not depend on the policy are worked out once
// per request, not once per policy. It must be rebuilt when the pod changes.
type Subject struct {
	Pod        *api.Pod
	seccomp    string
	containers []container
}

// container is one init, regular or ephemeral container of a Subject.
type container struct {
	*api.Container
	path, scPath *field.Path
	seccomp      string
	seccompPath  *field.Path
	apparmor     string
	apparmorPath *field.Path
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

// NewSubject prepares pod for the providers.
func NewSubject(pod *api.Pod) *Subject {
	s := &Subject{
		Pod:        pod,
		seccomp:    seccomp.PodProfile(pod),
		containers: make([]container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers)+len(pod.Spec.EphemeralContainers)),
	}
	pods.VisitContainersWithPath(&pod.Spec, field.NewPath("spec"), func(c *api.Container, path *field.Path) bool {
		s.containers = append(s.containers, container{
			Container:    c,
			path:         path,
			scPath:       path.Child("securityContext"),
			seccomp:      seccomp.ContainerProfile(pod, c.Name, c.SecurityContext),
			seccompPath:  annotations.Key(api.SeccompContainerAnnotationKeyPrefix + c.Name),
			apparmor:     apparmor.ContainerProfile(pod, c.Name, c.SecurityContext),
			apparmorPath: annotations.Key(api.DeprecatedAppArmorAnnotationKeyPrefix + c.Name),
		})
		return true
	})
	return s
}

// isWindows reports whether the pod declares the Windows OS, where the
// Linux-only security fields are forbidden.
func isWindows(pod *api.Pod) bool {
	return pod.Spec.OS != nil && pod.Spec.OS.Name == api.Windows
}
