// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/lineapi"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy/psptesting"
)

// TestMutatesAgreesWithMutatePod is a property test: for every pod of a
// corpus and every policy of a set, Mutates must be true exactly when
// MutatePod changes a copy of the pod (by equality.Semantic, as v1.24
// compared), because the admission plugin skips the copy when Mutates says
// no. It also checks that Mutates leaves the pod alone and that MutatePod
// is idempotent (Validate after Admit relies on the admitted pod needing no
// more defaults).
func TestMutatesAgreesWithMutatePod(t *testing.T) {
	policies := propertyPolicies()
	providers := make([]*Provider, len(policies))
	for i, psp := range policies {
		pr, err := NewProvider(psp)
		if err != nil {
			t.Fatalf("policy %s: %v", psp.Name, err)
		}
		providers[i] = pr
	}
	pods := handWrittenPods()
	r := rand.New(rand.NewPCG(1, 36))
	for range 1500 {
		pods = append(pods, randomPod(r))
	}

	failures, mutating := 0, 0
	for _, pod := range pods {
		for _, pr := range providers {
			if msg := checkMutates(pr, pod); msg != "" {
				failures++
				if failures <= 5 {
					t.Errorf("policy %s: %s\npod: %s", pr.Name(), msg, dump(pod))
				}
			} else if s := NewSubject(pod); pr.Mutates(&s) {
				mutating++
			}
		}
	}
	if failures > 5 {
		t.Errorf("%d failures in all", failures)
	}
	// The corpus must exercise both answers, or the property says little.
	total := len(pods) * len(providers)
	if mutating < total/10 || mutating > total*9/10 {
		t.Errorf("%d of %d pod/policy pairs mutate; the corpus is lopsided", mutating, total)
	}
	t.Logf("%d pods × %d policies, %d pairs mutate", len(pods), len(providers), mutating)
}

// checkMutates returns what is wrong for one pair, or "".
func checkMutates(pr *Provider, pod *api.Pod) string {
	before := pod.DeepCopy()
	s := NewSubject(pod)
	says := pr.Mutates(&s)
	if !reflect.DeepEqual(before, pod) {
		return "Mutates changed the pod"
	}
	mutated := pod.DeepCopy()
	pr.MutatePod(mutated)
	if changed := !apiequality.Semantic.DeepEqual(pod, mutated); changed != says {
		return fmt.Sprintf("Mutates = %v but MutatePod changed the pod: %v\nmutated: %s", says, changed, dump(mutated))
	}
	if ms := NewSubject(mutated); pr.Mutates(&ms) {
		return fmt.Sprintf("Mutates is true for MutatePod's output: %s", dump(mutated))
	}
	again := mutated.DeepCopy()
	pr.MutatePod(again)
	if !reflect.DeepEqual(mutated, again) {
		return fmt.Sprintf("MutatePod is not idempotent:\nonce:  %s\ntwice: %s", dump(mutated), dump(again))
	}
	return ""
}

func dump(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// propertyPolicies are the conformance fixtures and variants that default
// every field MutatePod can write, alone and together, including policies
// the API would refuse but a provider accepts (overlapping capability
// lists, duplicates).
func propertyPolicies() []*policy.PodSecurityPolicy {
	variant := func(name string, base func() *policy.PodSecurityPolicy, edit func(*policy.PodSecurityPolicy)) *policy.PodSecurityPolicy {
		p := psptesting.Named(base(), name)
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		edit(p)
		return p
	}
	caps := func(l ...api.Capability) []api.Capability { return l }
	ranges := []policy.IDRange{{Min: 5, Max: 10}, {Min: 999, Max: 999}}
	everything := func(p *policy.PodSecurityPolicy) {
		p.Spec.DefaultAddCapabilities = caps("foo", "NET_BIND_SERVICE")
		p.Spec.RequiredDropCapabilities = caps("NET_RAW")
		p.Spec.ReadOnlyRootFilesystem = true
		p.Spec.DefaultAllowPrivilegeEscalation = ptr.To(false)
		p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"*"}, DefaultRuntimeClassName: ptr.To("foo")}
		p.Annotations[policy.SeccompDefaultProfileAnnotationKey] = "runtime/default"
		p.Annotations[policy.AppArmorDefaultProfileAnnotationKey] = "runtime/default"
	}
	return []*policy.PodSecurityPolicy{
		psptesting.Restrictive(),
		psptesting.Permissive(),
		variant("nonroot", psptesting.Permissive, func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsUser = policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAsNonRoot}
		}),
		variant("user-ranges", psptesting.Permissive, func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsUser = policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAs, Ranges: ranges}
		}),
		variant("group-must", psptesting.Permissive, func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyMustRunAs, Ranges: ranges}
		}),
		variant("may", psptesting.Permissive, func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyMayRunAs, Ranges: ranges}
			p.Spec.FSGroup = policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMayRunAs, Ranges: ranges}
			p.Spec.SupplementalGroups = policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMayRunAs, Ranges: ranges}
		}),
		variant("no-run-as-group", psptesting.Permissive, func(p *policy.PodSecurityPolicy) { p.Spec.RunAsGroup = nil }),
		variant("host-network-and-pid", psptesting.Permissive, func(p *policy.PodSecurityPolicy) { p.Spec.HostIPC = false }),
		variant("fsgroup-must", psptesting.Permissive, func(p *policy.PodSecurityPolicy) {
			p.Spec.FSGroup = policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMustRunAs, Ranges: ranges}
		}),
		variant("supplemental-must", psptesting.Permissive, func(p *policy.PodSecurityPolicy) {
			p.Spec.SupplementalGroups = policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMustRunAs, Ranges: ranges}
		}),
		variant("selinux-empty", psptesting.Permissive, func(p *policy.PodSecurityPolicy) {
			p.Spec.SELinux = policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyMustRunAs, SELinuxOptions: &api.SELinuxOptions{}}
		}),
		variant("default-add", psptesting.Permissive, func(p *policy.PodSecurityPolicy) { p.Spec.DefaultAddCapabilities = caps("foo", "NET_BIND_SERVICE") }),
		variant("default-add-duplicates", psptesting.Permissive, func(p *policy.PodSecurityPolicy) { p.Spec.DefaultAddCapabilities = caps("foo", "foo") }),
		variant("required-drop", psptesting.Restrictive, func(p *policy.PodSecurityPolicy) { p.Spec.RequiredDropCapabilities = caps("NET_RAW", "foo") }),
		variant("add-and-drop-overlap", psptesting.Restrictive, func(p *policy.PodSecurityPolicy) {
			p.Spec.DefaultAddCapabilities, p.Spec.RequiredDropCapabilities = caps("foo", "bar"), caps("foo")
		}),
		variant("read-only-root", psptesting.Permissive, func(p *policy.PodSecurityPolicy) { p.Spec.ReadOnlyRootFilesystem = true }),
		variant("dape-true", psptesting.Permissive, func(p *policy.PodSecurityPolicy) { p.Spec.DefaultAllowPrivilegeEscalation = ptr.To(true) }),
		variant("dape-false", psptesting.Permissive, func(p *policy.PodSecurityPolicy) { p.Spec.DefaultAllowPrivilegeEscalation = ptr.To(false) }),
		variant("ape-false", psptesting.Permissive, func(p *policy.PodSecurityPolicy) { p.Spec.AllowPrivilegeEscalation = ptr.To(false) }),
		variant("ape-nil", psptesting.Permissive, func(p *policy.PodSecurityPolicy) { p.Spec.AllowPrivilegeEscalation = nil }),
		variant("seccomp-runtime", psptesting.Permissive, func(p *policy.PodSecurityPolicy) {
			p.Annotations[policy.SeccompDefaultProfileAnnotationKey] = "runtime/default"
		}),
		variant("seccomp-localhost", psptesting.Permissive, func(p *policy.PodSecurityPolicy) {
			p.Annotations[policy.SeccompDefaultProfileAnnotationKey] = "localhost/x.json"
			p.Annotations[policy.SeccompAllowedProfilesAnnotationKey] = "localhost/x.json,runtime/default"
		}),
		variant("apparmor-runtime", psptesting.Permissive, func(p *policy.PodSecurityPolicy) {
			p.Annotations[policy.AppArmorDefaultProfileAnnotationKey] = "runtime/default"
		}),
		variant("apparmor-localhost", psptesting.Permissive, func(p *policy.PodSecurityPolicy) {
			p.Annotations[policy.AppArmorDefaultProfileAnnotationKey] = "localhost/foo"
			p.Annotations[policy.AppArmorAllowedProfilesAnnotationKey] = "localhost/foo"
		}),
		variant("runtime-class", psptesting.Permissive, func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"foo"}, DefaultRuntimeClassName: ptr.To("foo")}
		}),
		variant("runtime-class-empty-default", psptesting.Permissive, func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"*"}, DefaultRuntimeClassName: ptr.To("")}
		}),
		variant("runtime-class-no-default", psptesting.Permissive, func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{}
		}),
		variant("everything", psptesting.Restrictive, everything),
		variant("everything-nonroot", psptesting.Restrictive, func(p *policy.PodSecurityPolicy) {
			everything(p)
			p.Spec.RunAsUser = policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAsNonRoot}
		}),
	}
}

// handWrittenPods are the edge cases: nil versus empty security contexts
// and lists, capability duplicates and case, annotations without a value,
// profiles a field cannot name, Windows, containers of every kind.
func handWrittenPods() []*api.Pod {
	pod := func(edit func(*api.Pod)) *api.Pod {
		p := psptesting.GoodPod()
		edit(p)
		return p
	}
	c0 := func(p *api.Pod) *api.SecurityContext { return p.Spec.Containers[0].SecurityContext }
	return []*api.Pod{
		psptesting.GoodPod(),
		pod(func(p *api.Pod) { p.Spec.SecurityContext, p.Spec.Containers[0].SecurityContext = nil, nil }),
		pod(func(p *api.Pod) { p.Spec.Containers = nil }),
		pod(func(p *api.Pod) { p.Spec.SecurityContext.SupplementalGroups = []int64{} }),
		pod(func(p *api.Pod) { c0(p).Capabilities = &api.Capabilities{} }),
		pod(func(p *api.Pod) {
			c0(p).Capabilities = &api.Capabilities{Add: []api.Capability{}, Drop: []api.Capability{}}
		}),
		pod(func(p *api.Pod) {
			c0(p).Capabilities = &api.Capabilities{Add: []api.Capability{"foo", "foo", "NET_BIND_SERVICE"}, Drop: []api.Capability{"NET_RAW", "NET_RAW"}}
		}),
		pod(func(p *api.Pod) {
			c0(p).Capabilities = &api.Capabilities{Add: []api.Capability{"FOO"}, Drop: []api.Capability{"ALL"}}
		}),
		pod(func(p *api.Pod) {
			c0(p).Capabilities = &api.Capabilities{Drop: []api.Capability{"foo", "bar", "NET_RAW"}}
		}),
		pod(func(p *api.Pod) {
			p.Annotations = map[string]string{
				api.SeccompPodAnnotationKey:                          "",
				api.SeccompContainerAnnotationKeyPrefix + "test-c":   "",
				api.DeprecatedAppArmorAnnotationKeyPrefix + "test-c": "",
			}
		}),
		pod(func(p *api.Pod) {
			p.Spec.SecurityContext.SeccompProfile = &api.SeccompProfile{Type: api.SeccompProfileTypeLocalhost}
			c0(p).AppArmorProfile = &api.AppArmorProfile{Type: api.AppArmorProfileTypeLocalhost}
		}),
		pod(func(p *api.Pod) {
			p.Spec.SecurityContext.AppArmorProfile = &api.AppArmorProfile{Type: api.AppArmorProfileTypeUnconfined}
		}),
		pod(func(p *api.Pod) { p.Spec.OS = &api.PodOS{Name: api.Windows} }),
		pod(func(p *api.Pod) {
			p.Spec.OS = &api.PodOS{Name: api.Windows}
			p.Spec.SecurityContext = nil
			p.Spec.Containers[0].SecurityContext = nil
			p.Spec.RuntimeClassName = ptr.To("")
		}),
		pod(func(p *api.Pod) {
			p.Spec.SecurityContext.RunAsUser = ptr.To[int64](999)
			p.Spec.SecurityContext.RunAsGroup = ptr.To[int64](999)
			p.Spec.SecurityContext.RunAsNonRoot = ptr.To(true)
			p.Spec.SecurityContext.SELinuxOptions = &api.SELinuxOptions{}
		}),
		pod(func(p *api.Pod) {
			p.Spec.InitContainers = []api.Container{{Name: "init"}}
			p.Spec.EphemeralContainers = []api.EphemeralContainer{{EphemeralContainerCommon: api.EphemeralContainerCommon{Name: "debug"}}}
		}),
		pod(func(p *api.Pod) {
			p.Spec.Containers = nil
			p.Spec.EphemeralContainers = []api.EphemeralContainer{{EphemeralContainerCommon: api.EphemeralContainerCommon{Name: "debug", SecurityContext: &api.SecurityContext{}}}}
		}),
	}
}

// randomPod draws a pod whose security-relevant fields are each unset,
// empty or set to a value the policies above default, accept or refuse.
func randomPod(r *rand.Rand) *api.Pod {
	pod := &api.Pod{}
	pod.Namespace = "ns"
	pod.Spec.ServiceAccountName = "default"
	switch r.IntN(4) {
	case 1:
		pod.Spec.OS = &api.PodOS{Name: api.Linux}
	case 2:
		pod.Spec.OS = &api.PodOS{Name: api.Windows}
	}
	pod.Spec.RuntimeClassName = oneOf(r, nil, ptr.To(""), ptr.To("foo"), ptr.To("bar"))
	setRandomPodSC(r, &pod.Spec)

	var names []string
	add := func(prefix string, n int, to func(api.Container)) {
		for i := range n {
			c := api.Container{Name: fmt.Sprintf("%s%d", prefix, i), Image: "image", SecurityContext: randomSC(r)}
			names = append(names, c.Name)
			to(c)
		}
	}
	add("c", r.IntN(3), func(c api.Container) { pod.Spec.Containers = append(pod.Spec.Containers, c) })
	add("i", r.IntN(2), func(c api.Container) { pod.Spec.InitContainers = append(pod.Spec.InitContainers, c) })
	add("e", r.IntN(2), func(c api.Container) {
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, api.EphemeralContainer{EphemeralContainerCommon: api.EphemeralContainerCommon(c)})
	})

	switch r.IntN(3) {
	case 1:
		pod.Annotations = map[string]string{}
	case 2:
		pod.Annotations = map[string]string{}
		if r.IntN(2) == 0 {
			pod.Annotations[api.SeccompPodAnnotationKey] = oneOf(r, "", "runtime/default", "localhost/x.json", "foo")
		}
		for _, n := range names {
			if r.IntN(2) == 0 {
				pod.Annotations[api.DeprecatedAppArmorAnnotationKeyPrefix+n] = oneOf(r, "", "runtime/default", "localhost/foo", "unconfined")
			}
			if r.IntN(3) == 0 {
				pod.Annotations[api.SeccompContainerAnnotationKeyPrefix+n] = oneOf(r, "", "runtime/default", "foo")
			}
		}
	}
	return pod
}

// setRandomPodSC gives the pod a random security context, and sometimes
// some of the host namespaces.
func setRandomPodSC(r *rand.Rand, spec *api.PodSpec) {
	switch r.IntN(4) {
	case 0:
		return
	case 1:
		spec.SecurityContext = &api.PodSecurityContext{}
		return
	}
	sc := &api.PodSecurityContext{}
	spec.SecurityContext = sc
	maybe(r, func() { sc.RunAsUser = oneOf(r, ptr.To[int64](0), ptr.To[int64](5), ptr.To[int64](999)) })
	maybe(r, func() { sc.RunAsGroup = oneOf(r, ptr.To[int64](0), ptr.To[int64](999)) })
	maybe(r, func() { sc.RunAsNonRoot = ptr.To(r.IntN(2) == 0) })
	maybe(r, func() { sc.FSGroup = oneOf(r, ptr.To[int64](1), ptr.To[int64](999)) })
	maybe(r, func() { sc.SupplementalGroups = oneOf(r, []int64{}, []int64{1}, []int64{999}, []int64{5, 999}) })
	maybe(r, func() { sc.SELinuxOptions = randomSELinux(r) })
	maybe(r, func() { sc.SeccompProfile = randomSeccomp(r) })
	maybe(r, func() { sc.AppArmorProfile = randomAppArmor(r) })
	maybe(r, func() { sc.Sysctls = []api.Sysctl{{Name: "net/ipv4/ip_local_port_range", Value: "1024 65535"}} })
	maybe(r, func() {
		lineapi.SetPodHostNamespaces(spec, lineapi.HostNamespaces{Network: r.IntN(2) == 0, PID: r.IntN(2) == 0, IPC: r.IntN(2) == 0})
	})
}

func randomSC(r *rand.Rand) *api.SecurityContext {
	switch r.IntN(4) {
	case 0:
		return nil
	case 1:
		return &api.SecurityContext{}
	}
	sc := &api.SecurityContext{}
	maybe(r, func() { sc.RunAsUser = oneOf(r, ptr.To[int64](0), ptr.To[int64](5), ptr.To[int64](999)) })
	maybe(r, func() { sc.RunAsGroup = oneOf(r, ptr.To[int64](0), ptr.To[int64](999)) })
	maybe(r, func() { sc.RunAsNonRoot = ptr.To(r.IntN(2) == 0) })
	maybe(r, func() { sc.SELinuxOptions = randomSELinux(r) })
	maybe(r, func() { sc.Capabilities = randomCaps(r) })
	maybe(r, func() { sc.ReadOnlyRootFilesystem = ptr.To(r.IntN(2) == 0) })
	maybe(r, func() { sc.AllowPrivilegeEscalation = ptr.To(r.IntN(2) == 0) })
	maybe(r, func() { sc.Privileged = ptr.To(r.IntN(2) == 0) })
	maybe(r, func() { sc.ProcMount = ptr.To(oneOf(r, api.DefaultProcMount, api.UnmaskedProcMount)) })
	maybe(r, func() { sc.SeccompProfile = randomSeccomp(r) })
	maybe(r, func() { sc.AppArmorProfile = randomAppArmor(r) })
	return sc
}

func randomCaps(r *rand.Rand) *api.Capabilities {
	names := []api.Capability{"foo", "FOO", "bar", "NET_RAW", "NET_BIND_SERVICE", "ALL"}
	list := func() []api.Capability {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return []api.Capability{}
		}
		var l []api.Capability
		for range 1 + r.IntN(4) { // duplicates welcome
			l = append(l, names[r.IntN(len(names))])
		}
		return l
	}
	return &api.Capabilities{Add: list(), Drop: list()}
}

func randomSELinux(r *rand.Rand) *api.SELinuxOptions {
	return oneOf(r, &api.SELinuxOptions{}, &api.SELinuxOptions{Level: "s9:z0,z1"}, &api.SELinuxOptions{Level: "s9:z1,z0"}, &api.SELinuxOptions{User: "u"})
}

func randomSeccomp(r *rand.Rand) *api.SeccompProfile {
	return oneOf(r,
		&api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault},
		&api.SeccompProfile{Type: api.SeccompProfileTypeUnconfined},
		&api.SeccompProfile{Type: api.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("x.json")},
		&api.SeccompProfile{Type: api.SeccompProfileTypeLocalhost})
}

func randomAppArmor(r *rand.Rand) *api.AppArmorProfile {
	return oneOf(r,
		&api.AppArmorProfile{Type: api.AppArmorProfileTypeRuntimeDefault},
		&api.AppArmorProfile{Type: api.AppArmorProfileTypeUnconfined},
		&api.AppArmorProfile{Type: api.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("foo")},
		&api.AppArmorProfile{Type: api.AppArmorProfileTypeLocalhost})
}

// maybe runs f one time in three.
func maybe(r *rand.Rand, f func()) {
	if r.IntN(3) == 0 {
		f()
	}
}

func oneOf[T any](r *rand.Rand, choices ...T) T {
	return choices[r.IntN(len(choices))]
}

// TestLenientChecksChangeNothing is a property test of the checks a
// Provider skips because the policy cannot fail them (lenient): for every
// pod of the corpus and every policy of the set, Validate must return the
// same errors, and Admits the same answer, as with no check skipped. The
// set includes the permissive policy, for which validate skips the most.
func TestLenientChecksChangeNothing(t *testing.T) {
	pods := handWrittenPods()
	r := rand.New(rand.NewPCG(2, 37))
	for range 1500 {
		pods = append(pods, randomPod(r))
	}
	skipping, failures := 0, 0
	for _, psp := range propertyPolicies() {
		pr, err := NewProvider(psp)
		if err != nil {
			t.Fatalf("policy %s: %v", psp.Name, err)
		}
		if pr.lenient != 0 {
			skipping++
		}
		strict := *pr
		strict.lenient = 0
		for _, pod := range pods {
			s := NewSubject(pod)
			got, want := pr.Validate(&s).ToAggregate(), strict.Validate(&s).ToAggregate()
			if fmt.Sprint(got) != fmt.Sprint(want) || pr.Admits(&s) != strict.Admits(&s) {
				if failures++; failures <= 5 {
					t.Errorf("policy %s: with lenient checks skipped: %v\nwith none skipped: %v\npod: %s", psp.Name, got, want, dump(pod))
				}
			}
		}
	}
	if failures > 5 {
		t.Errorf("%d failures in all", failures)
	}
	if skipping == 0 {
		t.Error("no policy of the set skips a check; the property says nothing")
	}
}
