// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/apis/policy/validation"
	"github.com/turnstile-k8s/turnstile/pkg/lineapi"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy"
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/security/podsecuritypolicy/apis/v1alpha1"
)

// choices reads fuzz input as a series of small choices; past its end
// every choice is the first.
type choices struct{ data []byte }

func (c *choices) pick(n int) int {
	if len(c.data) == 0 || n <= 1 {
		return 0
	}
	b := c.data[0]
	c.data = c.data[1:]
	return int(b) % n
}

func (c *choices) yes() bool { return c.pick(2) == 1 }

// fuzzPolicy is a valid policy built from choices: each field of the spec
// the admission decision reads, from restrictive to permissive.
func fuzzPolicy(c *choices, name string) *policy.PodSecurityPolicy {
	base := restrictive
	if c.yes() {
		base = permissive
	}
	p := psp(base, name, nil)
	s := &p.Spec
	s.Privileged, s.HostNetwork, s.HostPID, s.HostIPC, s.ReadOnlyRootFilesystem = c.yes(), c.yes(), c.yes(), c.yes(), c.yes()
	s.AllowPrivilegeEscalation = []*bool{nil, ptr.To(false), ptr.To(true)}[c.pick(3)]
	if s.AllowPrivilegeEscalation == nil || *s.AllowPrivilegeEscalation {
		s.DefaultAllowPrivilegeEscalation = []*bool{nil, ptr.To(false), ptr.To(true)}[c.pick(3)]
	}
	caps := []api.Capability{"NET_ADMIN", "SYS_TIME", "CHOWN"}
	s.AllowedCapabilities = caps[:c.pick(4)]
	s.DefaultAddCapabilities = caps[:c.pick(len(s.AllowedCapabilities)+1)]
	if c.yes() {
		s.RequiredDropCapabilities = []api.Capability{"KILL"}
	}
	switch c.pick(3) {
	case 0:
		s.RunAsUser = policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyRunAsAny}
	case 1:
		s.RunAsUser = policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAsNonRoot}
	default:
		low := int64(c.pick(3) * 1000)
		s.RunAsUser = policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAs, Ranges: []policy.IDRange{{Min: low, Max: low + 999}}}
	}
	if c.yes() {
		s.FSGroup = policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 1000, Max: 2000}}}
	} else {
		s.FSGroup = policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyRunAsAny}
	}
	volumes := [][]policy.FSType{{policy.All}, {policy.EmptyDir, policy.Secret}, {policy.HostPath}, {policy.ConfigMap}}
	s.Volumes = volumes[c.pick(len(volumes))]
	if c.yes() {
		s.AllowedHostPaths = []policy.AllowedHostPath{{PathPrefix: "/var/log", ReadOnly: c.yes()}}
	}
	if c.yes() {
		s.HostPorts = []policy.HostPortRange{{Min: 8000, Max: 8000 + int32(c.pick(3))*100}}
	}
	return p
}

// fuzzPod is a pod built from choices: what it asks for of each field the
// policies above govern.
func fuzzPod(c *choices) *api.Pod {
	pod := goodPod()
	pod.Name, pod.Namespace = "fuzzed", "default"
	hosts := lineapi.HostNamespaces{Network: c.yes(), PID: c.yes(), IPC: c.yes()}
	ctr := &pod.Spec.Containers[0]
	if ctr.SecurityContext == nil {
		ctr.SecurityContext = &api.SecurityContext{}
	}
	sc := ctr.SecurityContext
	sc.Privileged = []*bool{nil, ptr.To(false), ptr.To(true)}[c.pick(3)]
	sc.AllowPrivilegeEscalation = []*bool{nil, ptr.To(false), ptr.To(true)}[c.pick(3)]
	sc.ReadOnlyRootFilesystem = []*bool{nil, ptr.To(false), ptr.To(true)}[c.pick(3)]
	sc.RunAsUser = []*int64{nil, ptr.To(int64(0)), ptr.To(int64(1500)), ptr.To(int64(2500))}[c.pick(4)]
	sc.RunAsNonRoot = []*bool{nil, ptr.To(true)}[c.pick(2)]
	if c.yes() {
		sc.Capabilities = &api.Capabilities{Add: []api.Capability{[]api.Capability{"NET_ADMIN", "SYS_ADMIN", "CHOWN"}[c.pick(3)]}}
	}
	if c.yes() {
		ctr.Ports = []api.ContainerPort{{HostPort: int32(8000 + c.pick(3)*150), ContainerPort: 80, Protocol: api.ProtocolTCP}}
	}
	switch c.pick(4) {
	case 1:
		pod.Spec.Volumes = append(pod.Spec.Volumes, api.Volume{Name: "logs", VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: []string{"/var/log/app", "/etc"}[c.pick(2)]}}})
		ctr.VolumeMounts = append(ctr.VolumeMounts, api.VolumeMount{Name: "logs", MountPath: "/logs", ReadOnly: c.yes()})
	case 2:
		pod.Spec.Volumes = append(pod.Spec.Volumes, api.Volume{Name: "scratch", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}})
	case 3:
		pod.Spec.Volumes = append(pod.Spec.Volumes, api.Volume{Name: "cm", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{LocalObjectReference: api.LocalObjectReference{Name: "cm"}}}})
	}
	if c.yes() {
		pod.Spec.SecurityContext = &api.PodSecurityContext{FSGroup: []*int64{nil, ptr.To(int64(1500)), ptr.To(int64(50))}[c.pick(3)]}
	}
	// After the security context: before v1.37 the host namespaces are in it.
	lineapi.SetPodHostNamespaces(&pod.Spec, hosts)
	return pod
}

// decide runs a pod creation through Admit and Validate with every policy
// usable, as the apiserver does, and returns the pod as admitted and the
// chosen policy, or the refusal.
func decide(t *testing.T, psps []*policy.PodSecurityPolicy, pod *api.Pod) (*api.Pod, string, error) {
	p := newTestPlugin(nil, psps...)
	pod = pod.DeepCopy()
	r := newRequest(t, admission.Create, pod, nil, pod.Namespace, "", testUser)
	if err := r.admit(p); err != nil {
		return nil, "", err
	}
	if err := r.validate(p); err != nil {
		return nil, "", fmt.Errorf("Validate refused what Admit admitted: %w", err)
	}
	return pod, pod.Annotations[podsecuritypolicy.ValidatedPSPAnnotation], nil
}

// audited runs a pod creation through Admit and Validate in audit mode and
// returns the audit annotations, or the error it must never give, or
// says that it changed the pod, which it must never do.
func audited(t *testing.T, psps []*policy.PodSecurityPolicy, pod *api.Pod) (map[string]string, error) {
	p := newTestPlugin(nil, psps...)
	p.mode = v1alpha1.Audit
	sent := pod.DeepCopy()
	pod = pod.DeepCopy()
	r := newRequest(t, admission.Create, pod, nil, pod.Namespace, "", testUser)
	if err := r.admit(p); err != nil {
		return nil, fmt.Errorf("audit mode refused in Admit: %w", err)
	}
	if err := r.validate(p); err != nil {
		return nil, fmt.Errorf("audit mode refused in Validate: %w", err)
	}
	if !apiequality.Semantic.DeepEqual(pod, sent) {
		return nil, errors.New("audit mode changed the pod")
	}
	return r.audit(), nil
}

// FuzzAdmission runs PodSecurityPolicy admission over pods and one to three
// policies built from the input, and checks what must hold whatever they
// are: no panic; Validate accepts what Admit admitted; the admitted pod,
// judged again by the policy it names alone, passes unchanged; and the
// decision, the policy chosen and the defaults applied do not depend on
// the order the informer delivered the policies in (v1.24 orders them
// itself: policies that need no change first, then by name). In audit mode
// (warn's decisions, told elsewhere) it refuses and changes nothing, and
// reports exactly what enforce did: a refusal, or the policy whose defaults
// enforce applied.
func FuzzAdmission(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 1, 1, 1, 1, 1, 2, 2, 3, 3, 2, 1, 0, 1, 1, 1, 1})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 1, 0, 0, 1, 1, 1, 1, 1, 2, 1, 1, 3, 1, 0, 1})
	f.Add([]byte("two policies, a privileged pod with host ports and a hostPath"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &choices{data: data}
		psps := make([]*policy.PodSecurityPolicy, 1+c.pick(3))
		for i := range psps {
			psps[i] = fuzzPolicy(c, fmt.Sprintf("policy-%d", i))
			if errs := validation.ValidatePodSecurityPolicy(psps[i]); len(errs) > 0 {
				t.Fatalf("fuzzPolicy built an invalid policy: %v", errs)
			}
		}
		pod := fuzzPod(c)
		admitted, name, err := decide(t, psps, pod)
		if err != nil && (strings.HasPrefix(err.Error(), "Validate refused") || !apierrors.IsForbidden(err)) {
			t.Fatalf("%s: %v", name, err)
		}
		if err == nil {
			var chosen *policy.PodSecurityPolicy
			for _, psp := range psps {
				if psp.Name == name {
					chosen = psp
				}
			}
			if chosen == nil {
				t.Fatalf("the admitted pod names policy %q, which is not one of the policies", name)
			}
			again, againName, err := decide(t, []*policy.PodSecurityPolicy{chosen}, admitted)
			if err != nil || againName != name {
				t.Fatalf("the pod %s admitted is refused by %s alone (%q, %v)", name, name, againName, err)
			}
			if !apiequality.Semantic.DeepEqual(again.Spec, admitted.Spec) {
				t.Fatalf("%s changes the pod it admitted when judging it again", name)
			}
		}
		report, auditErr := audited(t, psps, pod)
		if auditErr != nil {
			t.Fatal(auditErr)
		}
		mutated := false
		if err == nil {
			// What enforce changed, but for the record of the policy.
			changed := admitted.DeepCopy()
			delete(changed.Annotations, podsecuritypolicy.ValidatedPSPAnnotation)
			if len(changed.Annotations) == 0 && len(pod.Annotations) == 0 {
				changed.Annotations = pod.Annotations
			}
			mutated = !apiequality.Semantic.DeepEqual(changed, pod)
		}
		switch {
		case err != nil && report[violationsKey] == "":
			t.Fatalf("enforce refused (%v); audit mode reported no violation: %v", err, report)
		case err == nil && report[violationsKey] != "":
			t.Fatalf("enforce admitted under %s; audit mode reported %q", name, report[violationsKey])
		case mutated && !strings.HasPrefix(report[mutationsKey], fmt.Sprintf("policy %q would set ", name)):
			t.Fatalf("enforce applied %s's defaults; audit mode reported %q", name, report[mutationsKey])
		case err == nil && !mutated && report[mutationsKey] != "":
			t.Fatalf("enforce admitted the pod unchanged under %s; audit mode reported %q", name, report[mutationsKey])
		}
		reversed := make([]*policy.PodSecurityPolicy, len(psps))
		for i, psp := range psps {
			reversed[len(psps)-1-i] = psp
		}
		admittedR, nameR, errR := decide(t, reversed, pod)
		if (err == nil) != (errR == nil) || name != nameR || (err == nil && !apiequality.Semantic.DeepEqual(admitted, admittedR)) {
			t.Fatalf("the policies' order changed the decision: %q %v, reversed %q %v", name, err, nameR, errR)
		}
	})
}
