// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package pspmigration

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
)

// Sample is one pod of the generated corpus: what it tries, and the pod.
type Sample struct {
	Name string
	Pod  *corev1.Pod
}

// Corpus generates, for one policy, pods that try each of its fields with
// values it allows and values it refuses: on a bare pod (which leans on
// the policy's defaults) and on a pod that sets everything the policy
// asks, so each value is judged alone.
func Corpus(psp *policy.PodSecurityPolicy) []Sample {
	s := &psp.Spec
	bare := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "corpus"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
		}
	}
	compliant := func() *corev1.Pod {
		p := bare()
		sc := &corev1.PodSecurityContext{}
		p.Spec.SecurityContext = sc
		c := &corev1.SecurityContext{}
		p.Spec.Containers[0].SecurityContext = c
		if r := s.RunAsUser; r.Rule == policy.RunAsUserStrategyMustRunAs {
			sc.RunAsUser = ptr.To(r.Ranges[0].Min)
		} else if r.Rule == policy.RunAsUserStrategyMustRunAsNonRoot {
			sc.RunAsNonRoot = ptr.To(true)
		}
		if r := s.RunAsGroup; r != nil && r.Rule != policy.RunAsGroupStrategyRunAsAny {
			sc.RunAsGroup = ptr.To(r.Ranges[0].Min)
		}
		if r := s.FSGroup; r.Rule != policy.FSGroupStrategyRunAsAny {
			sc.FSGroup = ptr.To(r.Ranges[0].Min)
		}
		if r := s.SupplementalGroups; r.Rule != policy.SupplementalGroupsStrategyRunAsAny {
			sc.SupplementalGroups = []int64{r.Ranges[0].Min}
		}
		if o := s.SELinux.SELinuxOptions; s.SELinux.Rule == policy.SELinuxStrategyMustRunAs && o != nil {
			sc.SELinuxOptions = &corev1.SELinuxOptions{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
		}
		if allowed := psp.Annotations[policy.SeccompAllowedProfilesAnnotationKey]; allowed != "" && allowed != "*" {
			sc.SeccompProfile = profileField(strings.Split(allowed, ",")[0])
		}
		if allowed, ok := psp.Annotations[policy.AppArmorAllowedProfilesAnnotationKey]; ok {
			c.AppArmorProfile = appArmorField(strings.Split(allowed, ",")[0])
		}
		if len(s.RequiredDropCapabilities) > 0 || len(s.DefaultAddCapabilities) > 0 {
			c.Capabilities = &corev1.Capabilities{Drop: convertCaps(s.RequiredDropCapabilities)}
		}
		if s.ReadOnlyRootFilesystem {
			c.ReadOnlyRootFilesystem = ptr.To(true)
		}
		if ape := s.AllowPrivilegeEscalation; ape != nil && !*ape {
			c.AllowPrivilegeEscalation = ptr.To(false)
		}
		if rc := s.RuntimeClass; rc != nil && len(rc.AllowedRuntimeClassNames) > 0 && rc.AllowedRuntimeClassNames[0] != "*" {
			p.Spec.RuntimeClassName = ptr.To(rc.AllowedRuntimeClassNames[0])
		}
		return p
	}
	var out []Sample
	add := func(name string, change func(p *corev1.Pod)) {
		for _, base := range []struct {
			name string
			pod  func() *corev1.Pod
		}{{"bare", bare}, {"compliant", compliant}} {
			p := base.pod()
			change(p)
			out = append(out, Sample{Name: base.name + ": " + name, Pod: p})
		}
	}
	podSC := func(p *corev1.Pod) *corev1.PodSecurityContext {
		if p.Spec.SecurityContext == nil {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{}
		}
		return p.Spec.SecurityContext
	}
	ctrSC := func(p *corev1.Pod) *corev1.SecurityContext {
		c := &p.Spec.Containers[0]
		if c.SecurityContext == nil {
			c.SecurityContext = &corev1.SecurityContext{}
		}
		return c.SecurityContext
	}
	add("as is", func(*corev1.Pod) {})
	add("windows", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} })
	add("privileged", func(p *corev1.Pod) { ctrSC(p).Privileged = ptr.To(true) })
	add("hostNetwork", func(p *corev1.Pod) { p.Spec.HostNetwork = true })
	add("hostPID", func(p *corev1.Pod) { p.Spec.HostPID = true })
	add("hostIPC", func(p *corev1.Pod) { p.Spec.HostIPC = true })
	add("init container privileged", func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.k8s.io/pause:3.10", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}
	})
	add("init container like the first", func(p *corev1.Pod) {
		init := *p.Spec.Containers[0].DeepCopy()
		init.Name = "init"
		p.Spec.InitContainers = []corev1.Container{init}
	})
	for _, port := range hostPortValues(s.HostPorts) {
		add(fmt.Sprintf("hostPort %d", port), func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: port}}
		})
	}
	for _, id := range idValues(s.RunAsUser.Ranges, true) {
		add(fmt.Sprintf("runAsUser %d", id), func(p *corev1.Pod) { ctrSC(p).RunAsUser = ptr.To(id) })
		add(fmt.Sprintf("pod runAsUser %d", id), func(p *corev1.Pod) { podSC(p).RunAsUser = ptr.To(id) })
	}
	add("runAsNonRoot false", func(p *corev1.Pod) { ctrSC(p).RunAsNonRoot = ptr.To(false) })
	add("runAsNonRoot true", func(p *corev1.Pod) { ctrSC(p).RunAsNonRoot = ptr.To(true) })
	var groupRanges []policy.IDRange
	if s.RunAsGroup != nil {
		groupRanges = s.RunAsGroup.Ranges
	}
	for _, id := range idValues(groupRanges, true) {
		add(fmt.Sprintf("runAsGroup %d", id), func(p *corev1.Pod) { ctrSC(p).RunAsGroup = ptr.To(id) })
	}
	for _, id := range idValues(s.FSGroup.Ranges, false) {
		add(fmt.Sprintf("fsGroup %d", id), func(p *corev1.Pod) { podSC(p).FSGroup = ptr.To(id) })
	}
	for _, id := range idValues(s.SupplementalGroups.Ranges, false) {
		add(fmt.Sprintf("supplementalGroups [%d]", id), func(p *corev1.Pod) { podSC(p).SupplementalGroups = []int64{id} })
	}
	for _, o := range seLinuxValues(s.SELinux.SELinuxOptions) {
		add(fmt.Sprintf("seLinuxOptions %v", *o), func(p *corev1.Pod) { podSC(p).SELinuxOptions = o.DeepCopy() })
		add(fmt.Sprintf("container seLinuxOptions %v", *o), func(p *corev1.Pod) { ctrSC(p).SELinuxOptions = o.DeepCopy() })
	}
	for _, name := range profileValues(psp.Annotations[policy.SeccompAllowedProfilesAnnotationKey], true) {
		add("seccomp "+name, func(p *corev1.Pod) { podSC(p).SeccompProfile = profileField(name) })
		add("container seccomp "+name, func(p *corev1.Pod) { ctrSC(p).SeccompProfile = profileField(name) })
		add("seccomp annotation "+name, func(p *corev1.Pod) {
			podSC(p).SeccompProfile = nil
			p.Annotations = map[string]string{corev1.SeccompPodAnnotationKey: name}
		})
	}
	for _, name := range profileValues(psp.Annotations[policy.AppArmorAllowedProfilesAnnotationKey], false) {
		add("apparmor "+name, func(p *corev1.Pod) { ctrSC(p).AppArmorProfile = appArmorField(name) })
		add("pod apparmor "+name, func(p *corev1.Pod) {
			ctrSC(p).AppArmorProfile = nil
			podSC(p).AppArmorProfile = appArmorField(name)
		})
	}
	for _, c := range capabilityValues(s) {
		add("capabilities add "+string(c), func(p *corev1.Pod) {
			sc := ctrSC(p)
			if sc.Capabilities == nil {
				sc.Capabilities = &corev1.Capabilities{}
			}
			sc.Capabilities.Add = append(sc.Capabilities.Add, c)
		})
	}
	add("capabilities drop nothing", func(p *corev1.Pod) { ctrSC(p).Capabilities = &corev1.Capabilities{} })
	add("capabilities drop ALL", func(p *corev1.Pod) { ctrSC(p).Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}} })
	add("procMount Unmasked", func(p *corev1.Pod) {
		ctrSC(p).ProcMount = ptr.To(corev1.UnmaskedProcMount)
		p.Spec.HostUsers = ptr.To(false)
	})
	add("readOnlyRootFilesystem false", func(p *corev1.Pod) { ctrSC(p).ReadOnlyRootFilesystem = ptr.To(false) })
	add("allowPrivilegeEscalation true", func(p *corev1.Pod) { ctrSC(p).AllowPrivilegeEscalation = ptr.To(true) })
	add("allowPrivilegeEscalation false", func(p *corev1.Pod) { ctrSC(p).AllowPrivilegeEscalation = ptr.To(false) })
	for _, sysctl := range sysctlValues(s) {
		add("sysctl "+sysctl, func(p *corev1.Pod) { podSC(p).Sysctls = []corev1.Sysctl{{Name: sysctl, Value: "1"}} })
	}
	for _, v := range volumeValues(s) {
		add("volume "+v.name, func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: v.source}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v", ReadOnly: v.readOnly}}
		})
	}
	if rc := s.RuntimeClass; rc != nil {
		for _, name := range append([]string{"not-allowed"}, rc.AllowedRuntimeClassNames...) {
			if name != "*" {
				add("runtimeClassName "+name, func(p *corev1.Pod) { p.Spec.RuntimeClassName = ptr.To(name) })
			}
		}
	}
	return out
}

// hostPortValues are each range's ends and the ports just outside.
func hostPortValues(ranges []policy.HostPortRange) []int32 {
	out := []int32{8080}
	for _, r := range ranges {
		for _, p := range []int32{r.Min - 1, r.Min, r.Max, r.Max + 1} {
			if p >= 1 && p <= 65535 {
				out = append(out, p)
			}
		}
	}
	return out
}

// idValues are each range's ends and the IDs just outside, and root.
func idValues(ranges []policy.IDRange, root bool) []int64 {
	out := []int64{1000}
	if root {
		out = append(out, 0)
	}
	for _, r := range ranges {
		for _, id := range []int64{r.Min - 1, r.Min, r.Max, r.Max + 1} {
			if id >= 1 {
				out = append(out, id)
			}
		}
	}
	return out
}

func seLinuxValues(required *api.SELinuxOptions) []*corev1.SELinuxOptions {
	out := []*corev1.SELinuxOptions{{Type: "spc_t"}}
	if required != nil {
		o := &corev1.SELinuxOptions{User: required.User, Role: required.Role, Type: required.Type, Level: required.Level}
		out = append(out, o)
		if sens, cats, ok := strings.Cut(o.Level, ":"); ok {
			parts := strings.Split(cats, ",")
			for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
				parts[i], parts[j] = parts[j], parts[i]
			}
			reordered := o.DeepCopy()
			reordered.Level = sens + ":" + strings.Join(parts, ",")
			out = append(out, reordered)
		}
	}
	return out
}

// profileValues are the allowed profile names and some that are not.
func profileValues(allowed string, seccomp bool) []string {
	out := []string{"runtime/default", "unconfined", "localhost/corpus"}
	if seccomp {
		out = append(out, "docker/default")
	}
	for _, p := range strings.Split(allowed, ",") {
		if p != "" && p != "*" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func capabilityValues(s *policy.PodSecurityPolicySpec) []corev1.Capability {
	out := []corev1.Capability{"NET_ADMIN", "SYS_ADMIN", "NET_BIND_SERVICE"}
	for _, c := range append(append([]string{}, capsStrings(s.AllowedCapabilities)...), capsStrings(s.DefaultAddCapabilities)...) {
		if c != "*" && !slices.Contains(capsStrings(out), c) {
			out = append(out, corev1.Capability(c))
		}
	}
	return out
}

func sysctlValues(s *policy.PodSecurityPolicySpec) []string {
	out := []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "kernel.msgmax", "net/ipv4/tcp_syncookies"}
	for _, p := range append(append([]string{}, s.AllowedUnsafeSysctls...), s.ForbiddenSysctls...) {
		name := strings.TrimSuffix(p, "*")
		if strings.HasSuffix(p, "*") {
			name += "corpus"
		}
		if name != "corpus" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

type volumeValue struct {
	name     string
	source   corev1.VolumeSource
	readOnly bool
}

func volumeValues(s *policy.PodSecurityPolicySpec) []volumeValue {
	out := []volumeValue{
		{name: "emptyDir", source: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{name: "configMap", source: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
		{name: "secret", source: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
		{name: "persistentVolumeClaim", source: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "pvc"}}},
		{name: "nfs", source: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.invalid", Path: "/"}}},
		{name: "downwardAPI", source: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}},
		{name: "image", source: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "registry.k8s.io/pause:3.10"}}},
		{name: "projected service account token", source: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}}}},
		{name: "projected with an audience", source: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "vault", ExpirationSeconds: ptr.To[int64](3600)}},
		}}}},
		{name: "hostPath /var/log", source: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}},
		{name: "csi corpus.example.com", source: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "corpus.example.com"}}},
		{name: "flexVolume corpus/driver", source: corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "corpus/driver"}}},
	}
	for _, h := range s.AllowedHostPaths {
		prefix := strings.TrimSuffix(h.PathPrefix, "/")
		for _, path := range []string{prefix, prefix + "/sub", prefix + "x"} {
			if path == "" {
				path = "/"
			}
			for _, ro := range []bool{false, true} {
				out = append(out, volumeValue{name: fmt.Sprintf("hostPath %s readOnly=%t", path, ro), source: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}, readOnly: ro})
			}
		}
	}
	for _, f := range s.AllowedFlexVolumes {
		out = append(out, volumeValue{name: "flexVolume " + f.Driver, source: corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: f.Driver}}})
	}
	for _, d := range s.AllowedCSIDrivers {
		out = append(out, volumeValue{name: "csi " + d.Name, source: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: d.Name}}})
	}
	return out
}

func profileField(name string) *corev1.SeccompProfile {
	switch {
	case name == "unconfined":
		return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	case strings.HasPrefix(name, "localhost/"):
		return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To(strings.TrimPrefix(name, "localhost/"))}
	}
	return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
}

func appArmorField(name string) *corev1.AppArmorProfile {
	switch {
	case name == "unconfined":
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	case strings.HasPrefix(name, "localhost/"):
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To(strings.TrimPrefix(name, "localhost/"))}
	}
	return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
}

func convertCaps(caps []api.Capability) []corev1.Capability {
	out := make([]corev1.Capability, len(caps))
	for i, c := range caps {
		out[i] = corev1.Capability(c)
	}
	return out
}

func capsStrings[C ~string](caps []C) []string {
	out := make([]string, len(caps))
	for i, c := range caps {
		out[i] = string(c)
	}
	return out
}
