package podsecuritypolicy

import (
	"fmt"
	"testing"

	api "k8s.io/kubernetes/pkg/apis/core"
)

// The shared paths of the first containers, and those built for the rest,
// are the paths upstream's visitor would give, in every list; and a
// Subject keeps every container, in order, whether they fit in its array
// (one container in each list) or not.
func TestSubjectPaths(t *testing.T) {
	for _, n := range []int{1, sharedPathsPerList + 2} {
		t.Run(fmt.Sprint(3*n, " containers"), func(t *testing.T) { testSubjectPaths(t, n) })
	}
}

// testSubjectPaths checks a pod with n containers in each list.
func testSubjectPaths(t *testing.T, n int) {
	pod := &api.Pod{}
	for i := range n {
		name := fmt.Sprint("c", i)
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, api.Container{Name: name})
		pod.Spec.Containers = append(pod.Spec.Containers, api.Container{Name: name})
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, api.EphemeralContainer{EphemeralContainerCommon: api.EphemeralContainerCommon{Name: name}})
	}
	s := NewSubject(pod)
	if inline := 3*n <= inlineContainers; inline != (s.more == nil) {
		t.Errorf("%d containers: held in the array %v, want %v", 3*n, s.more == nil, inline)
	}
	if len(s.containers()) != 3*n {
		t.Fatalf("%d containers, want %d", len(s.containers()), 3*n)
	}
	for j, c := range s.containers() {
		list, i := containerLists[j/n], j%n
		want := fmt.Sprintf("spec.%s[%d]", list, i)
		if c.path.String() != want || c.scPath.String() != want+".securityContext" {
			t.Errorf("container %d of %s: paths %s and %s, want %s", i, list, c.path, c.scPath, want)
		}
		if c.Name != fmt.Sprint("c", i) {
			t.Errorf("container %d of %s is %s", i, list, c.Name)
		}
		if got, want := c.seccompPath().String(), "pod.metadata.annotations[container.seccomp.security.alpha.kubernetes.io/"+c.Name+"]"; got != want {
			t.Errorf("seccomp path %s, want %s", got, want)
		}
		if got, want := c.apparmorPath().String(), "pod.metadata.annotations[container.apparmor.security.beta.kubernetes.io/"+c.Name+"]"; got != want {
			t.Errorf("AppArmor path %s, want %s", got, want)
		}
	}
}
