// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"fmt"
	"math/rand/v2"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/psptesting"
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

// A Subject works its parts out when a policy first needs them, so one
// Subject asked by many policies, in any order, must answer as a fresh
// Subject for each question does: Mutates, Admits and Validate's errors,
// over the property corpus and two policies that check profiles without
// defaulting any, with the policies in their order and reversed.
func TestSubjectAnswersAlikeInAnyOrder(t *testing.T) {
	// Either checks one kind of profile and lets any of the other through.
	checkOnly := func(name, key, value string) *policy.PodSecurityPolicy {
		p := psptesting.Named(psptesting.Permissive(), name)
		p.Annotations = map[string]string{policy.SeccompAllowedProfilesAnnotationKey: policy.SeccompAllowAny, key: value}
		return p
	}
	var providers []*Provider
	for _, psp := range append(propertyPolicies(),
		checkOnly("apparmor-check", policy.AppArmorAllowedProfilesAnnotationKey, "runtime/default"),
		checkOnly("seccomp-check", policy.SeccompAllowedProfilesAnnotationKey, "runtime/default")) {
		pr, err := NewProvider(psp)
		if err != nil {
			t.Fatalf("policy %s: %v", psp.Name, err)
		}
		if pr.defaults != 0 && (psp.Name == "apparmor-check" || psp.Name == "seccomp-check") {
			t.Fatalf("policy %s has defaults", psp.Name)
		}
		providers = append(providers, pr)
	}
	pods := handWrittenPods()
	r := rand.New(rand.NewPCG(2, 36))
	for range 500 {
		pods = append(pods, randomPod(r))
	}
	fresh := func(pod *api.Pod) *Subject { s := NewSubject(pod); return &s }
	failures := 0
	for _, pod := range pods {
		for _, reversed := range []bool{false, true} {
			shared := NewSubject(pod)
			for i := range providers {
				pr := providers[i]
				if reversed {
					pr = providers[len(providers)-1-i]
				}
				mutates, admits := pr.Mutates(fresh(pod)), pr.Admits(fresh(pod))
				errs := pr.Validate(fresh(pod)).ToAggregate()
				if got := pr.Mutates(&shared); got != mutates {
					failures++
					t.Errorf("policy %s (reversed %v): Mutates %v on a shared Subject, %v on a fresh one; pod %s", pr.Name(), reversed, got, mutates, dump(pod))
				}
				if got := pr.Admits(&shared); got != admits {
					failures++
					t.Errorf("policy %s (reversed %v): Admits %v on a shared Subject, %v on a fresh one; pod %s", pr.Name(), reversed, got, admits, dump(pod))
				}
				if got := pr.Validate(&shared).ToAggregate(); fmt.Sprint(got) != fmt.Sprint(errs) {
					failures++
					t.Errorf("policy %s (reversed %v): Validate %v on a shared Subject, %v on a fresh one", pr.Name(), reversed, got, errs)
				}
				if failures > 5 {
					t.Fatal("too many failures")
				}
			}
		}
	}
}

// A policy with no defaults that lets every profile through, like the
// documentation's privileged one, is answered without working out the
// profiles or the unset fields; one with defaults and profile rules works
// them out.
func TestSubjectWorksOutOnlyWhatIsRead(t *testing.T) {
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"kubernetes.io/psp": "privileged"}}}
	pod.Spec.Containers = []api.Container{{Name: "app"}, {Name: "sidecar"}}
	privileged := psptesting.Permissive()
	privileged.Spec.Privileged = true
	privileged.Annotations = map[string]string{policy.SeccompAllowedProfilesAnnotationKey: policy.SeccompAllowAny}
	for _, tc := range []struct {
		psp  *policy.PodSecurityPolicy
		want subjectParts
	}{
		{privileged, annotationPart},
		{psptesting.Restrictive(), annotationPart | unsetPart | profilesPart},
	} {
		pr, err := NewProvider(tc.psp)
		if err != nil {
			t.Fatal(err)
		}
		s := NewSubject(pod)
		pr.Mutates(&s)
		pr.Admits(&s)
		if s.known != tc.want {
			t.Errorf("policy %s: worked out %03b, want %03b", pr.Name(), s.known, tc.want)
		}
	}
}
