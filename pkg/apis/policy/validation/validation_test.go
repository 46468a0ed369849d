// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	core "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
)

// wantErr is one expected error: its type, its exact field path and a
// substring of its detail.
type wantErr struct {
	typ    field.ErrorType
	field  string
	detail string
}

func validPSP() *policy.PodSecurityPolicy {
	return &policy.PodSecurityPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "psp", ResourceVersion: "1"},
		Spec: policy.PodSecurityPolicySpec{
			RunAsUser:                policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyRunAsAny},
			SELinux:                  policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyRunAsAny},
			SupplementalGroups:       policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyRunAsAny},
			FSGroup:                  policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyRunAsAny},
			AllowPrivilegeEscalation: ptr.To(true),
		},
	}
}

func checkErrs(t *testing.T, got field.ErrorList, want []wantErr) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Type != w.typ || g.Field != w.field || !strings.Contains(g.Detail, w.detail) {
			t.Errorf("error %d: got %s at %q with detail %q; want %s at %q with detail containing %q",
				i, g.Type, g.Field, g.Detail, w.typ, w.field, w.detail)
		}
	}
}

func TestValidatePodSecurityPolicy(t *testing.T) {
	const (
		appArmorDefault = "metadata.annotations[" + policy.AppArmorDefaultProfileAnnotationKey + "]"
		appArmorAllowed = "metadata.annotations[" + policy.AppArmorAllowedProfilesAnnotationKey + "]"
		seccompDefault  = "metadata.annotations[" + policy.SeccompDefaultProfileAnnotationKey + "]"
		seccompAllowed  = "metadata.annotations[" + policy.SeccompAllowedProfilesAnnotationKey + "]"
	)
	ranges := func(rs ...policy.IDRange) []policy.IDRange { return rs }
	tests := []struct {
		name   string
		mutate func(*policy.PodSecurityPolicy)
		want   []wantErr
	}{
		// Valid policies.
		{name: "minimal policy", mutate: func(*policy.PodSecurityPolicy) {}},
		{name: "fixture mutating-ranges", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec = policy.PodSecurityPolicySpec{
				DefaultAddCapabilities:          []core.Capability{"NET_BIND_SERVICE"},
				RequiredDropCapabilities:        []core.Capability{"NET_RAW"},
				AllowedCapabilities:             []core.Capability{"NET_BIND_SERVICE", "CHOWN"},
				Volumes:                         []policy.FSType{"configMap", "secret", "emptyDir", "hostPath", "projected"},
				SELinux:                         policy.SELinuxStrategyOptions{Rule: "MustRunAs", SELinuxOptions: &core.SELinuxOptions{Level: "s0:c123,c456"}},
				RunAsUser:                       policy.RunAsUserStrategyOptions{Rule: "MustRunAs", Ranges: ranges(policy.IDRange{Min: 1000, Max: 2000})},
				RunAsGroup:                      &policy.RunAsGroupStrategyOptions{Rule: "MayRunAs", Ranges: ranges(policy.IDRange{Min: 1000, Max: 2000})},
				SupplementalGroups:              policy.SupplementalGroupsStrategyOptions{Rule: "MayRunAs", Ranges: ranges(policy.IDRange{Min: 1000, Max: 2000})},
				FSGroup:                         policy.FSGroupStrategyOptions{Rule: "MustRunAs", Ranges: ranges(policy.IDRange{Min: 1000, Max: 2000})},
				DefaultAllowPrivilegeEscalation: ptr.To(false),
				AllowPrivilegeEscalation:        ptr.To(true),
				AllowedHostPaths:                []policy.AllowedHostPath{{PathPrefix: "/var/log", ReadOnly: true}},
				AllowedUnsafeSysctls:            []string{"net.core.somaxconn"},
				ForbiddenSysctls:                []string{"kernel.*"},
				RuntimeClass:                    &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"runc", "kata"}, DefaultRuntimeClassName: ptr.To("runc")},
			}
		}},
		{name: "every volume type, image included, and the wildcard", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.Volumes = append(append([]policy.FSType{}, AllFSTypes...), policy.All)
		}},
		{name: "image volume type", mutate: func(p *policy.PodSecurityPolicy) { p.Spec.Volumes = []policy.FSType{policy.Image} }},
		{name: "valid profile annotations", mutate: func(p *policy.PodSecurityPolicy) {
			p.Annotations = map[string]string{
				policy.AppArmorDefaultProfileAnnotationKey:  "runtime/default",
				policy.AppArmorAllowedProfilesAnnotationKey: "runtime/default,unconfined,localhost/custom",
				policy.SeccompDefaultProfileAnnotationKey:   "docker/default",
				policy.SeccompAllowedProfilesAnnotationKey:  "*,runtime/default,docker/default,unconfined,localhost/profiles/a.json",
			}
		}},
		{name: "runAsUser MustRunAsNonRoot and MustRunAs with ranges", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsUser = policy.RunAsUserStrategyOptions{Rule: "MustRunAs", Ranges: ranges(policy.IDRange{Min: 0, Max: 0}, policy.IDRange{Min: 5, Max: 10})}
		}},
		{name: "runAsGroup MustRunAs with a range", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: "MustRunAs", Ranges: ranges(policy.IDRange{Min: 1, Max: 1})}
		}},
		{name: "runAsGroup RunAsAny without ranges", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: "RunAsAny"}
		}},
		{name: "proc mount types Default and Unmasked", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedProcMountTypes = []core.ProcMountType{core.DefaultProcMount, core.UnmaskedProcMount}
		}},
		{name: "default privilege escalation true with allowPrivilegeEscalation unset", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.DefaultAllowPrivilegeEscalation = ptr.To(true)
			p.Spec.AllowPrivilegeEscalation = nil
		}},
		{name: "flex and CSI drivers", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedFlexVolumes = []policy.AllowedFlexVolume{{Driver: "example/lvm"}}
			p.Spec.AllowedCSIDrivers = []policy.AllowedCSIDriver{{Name: "csi.example.com"}}
		}},
		{name: "sysctl wildcard alone", mutate: func(p *policy.PodSecurityPolicy) { p.Spec.AllowedUnsafeSysctls = []string{"*"} }},
		{name: "disjoint sysctl patterns", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedUnsafeSysctls = []string{"net.*", "kernel.msgmax"}
			p.Spec.ForbiddenSysctls = []string{"kernel.shm*", "vm.swappiness"}
		}},
		{name: "runtimeClass wildcard with a default", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"*"}, DefaultRuntimeClassName: ptr.To("gvisor")}
		}},
		{name: "runtimeClass allowing none", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{}}
		}},
		{name: "required drops without a capability wildcard", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RequiredDropCapabilities = []core.Capability{"ALL"}
			p.Spec.AllowedCapabilities = []core.Capability{"NET_ADMIN"}
		}},
		{name: "capability wildcard without required drops", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedCapabilities = []core.Capability{policy.AllowAllCapabilities}
		}},

		// Accepted but unusable: v1.24 stored these and its admission
		// plugin skipped them.
		{name: "unusable: runAsUser MustRunAs without ranges", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsUser = policy.RunAsUserStrategyOptions{Rule: "MustRunAs"}
		}},
		{name: "unusable: fsGroup MustRunAs without ranges", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.FSGroup = policy.FSGroupStrategyOptions{Rule: "MustRunAs"}
		}},
		{name: "unusable: fsGroup MayRunAs without ranges", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.FSGroup = policy.FSGroupStrategyOptions{Rule: "MayRunAs"}
		}},
		{name: "unusable: supplementalGroups MustRunAs without ranges", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.SupplementalGroups = policy.SupplementalGroupsStrategyOptions{Rule: "MustRunAs"}
		}},
		{name: "unusable: supplementalGroups MayRunAs without ranges", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.SupplementalGroups = policy.SupplementalGroupsStrategyOptions{Rule: "MayRunAs"}
		}},
		{name: "unusable: seLinux MustRunAs without seLinuxOptions", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.SELinux = policy.SELinuxStrategyOptions{Rule: "MustRunAs"}
		}},

		// Metadata.
		{name: "name not a DNS subdomain", mutate: func(p *policy.PodSecurityPolicy) { p.Name = "Bad_Name" },
			want: []wantErr{{field.ErrorTypeInvalid, "metadata.name", "RFC 1123 subdomain"}}},
		{name: "namespace set on a cluster-scoped object", mutate: func(p *policy.PodSecurityPolicy) { p.Namespace = "default" },
			want: []wantErr{{field.ErrorTypeForbidden, "metadata.namespace", "not allowed on this type"}}},
		{name: "AppArmor default profile", mutate: func(p *policy.PodSecurityPolicy) {
			p.Annotations = map[string]string{policy.AppArmorDefaultProfileAnnotationKey: "custom"}
		}, want: []wantErr{{field.ErrorTypeInvalid, appArmorDefault, `invalid AppArmor profile name: "custom"`}}},
		{name: "AppArmor allowed profile", mutate: func(p *policy.PodSecurityPolicy) {
			p.Annotations = map[string]string{policy.AppArmorAllowedProfilesAnnotationKey: "runtime/default,*"}
		}, want: []wantErr{{field.ErrorTypeInvalid, appArmorAllowed, `invalid AppArmor profile name: "*"`}}},
		{name: "seccomp default profile", mutate: func(p *policy.PodSecurityPolicy) {
			p.Annotations = map[string]string{policy.SeccompDefaultProfileAnnotationKey: "*"}
		}, want: []wantErr{{field.ErrorTypeInvalid, seccompDefault, "must be a valid seccomp profile"}}},
		{name: "seccomp allowed profile", mutate: func(p *policy.PodSecurityPolicy) {
			p.Annotations = map[string]string{policy.SeccompAllowedProfilesAnnotationKey: "runtime/default,bogus"}
		}, want: []wantErr{{field.ErrorTypeInvalid, seccompAllowed, "must be a valid seccomp profile"}}},
		{name: "seccomp localhost profiles must descend", mutate: func(p *policy.PodSecurityPolicy) {
			p.Annotations = map[string]string{policy.SeccompAllowedProfilesAnnotationKey: "localhost//etc/p.json,localhost/../p.json"}
		}, want: []wantErr{
			{field.ErrorTypeInvalid, seccompAllowed, "must be a relative path"},
			{field.ErrorTypeInvalid, seccompAllowed, "must not contain '..'"},
		}},

		// Strategies.
		{name: "runAsUser rule", mutate: func(p *policy.PodSecurityPolicy) { p.Spec.RunAsUser.Rule = "MayRunAs" },
			want: []wantErr{{field.ErrorTypeNotSupported, "spec.runAsUser.rule", `"MustRunAs", "MustRunAsNonRoot", "RunAsAny"`}}},
		{name: "runAsUser negative min", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsUser.Ranges = ranges(policy.IDRange{Min: 1, Max: 2}, policy.IDRange{Min: -1, Max: 5})
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.runAsUser.ranges[1].min", "min cannot be negative"}}},
		{name: "runAsUser negative max", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsUser.Ranges = ranges(policy.IDRange{Min: 1, Max: -1})
		}, want: []wantErr{
			{field.ErrorTypeInvalid, "spec.runAsUser.ranges[0].max", "max cannot be negative"},
			{field.ErrorTypeInvalid, "spec.runAsUser.ranges[0].min", "min cannot be greater than max"},
		}},
		{name: "runAsUser min above max", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsUser.Ranges = ranges(policy.IDRange{Min: 10, Max: 5})
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.runAsUser.ranges[0].min", "min cannot be greater than max"}}},
		{name: "runAsGroup RunAsAny with ranges", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: "RunAsAny", Ranges: ranges(policy.IDRange{Min: 1, Max: 2})}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.runAsGroup.ranges", "Ranges must be empty"}}},
		{name: "runAsGroup MustRunAs without ranges", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: "MustRunAs"}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.runAsGroup.ranges", "must provide at least one range"}}},
		{name: "runAsGroup MayRunAs without ranges", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: "MayRunAs", Ranges: []policy.IDRange{}}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.runAsGroup.ranges", "must provide at least one range"}}},
		{name: "runAsGroup bad range", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: "MayRunAs", Ranges: ranges(policy.IDRange{Min: -3, Max: 2})}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.runAsGroup.ranges[0].min", "min cannot be negative"}}},
		{name: "runAsGroup rule", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: "MustRunAsNonRoot"}
		}, want: []wantErr{{field.ErrorTypeNotSupported, "spec.runAsGroup.rule", `"MustRunAs", "RunAsAny", "MayRunAs"`}}},
		{name: "seLinux rule", mutate: func(p *policy.PodSecurityPolicy) { p.Spec.SELinux.Rule = "" },
			want: []wantErr{{field.ErrorTypeNotSupported, "spec.seLinux.rule", `"MustRunAs", "RunAsAny"`}}},
		{name: "supplementalGroups rule", mutate: func(p *policy.PodSecurityPolicy) { p.Spec.SupplementalGroups.Rule = "" },
			want: []wantErr{{field.ErrorTypeNotSupported, "spec.supplementalGroups.rule", `"MayRunAs", "MustRunAs", "RunAsAny"`}}},
		{name: "supplementalGroups range", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.SupplementalGroups.Ranges = ranges(policy.IDRange{Min: 3, Max: 2})
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.supplementalGroups.ranges[0].min", "min cannot be greater than max"}}},
		{name: "fsGroup rule", mutate: func(p *policy.PodSecurityPolicy) { p.Spec.FSGroup.Rule = "MustRunAsNonRoot" },
			want: []wantErr{{field.ErrorTypeNotSupported, "spec.fsGroup.rule", `"MayRunAs", "MustRunAs", "RunAsAny"`}}},
		{name: "fsGroup range", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.FSGroup.Ranges = ranges(policy.IDRange{Min: 0, Max: -2})
		}, want: []wantErr{
			{field.ErrorTypeInvalid, "spec.fsGroup.ranges[0].max", "max cannot be negative"},
			{field.ErrorTypeInvalid, "spec.fsGroup.ranges[0].min", "min cannot be greater than max"},
		}},

		// Volumes and capabilities.
		{name: "unknown volume type", mutate: func(p *policy.PodSecurityPolicy) { p.Spec.Volumes = []policy.FSType{"secret", "bogus"} },
			want: []wantErr{{field.ErrorTypeNotSupported, "spec.volumes", `"image"`}}},
		{name: "required drops with a capability wildcard", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedCapabilities = []core.Capability{"*"}
			p.Spec.RequiredDropCapabilities = []core.Capability{"NET_RAW"}
		}, want: []wantErr{{field.ErrorTypeInvalid, "requiredDropCapabilities", "must be empty when all capabilities are allowed by a wildcard"}}},
		{name: "default add capability also required to drop", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.DefaultAddCapabilities = []core.Capability{"CHOWN", "NET_RAW"}
			p.Spec.RequiredDropCapabilities = []core.Capability{"NET_RAW"}
		}, want: []wantErr{{field.ErrorTypeInvalid, "defaultAddCapabilities", "capability is listed in defaultAddCapabilities and requiredDropCapabilities"}}},
		{name: "allowed capability also required to drop", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedCapabilities = []core.Capability{"SYS_ADMIN"}
			p.Spec.RequiredDropCapabilities = []core.Capability{"SYS_ADMIN"}
		}, want: []wantErr{{field.ErrorTypeInvalid, "allowedCapabilities", "capability is listed in allowedCapabilities and requiredDropCapabilities"}}},
		{name: "default privilege escalation without allowing it", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.DefaultAllowPrivilegeEscalation = ptr.To(true)
			p.Spec.AllowPrivilegeEscalation = ptr.To(false)
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.defaultAllowPrivilegeEscalation",
			"Cannot set DefaultAllowPrivilegeEscalation to true without also setting AllowPrivilegeEscalation to true"}}},
		{name: "proc mount type", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedProcMountTypes = []core.ProcMountType{"Default", "Masked"}
		}, want: []wantErr{{field.ErrorTypeNotSupported, "spec.allowedProcMountTypes[1]", `"Default", "Unmasked"`}}},

		// Host paths, drivers.
		{name: "host path prefix required, first empty one only", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedHostPaths = []policy.AllowedHostPath{{PathPrefix: "/ok"}, {PathPrefix: ""}, {PathPrefix: ""}}
		}, want: []wantErr{{field.ErrorTypeRequired, "spec.allowedHostPaths[1]", "is required"}}},
		{name: "host path prefix with ..", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedHostPaths = []policy.AllowedHostPath{{PathPrefix: "/var/../etc"}, {PathPrefix: "/a..b"}}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.allowedHostPaths[0]", "must not contain '..'"}}},
		{name: "flex volume driver required", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedFlexVolumes = []policy.AllowedFlexVolume{{Driver: "x/y"}, {}}
		}, want: []wantErr{{field.ErrorTypeRequired, "spec.allowedFlexVolumes.allowedFlexVolumes[1].driver", "must specify a driver"}}},
		{name: "CSI driver name invalid", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedCSIDrivers = []policy.AllowedCSIDriver{{Name: "csi_driver!"}}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.allowedCSIDrivers.allowedCSIDriver[0].name", "RFC 1123 subdomain"}}},
		{name: "CSI driver name required", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedCSIDrivers = []policy.AllowedCSIDriver{{Name: ""}}
		}, want: []wantErr{{field.ErrorTypeRequired, "spec.allowedCSIDrivers.allowedCSIDriver[0].name", ""}}},
		{name: "CSI driver name too long", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedCSIDrivers = []policy.AllowedCSIDriver{{Name: strings.Repeat("a", 64)}}
		}, want: []wantErr{{field.ErrorTypeTooLong, "spec.allowedCSIDrivers.allowedCSIDriver[0].name", "63"}}},

		// Sysctls.
		{name: "empty sysctl", mutate: func(p *policy.PodSecurityPolicy) { p.Spec.AllowedUnsafeSysctls = []string{"net.a", ""} },
			want: []wantErr{{field.ErrorTypeInvalid, "spec.allowedUnsafeSysctls[1]", "empty sysctl not allowed"}}},
		{name: "sysctl with a slash separator", mutate: func(p *policy.PodSecurityPolicy) { p.Spec.ForbiddenSysctls = []string{"net/ipv4/ip_forward"} },
			want: []wantErr{{field.ErrorTypeInvalid, "spec.forbiddenSysctls[0]", "must have at most 253 characters and match regex"}}},
		{name: "sysctl too long", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.ForbiddenSysctls = []string{strings.Repeat("a.", 127)}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.forbiddenSysctls[0]", "must have at most 253 characters"}}},
		{name: "sysctl wildcard with other entries", mutate: func(p *policy.PodSecurityPolicy) { p.Spec.ForbiddenSysctls = []string{"*", "kernel.shmmax"} },
			want: []wantErr{{field.ErrorTypeForbidden, "spec.forbiddenSysctls.items", "if '*' is present, must not specify other sysctls"}}},
		{name: "same sysctl allowed and forbidden", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedUnsafeSysctls = []string{"kernel.msgmax"}
			p.Spec.ForbiddenSysctls = []string{"kernel.msgmax"}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.allowedUnsafeSysctls[0]", "sysctl overlaps with kernel.msgmax"}}},
		{name: "allowed pattern covers a forbidden sysctl", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedUnsafeSysctls = []string{"kernel.*"}
			p.Spec.ForbiddenSysctls = []string{"vm.swappiness", "kernel.msgmax"}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.forbiddenSysctls[1]", "sysctl overlaps with kernel.*"}}},
		{name: "forbidden pattern covers an allowed sysctl", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedUnsafeSysctls = []string{"net.core.somaxconn"}
			p.Spec.ForbiddenSysctls = []string{"net.*"}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.allowedUnsafeSysctls[0]", "sysctl overlaps with net.*"}}},
		{name: "forbidden pattern covers an allowed pattern", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedUnsafeSysctls = []string{"net.core.*"}
			p.Spec.ForbiddenSysctls = []string{"net.*"}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.allowedUnsafeSysctls[0]", "sysctl overlaps with net.*"}}},
		{name: "allowed pattern covers a forbidden pattern", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedUnsafeSysctls = []string{"net.*"}
			p.Spec.ForbiddenSysctls = []string{"net.core.*"}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.forbiddenSysctls[0]", "sysctl overlaps with net.*"}}},

		// RuntimeClass.
		{name: "runtimeClass allowed name invalid", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"runc", "Not_Valid"}}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.runtimeClass.allowedRuntimeClassNames[1]", "RFC 1123 subdomain"}}},
		{name: "runtimeClass duplicate", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"runc", "runc"}}
		}, want: []wantErr{{field.ErrorTypeDuplicate, "spec.runtimeClass.allowedRuntimeClassNames[1]", ""}}},
		{name: "runtimeClass default not allowed", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"runc"}, DefaultRuntimeClassName: ptr.To("kata")}
		}, want: []wantErr{{field.ErrorTypeRequired, "spec.runtimeClass.allowedRuntimeClassNames", `default "kata" must be allowed`}}},
		{name: "runtimeClass default invalid", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"*"}, DefaultRuntimeClassName: ptr.To("Bad_Name")}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.runtimeClass.defaultRuntimeClassName", "RFC 1123 subdomain"}}},
		{name: "runtimeClass wildcard with other names", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"*", "runc"}}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.runtimeClass.allowedRuntimeClassNames", "if '*' is present, must not specify other RuntimeClass names"}}},

		// Errors accumulate in v1.24's order.
		{name: "several errors in order", mutate: func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"*", "runc"}}
			p.Spec.Volumes = []policy.FSType{"bogus"}
			p.Spec.RunAsUser.Rule = ""
			p.Annotations = map[string]string{policy.SeccompDefaultProfileAnnotationKey: "x"}
		}, want: []wantErr{
			{field.ErrorTypeInvalid, seccompDefault, "must be a valid seccomp profile"},
			{field.ErrorTypeNotSupported, "spec.runAsUser.rule", ""},
			{field.ErrorTypeNotSupported, "spec.volumes", ""},
			{field.ErrorTypeInvalid, "spec.runtimeClass.allowedRuntimeClassNames", "if '*' is present"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			psp := validPSP()
			tc.mutate(psp)
			checkErrs(t, ValidatePodSecurityPolicy(psp), tc.want)

			// Update runs the same spec and annotation checks.
			old := validPSP()
			checkErrs(t, ValidatePodSecurityPolicyUpdate(old, psp), updateWant(tc.want))
		})
	}
}

// updateWant drops what only create checks (name and namespace format);
// update checks them as immutability instead, covered below.
func updateWant(want []wantErr) []wantErr {
	var out []wantErr
	for _, w := range want {
		switch w.field {
		case "metadata.name":
			out = append(out, wantErr{field.ErrorTypeInvalid, "metadata.name", "field is immutable"})
		case "metadata.namespace":
			out = append(out, wantErr{field.ErrorTypeInvalid, "metadata.namespace", "field is immutable"})
		default:
			out = append(out, w)
		}
	}
	return out
}

func TestValidatePodSecurityPolicyUpdateMetadata(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*policy.PodSecurityPolicy)
		want   []wantErr
	}{
		{name: "labels and spec may change", mutate: func(p *policy.PodSecurityPolicy) {
			p.Labels = map[string]string{"a": "b"}
			p.Spec.Privileged = true
		}},
		{name: "name is immutable", mutate: func(p *policy.PodSecurityPolicy) { p.Name = "other" },
			want: []wantErr{{field.ErrorTypeInvalid, "metadata.name", "field is immutable"}}},
		{name: "uid is immutable", mutate: func(p *policy.PodSecurityPolicy) { p.UID = "other" },
			want: []wantErr{{field.ErrorTypeInvalid, "metadata.uid", "field is immutable"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := validPSP()
			old.UID = "u1"
			psp := old.DeepCopy()
			tc.mutate(psp)
			checkErrs(t, ValidatePodSecurityPolicyUpdate(old, psp), tc.want)
		})
	}
}

func TestIsValidSysctlPattern(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"kernel.shmmax", true},
		{"kernel.*", true},
		{"net.ipv4.tcp_syncookies", true},
		{"net.ipv4.conf.eth0-1.forwarding", true},
		{"*", true},
		{"k*", true},
		{"a", true},
		{"", false},
		{"kernel.", false},
		{".kernel", false},
		{"Kernel.shmmax", false},
		{"net/ipv4/ip_forward", false},
		{"kernel.*.shm", false},
		{strings.Repeat("a", 253), true},
		{strings.Repeat("a", 254), false},
	}
	for _, tc := range tests {
		if got := IsValidSysctlPattern(tc.name); got != tc.want {
			t.Errorf("IsValidSysctlPattern(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
