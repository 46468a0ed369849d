// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package validation checks PodSecurityPolicy objects as the Kubernetes
// v1.24 apiserver did on create and update: the same rules, in the same
// order, with the same field paths and messages, including the paths v1.24
// got wrong (requiredDropCapabilities, defaultAddCapabilities and
// allowedCapabilities without "spec.", the doubled allowedFlexVolumes and the
// singular allowedCSIDriver element), because clients may match on them.
//
// Some policies pass validation and still cannot be used: runAsUser
// MustRunAs, fsGroup or supplementalGroups MustRunAs/MayRunAs without
// ranges, and seLinux MustRunAs without seLinuxOptions. v1.24 accepted them
// and its admission plugin skipped them; so do we.
package validation

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	core "k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
)

// ValidatePodSecurityPolicyName checks a policy name: a DNS subdomain.
var ValidatePodSecurityPolicyName = apimachineryvalidation.NameIsDNSSubdomain

// ValidatePodSecurityPolicy checks a policy on create.
func ValidatePodSecurityPolicy(psp *policy.PodSecurityPolicy) field.ErrorList {
	metaPath := field.NewPath("metadata")
	allErrs := corevalidation.ValidateObjectMeta(&psp.ObjectMeta, false, ValidatePodSecurityPolicyName, metaPath)
	allErrs = append(allErrs, ValidatePodSecurityPolicySpecificAnnotations(psp.Annotations, metaPath.Child("annotations"))...)
	allErrs = append(allErrs, ValidatePodSecurityPolicySpec(&psp.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidatePodSecurityPolicyUpdate checks a policy on update: the metadata
// update rules, then the new object as on create (its name was checked when
// it was created).
func ValidatePodSecurityPolicyUpdate(oldPSP, newPSP *policy.PodSecurityPolicy) field.ErrorList {
	metaPath := field.NewPath("metadata")
	allErrs := corevalidation.ValidateObjectMetaUpdate(&newPSP.ObjectMeta, &oldPSP.ObjectMeta, metaPath)
	allErrs = append(allErrs, ValidatePodSecurityPolicySpecificAnnotations(newPSP.Annotations, metaPath.Child("annotations"))...)
	allErrs = append(allErrs, ValidatePodSecurityPolicySpec(&newPSP.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidatePodSecurityPolicySpecificAnnotations checks the AppArmor and
// seccomp profile annotations of a policy.
func ValidatePodSecurityPolicySpecificAnnotations(annotations map[string]string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if p := annotations[policy.AppArmorDefaultProfileAnnotationKey]; p != "" {
		if err := corevalidation.ValidateAppArmorProfileFormat(p); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Key(policy.AppArmorDefaultProfileAnnotationKey), p, err.Error()))
		}
	}
	if allowed := annotations[policy.AppArmorAllowedProfilesAnnotationKey]; allowed != "" {
		for _, p := range strings.Split(allowed, ",") {
			if err := corevalidation.ValidateAppArmorProfileFormat(p); err != nil {
				allErrs = append(allErrs, field.Invalid(fldPath.Key(policy.AppArmorAllowedProfilesAnnotationKey), allowed, err.Error()))
			}
		}
	}
	if p := annotations[policy.SeccompDefaultProfileAnnotationKey]; p != "" {
		allErrs = append(allErrs, corevalidation.ValidateSeccompProfile(p, fldPath.Key(policy.SeccompDefaultProfileAnnotationKey))...)
	}
	if allowed := annotations[policy.SeccompAllowedProfilesAnnotationKey]; allowed != "" {
		for _, p := range strings.Split(allowed, ",") {
			if p == policy.SeccompAllowAny {
				continue
			}
			allErrs = append(allErrs, corevalidation.ValidateSeccompProfile(p, fldPath.Key(policy.SeccompAllowedProfilesAnnotationKey))...)
		}
	}
	return allErrs
}

// ValidatePodSecurityPolicySpec checks a policy's spec.
func ValidatePodSecurityPolicySpec(spec *policy.PodSecurityPolicySpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, validateRunAsUser(fldPath.Child("runAsUser"), &spec.RunAsUser)...)
	allErrs = append(allErrs, validateRunAsGroup(fldPath.Child("runAsGroup"), spec.RunAsGroup)...)
	allErrs = append(allErrs, validateRule(fldPath.Child("seLinux", "rule"), spec.SELinux.Rule,
		policy.SELinuxStrategyMustRunAs, policy.SELinuxStrategyRunAsAny)...)
	allErrs = append(allErrs, validateRule(fldPath.Child("supplementalGroups", "rule"), spec.SupplementalGroups.Rule,
		policy.SupplementalGroupsStrategyMayRunAs, policy.SupplementalGroupsStrategyMustRunAs, policy.SupplementalGroupsStrategyRunAsAny)...)
	allErrs = append(allErrs, validateIDRanges(fldPath.Child("supplementalGroups", "ranges"), spec.SupplementalGroups.Ranges)...)
	allErrs = append(allErrs, validateRule(fldPath.Child("fsGroup", "rule"), spec.FSGroup.Rule,
		policy.FSGroupStrategyMayRunAs, policy.FSGroupStrategyMustRunAs, policy.FSGroupStrategyRunAsAny)...)
	allErrs = append(allErrs, validateIDRanges(fldPath.Child("fsGroup", "ranges"), spec.FSGroup.Ranges)...)
	allErrs = append(allErrs, validateVolumes(fldPath.Child("volumes"), spec.Volumes)...)
	// v1.24 reported the three capability errors at paths without "spec.".
	if len(spec.RequiredDropCapabilities) > 0 && slices.Contains(spec.AllowedCapabilities, policy.AllowAllCapabilities) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("requiredDropCapabilities"), spec.RequiredDropCapabilities,
			"must be empty when all capabilities are allowed by a wildcard"))
	}
	allErrs = append(allErrs, validateCapsAgainstDrops(field.NewPath("defaultAddCapabilities"), spec.DefaultAddCapabilities, spec.RequiredDropCapabilities)...)
	allErrs = append(allErrs, validateCapsAgainstDrops(field.NewPath("allowedCapabilities"), spec.AllowedCapabilities, spec.RequiredDropCapabilities)...)
	allErrs = append(allErrs, validateDefaultAllowPrivilegeEscalation(fldPath.Child("defaultAllowPrivilegeEscalation"),
		spec.DefaultAllowPrivilegeEscalation, spec.AllowPrivilegeEscalation)...)
	for i, t := range spec.AllowedProcMountTypes {
		if err := corevalidation.ValidateProcMountType(fldPath.Child("allowedProcMountTypes").Index(i), t); err != nil {
			allErrs = append(allErrs, err)
		}
	}
	allErrs = append(allErrs, validateAllowedHostPaths(fldPath.Child("allowedHostPaths"), spec.AllowedHostPaths)...)
	for i, fv := range spec.AllowedFlexVolumes {
		if fv.Driver == "" {
			// The doubled segment is v1.24's.
			allErrs = append(allErrs, field.Required(fldPath.Child("allowedFlexVolumes", "allowedFlexVolumes").Index(i).Child("driver"),
				"must specify a driver"))
		}
	}
	for i, d := range spec.AllowedCSIDrivers {
		// So is the singular "allowedCSIDriver".
		allErrs = append(allErrs, corevalidation.ValidateCSIDriverName(d.Name, fldPath.Child("allowedCSIDrivers", "allowedCSIDriver").Index(i).Child("name"))...)
	}
	allowedSysctls, forbiddenSysctls := fldPath.Child("allowedUnsafeSysctls"), fldPath.Child("forbiddenSysctls")
	allErrs = append(allErrs, validateSysctls(allowedSysctls, spec.AllowedUnsafeSysctls)...)
	allErrs = append(allErrs, validateSysctls(forbiddenSysctls, spec.ForbiddenSysctls)...)
	allErrs = append(allErrs, validateSysctlListsDoNotOverlap(allowedSysctls, forbiddenSysctls, spec.AllowedUnsafeSysctls, spec.ForbiddenSysctls)...)
	allErrs = append(allErrs, validateRuntimeClass(fldPath.Child("runtimeClass"), spec.RuntimeClass)...)
	return allErrs
}

// validateRule reports a rule that is not one of supported, listing them
// sorted as v1.24 did.
func validateRule[T ~string](fldPath *field.Path, rule T, supported ...T) field.ErrorList {
	if slices.Contains(supported, rule) {
		return nil
	}
	values := make([]string, len(supported))
	for i, s := range supported {
		values[i] = string(s)
	}
	slices.Sort(values)
	return field.ErrorList{field.NotSupported(fldPath, rule, values)}
}

func validateRunAsUser(fldPath *field.Path, opts *policy.RunAsUserStrategyOptions) field.ErrorList {
	allErrs := validateRule(fldPath.Child("rule"), opts.Rule,
		policy.RunAsUserStrategyMustRunAs, policy.RunAsUserStrategyMustRunAsNonRoot, policy.RunAsUserStrategyRunAsAny)
	// Ranges are checked but not required, even for MustRunAs.
	return append(allErrs, validateIDRanges(fldPath.Child("ranges"), opts.Ranges)...)
}

func validateRunAsGroup(fldPath *field.Path, opts *policy.RunAsGroupStrategyOptions) field.ErrorList {
	if opts == nil {
		return nil
	}
	rangesPath := fldPath.Child("ranges")
	switch opts.Rule {
	case policy.RunAsGroupStrategyRunAsAny:
		if len(opts.Ranges) != 0 {
			return field.ErrorList{field.Invalid(rangesPath, opts.Ranges, "Ranges must be empty")}
		}
		return nil
	case policy.RunAsGroupStrategyMustRunAs, policy.RunAsGroupStrategyMayRunAs:
		var allErrs field.ErrorList
		if len(opts.Ranges) == 0 {
			allErrs = append(allErrs, field.Invalid(rangesPath, opts.Ranges, "must provide at least one range"))
		}
		return append(allErrs, validateIDRanges(rangesPath, opts.Ranges)...)
	default:
		// v1.24 listed these three in this order, unsorted.
		return field.ErrorList{field.NotSupported(fldPath.Child("rule"), opts.Rule, []string{
			string(policy.RunAsGroupStrategyMustRunAs),
			string(policy.RunAsGroupStrategyRunAsAny),
			string(policy.RunAsGroupStrategyMayRunAs),
		})}
	}
}

func validateIDRanges(fldPath *field.Path, ranges []policy.IDRange) field.ErrorList {
	var allErrs field.ErrorList
	for i, r := range ranges {
		p := fldPath.Index(i)
		if r.Min < 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("min"), r.Min, "min cannot be negative"))
		}
		if r.Max < 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("max"), r.Max, "max cannot be negative"))
		}
		if r.Min > r.Max {
			allErrs = append(allErrs, field.Invalid(p.Child("min"), r.Min, "min cannot be greater than max"))
		}
	}
	return allErrs
}

// AllFSTypes are the volume types a policy can name, "*" excluded: v1.24's
// list plus "image".
var AllFSTypes = []policy.FSType{
	policy.AzureFile, policy.Flocker, policy.FlexVolume, policy.HostPath, policy.EmptyDir,
	policy.GCEPersistentDisk, policy.AWSElasticBlockStore, policy.GitRepo, policy.Secret, policy.NFS,
	policy.ISCSI, policy.Glusterfs, policy.PersistentVolumeClaim, policy.RBD, policy.Cinder,
	policy.CephFS, policy.DownwardAPI, policy.FC, policy.ConfigMap, policy.VsphereVolume,
	policy.Quobyte, policy.AzureDisk, policy.PhotonPersistentDisk, policy.StorageOS, policy.Projected,
	policy.PortworxVolume, policy.ScaleIO, policy.CSI, policy.Ephemeral, policy.Image,
}

func validateVolumes(fldPath *field.Path, volumes []policy.FSType) field.ErrorList {
	var allErrs field.ErrorList
	for _, v := range volumes {
		if v != policy.All && !slices.Contains(AllFSTypes, v) {
			supported := make([]string, 0, len(AllFSTypes)+1)
			for _, t := range AllFSTypes {
				supported = append(supported, string(t))
			}
			supported = append(supported, string(policy.All))
			slices.Sort(supported)
			// v1.24 reported every bad entry at the list's path.
			allErrs = append(allErrs, field.NotSupported(fldPath, v, supported))
		}
	}
	return allErrs
}

func validateCapsAgainstDrops(fldPath *field.Path, caps, requiredDrops []core.Capability) field.ErrorList {
	var allErrs field.ErrorList
	for _, c := range caps {
		if slices.Contains(requiredDrops, c) {
			allErrs = append(allErrs, field.Invalid(fldPath, c,
				fmt.Sprintf("capability is listed in %s and requiredDropCapabilities", fldPath)))
		}
	}
	return allErrs
}

// validateDefaultAllowPrivilegeEscalation: a default of true needs
// allowPrivilegeEscalation true. An unset allowPrivilegeEscalation means
// true, its API default.
func validateDefaultAllowPrivilegeEscalation(fldPath *field.Path, defaultAllow, allow *bool) field.ErrorList {
	if defaultAllow != nil && *defaultAllow && allow != nil && !*allow {
		return field.ErrorList{field.Invalid(fldPath, *defaultAllow,
			"Cannot set DefaultAllowPrivilegeEscalation to true without also setting AllowPrivilegeEscalation to true")}
	}
	return nil
}

func validateAllowedHostPaths(fldPath *field.Path, paths []policy.AllowedHostPath) field.ErrorList {
	var allErrs field.ErrorList
	for i, p := range paths {
		if p.PathPrefix == "" {
			// v1.24 stopped at the first empty prefix.
			allErrs = append(allErrs, field.Required(fldPath.Index(i), "is required"))
			break
		}
		if slices.Contains(strings.Split(filepath.ToSlash(p.PathPrefix), "/"), "..") {
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i), p.PathPrefix, "must not contain '..'"))
		}
	}
	return allErrs
}

// SysctlPatternFmt is what a sysctl name or pattern in a policy must match:
// dot-separated segments, the last of which may end in "*". Unlike pods in
// Kubernetes v1.36, policies take no "/" separators, as in v1.24.
const SysctlPatternFmt = "(" + corevalidation.SysctlSegmentFmt + "\\.)*" + "([a-z0-9][-_a-z0-9]*)?[a-z0-9*]"

var sysctlPattern = regexp.MustCompile("^" + SysctlPatternFmt + "$")

// IsValidSysctlPattern reports whether name is a valid sysctl name or
// pattern for a policy.
func IsValidSysctlPattern(name string) bool {
	return len(name) <= corevalidation.SysctlMaxLength && sysctlPattern.MatchString(name)
}

func validateSysctls(fldPath *field.Path, sysctls []string) field.ErrorList {
	var allErrs field.ErrorList
	coversAll := false
	for i, s := range sysctls {
		switch {
		case s == "":
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i), s, "empty sysctl not allowed"))
		case !IsValidSysctlPattern(s):
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i), s,
				fmt.Sprintf("must have at most %d characters and match regex %s", corevalidation.SysctlMaxLength, SysctlPatternFmt)))
		case s[0] == '*':
			coversAll = true
		}
	}
	if coversAll && len(sysctls) > 1 {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("items"), "if '*' is present, must not specify other sysctls"))
	}
	return allErrs
}

// validateSysctlListsDoNotOverlap reports a sysctl both allowed and
// forbidden, where either side may be a "prefix*" pattern. The error goes to
// the entry that the other one covers.
func validateSysctlListsDoNotOverlap(allowedPath, forbiddenPath *field.Path, allowed, forbidden []string) field.ErrorList {
	var allErrs field.ErrorList
	for i, a := range allowed {
		aPrefix, aIsPattern := strings.CutSuffix(a, "*")
		for j, f := range forbidden {
			fPrefix, fIsPattern := strings.CutSuffix(f, "*")
			allowedErr := field.Invalid(allowedPath.Index(i), a, fmt.Sprintf("sysctl overlaps with %v", f))
			forbiddenErr := field.Invalid(forbiddenPath.Index(j), f, fmt.Sprintf("sysctl overlaps with %v", a))
			switch {
			case aIsPattern && fIsPattern:
				if strings.HasPrefix(aPrefix, fPrefix) {
					allErrs = append(allErrs, allowedErr)
				} else if strings.HasPrefix(fPrefix, aPrefix) {
					allErrs = append(allErrs, forbiddenErr)
				}
			case aIsPattern:
				if strings.HasPrefix(f, aPrefix) {
					allErrs = append(allErrs, forbiddenErr)
				}
			case fIsPattern:
				if strings.HasPrefix(a, fPrefix) {
					allErrs = append(allErrs, allowedErr)
				}
			default:
				if a == f {
					allErrs = append(allErrs, allowedErr)
				}
			}
		}
	}
	return allErrs
}

func validateRuntimeClass(fldPath *field.Path, rc *policy.RuntimeClassStrategyOptions) field.ErrorList {
	if rc == nil {
		return nil
	}
	var allErrs field.ErrorList
	namesPath := fldPath.Child("allowedRuntimeClassNames")
	seen := map[string]bool{}
	for i, name := range rc.AllowedRuntimeClassNames {
		if name != policy.AllowAllRuntimeClassNames {
			allErrs = append(allErrs, corevalidation.ValidateRuntimeClassName(name, namesPath.Index(i))...)
		}
		if seen[name] {
			allErrs = append(allErrs, field.Duplicate(namesPath.Index(i), name))
		}
		seen[name] = true
	}
	if d := rc.DefaultRuntimeClassName; d != nil {
		allErrs = append(allErrs, corevalidation.ValidateRuntimeClassName(*d, fldPath.Child("defaultRuntimeClassName"))...)
		if !seen[*d] && !seen[policy.AllowAllRuntimeClassNames] {
			allErrs = append(allErrs, field.Required(namesPath, fmt.Sprintf("default %q must be allowed", *d)))
		}
	}
	if seen[policy.AllowAllRuntimeClassNames] && len(rc.AllowedRuntimeClassNames) > 1 {
		allErrs = append(allErrs, field.Invalid(namesPath, rc.AllowedRuntimeClassNames,
			"if '*' is present, must not specify other RuntimeClass names"))
	}
	return allErrs
}
