// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

// The deliberate differences from v1.24 (docs/podsecuritypolicy.md,
// "Differences from v1.24"), through the plugin unless the difference is in one provider.

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/lineapi"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy"
)

// TestPortSeccompDefaultField: the default profile goes into
// spec.securityContext.seccompProfile, not the pod annotation (4.8.3).
func TestPortSeccompDefaultField(t *testing.T) {
	withDefault := func(name string) []*policy.PodSecurityPolicy {
		return psps(annotated(psp(permissive, "p", nil), seccompDefault, name, seccompAllowed, "*"))
	}
	podProfile := func(p *api.SeccompProfile) func(*api.Pod) {
		return func(pod *api.Pod) { psc(pod).SeccompProfile = p }
	}
	runCreates(t, []createCase{
		{
			name: "runtime/default", psps: withDefault("runtime/default"), pod: goodPod(), wantPSP: "p",
			want: podProfile(&api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault}),
		},
		{
			name: "docker/default", psps: withDefault("docker/default"), pod: goodPod(), wantPSP: "p",
			want: podProfile(&api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault}),
		},
		{
			name: "unconfined", psps: withDefault("unconfined"), pod: goodPod(), wantPSP: "p",
			want: podProfile(&api.SeccompProfile{Type: api.SeccompProfileTypeUnconfined}),
		},
		{
			name: "localhost", psps: withDefault("localhost/profiles/audit.json"), pod: goodPod(), wantPSP: "p",
			want: podProfile(&api.SeccompProfile{Type: api.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/audit.json")}),
		},
		{
			name: "nil pod security context", psps: withDefault("runtime/default"), wantPSP: "p",
			pod:  podWith(func(p *api.Pod) { p.Spec.SecurityContext = nil }),
			want: podProfile(&api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault}),
		},
		{
			name: "pod field kept", psps: withDefault("runtime/default"), wantPSP: "p",
			pod: podWith(podProfile(&api.SeccompProfile{Type: api.SeccompProfileTypeUnconfined})),
		},
		{
			// An annotation is made effective: nodes read only the field.
			name: "pod annotation written to the field instead of the default", psps: withDefault("runtime/default"), wantPSP: "p",
			pod:  podAnnotated(seccompPodKey, "localhost/x"),
			want: podProfile(&api.SeccompProfile{Type: api.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("x")}),
		},
		{
			name: "container annotation written to the container field", psps: withDefault("runtime/default"), wantPSP: "p",
			pod: podAnnotated(seccompTestCKey, "unconfined"),
			want: func(p *api.Pod) {
				psc(p).SeccompProfile = &api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault}
				c0(p).SeccompProfile = &api.SeccompProfile{Type: api.SeccompProfileTypeUnconfined}
			},
		},
		{
			// A name no field can express stays an annotation (v1.36's pod
			// validation refuses it later); it still counts as a profile.
			name: "pod annotation no field can express", psps: withDefault("runtime/default"), wantPSP: "p",
			pod: podAnnotated(seccompPodKey, "foo"),
		},
		{
			// Without the field, an allowed list would be met by an annotation
			// the node ignores.
			name: "annotation alone cannot meet the allowed list by itself", wantPSP: "p",
			psps: psps(annotated(psp(permissive, "p", nil), seccompAllowed, "runtime/default")),
			pod:  podAnnotated(seccompPodKey, "runtime/default"),
			want: podProfile(&api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault}),
		},
		{
			name: "empty pod annotation does not", psps: withDefault("runtime/default"), wantPSP: "p",
			pod:  podAnnotated(seccompPodKey, ""),
			want: podProfile(&api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault}),
		},
		{
			// Containers are never defaulted; a container's own profile
			// does not stop the pod default.
			name: "container field, pod defaulted", psps: withDefault("runtime/default"), wantPSP: "p",
			pod:  podWith(func(p *api.Pod) { c0(p).SeccompProfile = &api.SeccompProfile{Type: api.SeccompProfileTypeUnconfined} }),
			want: podProfile(&api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault}),
		},
		{
			// With a restricted list, the defaulted field passes validation,
			// for the pod and for containers that inherit it.
			name: "restricted list accepts its default", wantPSP: "p",
			psps: psps(annotated(psp(permissive, "p", nil), seccompDefault, "runtime/default", seccompAllowed, "runtime/default")),
			pod:  podWith(func(p *api.Pod) { p.Spec.InitContainers = []api.Container{{Name: "init"}} }),
			want: podProfile(&api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault}),
		},
		{
			name: "container field judged before the container annotation",
			psps: psps(annotated(psp(permissive, "p", nil), seccompAllowed, "runtime/default")),
			pod: podWith(func(p *api.Pod) {
				p.Annotations = map[string]string{seccompTestCKey: "localhost/bar"}
				psc(p).SeccompProfile = &api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault}
				c0(p).SeccompProfile = &api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault}
			}),
			wantPSP: "p",
		},
		{
			name: "container field refused",
			psps: psps(annotated(psp(permissive, "p", nil), seccompAllowed, "runtime/default")),
			pod: podWith(func(p *api.Pod) {
				psc(p).SeccompProfile = &api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault}
				c0(p).SeccompProfile = &api.SeccompProfile{Type: api.SeccompProfileTypeUnconfined}
			}),
			wantErrs: []string{"pod.metadata.annotations[" + seccompTestCKey + "]: Forbidden: unconfined is not an allowed seccomp profile. Valid values are runtime/default"},
		},
	})

	// A default no field can name (the API refuses it) makes the policy
	// unusable rather than writing a profile that is not one.
	if _, err := podsecuritypolicy.NewProvider(annotated(permissive(), seccompDefault, "foo")); err == nil {
		t.Error(`NewProvider accepted the seccomp default "foo"`)
	}
}

// TestPortAppArmorFields: the default goes into each container's
// appArmorProfile; the effective profile is the container's field, else its
// annotation, else the pod's field (4.8.4).
func TestPortAppArmorFields(t *testing.T) {
	runtimeDefault := &api.AppArmorProfile{Type: api.AppArmorProfileTypeRuntimeDefault}
	localhost := func(name string) *api.AppArmorProfile {
		return &api.AppArmorProfile{Type: api.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To(name)}
	}
	withDefault := psps(annotated(psp(permissive, "p", nil), appArmorDefault, "runtime/default"))
	restricted := psps(annotated(psp(permissive, "p", nil), appArmorAllowed, "runtime/default,localhost/foo"))
	threeContainers := func(p *api.Pod) {
		p.Spec.InitContainers = []api.Container{{Name: "init"}}
		p.Spec.EphemeralContainers = []api.EphemeralContainer{{EphemeralContainerCommon: api.EphemeralContainerCommon{Name: "debug"}}}
	}
	runCreates(t, []createCase{
		{
			name: "default on every container", psps: withDefault, wantPSP: "p", pod: podWith(threeContainers),
			want: func(p *api.Pod) { allContainers(p, func(c *api.Container) { csc(c).AppArmorProfile = runtimeDefault }) },
		},
		{
			name: "pod field is the containers' profile", psps: withDefault, wantPSP: "p",
			pod: podWith(func(p *api.Pod) { psc(p).AppArmorProfile = localhost("foo") }),
		},
		{
			name: "container annotation kept", psps: withDefault, wantPSP: "p",
			pod: podAnnotated(appArmorKey, "localhost/foo"),
		},
		{
			name: "empty container annotation is no profile", psps: withDefault, wantPSP: "p",
			pod:  podAnnotated(appArmorKey, ""),
			want: func(p *api.Pod) { c0(p).AppArmorProfile = runtimeDefault },
		},
		{
			name: "container field kept", psps: withDefault, wantPSP: "p",
			pod: podWith(func(p *api.Pod) { c0(p).AppArmorProfile = localhost("foo") }),
		},
		{
			name: "restricted: container field allowed", psps: restricted, wantPSP: "p",
			pod: podWith(func(p *api.Pod) { c0(p).AppArmorProfile = localhost("foo") }),
		},
		{
			name: "restricted: pod field allowed for every container", psps: restricted, wantPSP: "p",
			pod: podWith(func(p *api.Pod) { threeContainers(p); psc(p).AppArmorProfile = runtimeDefault }),
		},
		{
			name: "restricted: container field refused", psps: restricted,
			pod:      podWith(func(p *api.Pod) { c0(p).AppArmorProfile = localhost("bar") }),
			wantErrs: []string{`pod.metadata.annotations[` + appArmorKey + `]: Forbidden: localhost/bar is not an allowed profile. Allowed values: "runtime/default,localhost/foo"`},
		},
		{
			name: "restricted: unconfined field refused", psps: restricted,
			pod: podWith(func(p *api.Pod) {
				c0(p).AppArmorProfile = &api.AppArmorProfile{Type: api.AppArmorProfileTypeUnconfined}
			}),
			wantErrs: []string{"unconfined is not an allowed profile"},
		},
		{
			name: "restricted: container field before its annotation", psps: restricted, wantPSP: "p",
			pod: podWith(func(p *api.Pod) {
				p.Annotations = map[string]string{appArmorKey: "localhost/bar"}
				c0(p).AppArmorProfile = localhost("foo")
			}),
		},
		{
			name: "restricted: container annotation before the pod field", psps: restricted, wantPSP: "p",
			pod: podWith(func(p *api.Pod) {
				p.Annotations = map[string]string{appArmorKey: "localhost/foo"}
				psc(p).AppArmorProfile = localhost("bar")
			}),
		},
		{
			name: "restricted: ephemeral container without a profile", psps: restricted,
			pod: podWith(func(p *api.Pod) {
				psc(p).AppArmorProfile = nil
				c0(p).AppArmorProfile = runtimeDefault
				p.Spec.EphemeralContainers = []api.EphemeralContainer{{EphemeralContainerCommon: api.EphemeralContainerCommon{Name: "debug"}}}
			}),
			wantErrs: []string{"pod.metadata.annotations[container.apparmor.security.beta.kubernetes.io/debug]: Forbidden: AppArmor profile must be set"},
		},
	})
}

// TestPortImageVolumes: image volumes (v1.31+) are the FSType "image",
// included in "*" (4.8.5).
func TestPortImageVolumes(t *testing.T) {
	pod := podWith(func(p *api.Pod) {
		p.Spec.Volumes = []api.Volume{{Name: "img", VolumeSource: api.VolumeSource{Image: &api.ImageVolumeSource{Reference: "registry.example/data:1"}}}}
	})
	vols := func(types ...policy.FSType) []*policy.PodSecurityPolicy {
		return psps(psp(permissive, "p", func(s *policy.PodSecurityPolicySpec) { s.Volumes = types }))
	}
	runCreates(t, []createCase{
		{name: "image under *", psps: vols(policy.All), pod: pod, wantPSP: "p"},
		{name: "image listed", psps: vols(policy.Image), pod: pod, wantPSP: "p"},
		{name: "image not listed", psps: vols(policy.Secret, policy.EmptyDir), pod: pod, wantErrs: []string{`spec.volumes[0]: Invalid value: "image": image volumes are not allowed to be used`}},
		{name: "no volumes allowed", psps: vols(), pod: pod, wantErrs: []string{"image volumes are not allowed to be used"}},
	})
}

// TestPortEphemeralContainersSubresource: an update of
// pods/ephemeralcontainers is validated (not mutated), unlike v1.24 (4.8.6).
func TestPortEphemeralContainersSubresource(t *testing.T) {
	// A pod as the restrictive policy admitted it.
	admitted := goodPod()
	restrictiveDefaults(admitted)
	admitted.Annotations = map[string]string{podsecuritypolicy.ValidatedPSPAnnotation: "restrictive"}
	compliant := func() *api.SecurityContext {
		return &api.SecurityContext{RunAsUser: ptr.To[int64](999), RunAsGroup: ptr.To[int64](999), AllowPrivilegeEscalation: ptr.To(false)}
	}
	withDebug := func(sc *api.SecurityContext) *api.Pod {
		p := admitted.DeepCopy()
		p.Spec.EphemeralContainers = []api.EphemeralContainer{{EphemeralContainerCommon: api.EphemeralContainerCommon{
			Name: "debug", Image: "busybox", SecurityContext: sc,
		}}}
		return p
	}
	privilegedDebug := compliant()
	privilegedDebug.Privileged = ptr.To(true)
	privilegedPolicy := psp(permissive, "privileged", func(s *policy.PodSecurityPolicySpec) { s.Privileged = true })

	// The restrictive policy accepts the admitted pod as it is.
	s := podsecuritypolicy.NewSubject(admitted)
	if pr, err := podsecuritypolicy.NewProvider(restrictive()); err != nil || pr.Mutates(&s) || len(pr.ValidatePod(admitted)) > 0 {
		t.Fatalf("fixture: the admitted pod does not satisfy the restrictive policy unchanged (%v)", err)
	}
	runUpdates(t, []updateCase{
		{
			name: "privileged ephemeral container under restrictive", psps: psps(restrictive()), subresource: "ephemeralcontainers",
			old: admitted, pod: withDebug(privilegedDebug),
			wantErrs: []string{"spec.ephemeralContainers[0].securityContext.privileged: Invalid value: true: Privileged containers are not allowed"},
		},
		{
			name: "privileged ephemeral container with a privileged policy", psps: psps(restrictive(), privilegedPolicy), subresource: "ephemeralcontainers",
			old: admitted, pod: withDebug(privilegedDebug), wantPSP: "privileged",
		},
		{
			name: "compliant ephemeral container under restrictive", psps: psps(restrictive(), privilegedPolicy), subresource: "ephemeralcontainers",
			old: admitted, pod: withDebug(compliant()), wantPSP: "restrictive",
		},
		{
			// Validate does not default: a container added later must
			// carry the values the policy would have given it. The policy
			// would default them, so, as for any update only a mutation
			// would fix (case 8), no error is listed.
			name: "ephemeral container without a security context", psps: psps(restrictive()), subresource: "ephemeralcontainers",
			old: admitted, pod: withDebug(nil), wantErrs: []string{"unable to validate pod: []"},
		},
		{
			name: "ephemeral container without a security context, privileged", psps: psps(restrictive()), subresource: "ephemeralcontainers",
			old: admitted, pod: withDebug(&api.SecurityContext{Privileged: ptr.To(true)}),
			wantErrs: []string{"spec.ephemeralContainers[0].securityContext.privileged: Invalid value: true: Privileged containers are not allowed"},
		},
		{
			name: "other subresources are ignored", psps: psps(restrictive()), subresource: "status",
			old: admitted, pod: withDebug(privilegedDebug), ignored: true,
		},
		{
			name: "unchanged ephemeral containers are ignored", psps: psps(restrictive()), subresource: "ephemeralcontainers",
			old: withDebug(privilegedDebug), pod: withDebug(privilegedDebug), ignored: true,
		},
	})
}

// TestPortWindowsPods: Windows pods get no Linux-only defaults; only
// runAsNonRoot and runtimeClassName are defaulted (4.8.7).
func TestPortWindowsPods(t *testing.T) {
	everything := func(rule policy.RunAsUserStrategy) *policy.PodSecurityPolicy {
		p := psp(restrictive, "p", func(s *policy.PodSecurityPolicySpec) {
			if rule != policy.RunAsUserStrategyMustRunAs {
				s.RunAsUser = policy.RunAsUserStrategyOptions{Rule: rule}
			}
			s.DefaultAddCapabilities = []api.Capability{"NET_BIND_SERVICE"}
			s.RequiredDropCapabilities = []api.Capability{"NET_RAW"}
			s.ReadOnlyRootFilesystem = true
			s.DefaultAllowPrivilegeEscalation = ptr.To(false)
			s.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"*"}, DefaultRuntimeClassName: ptr.To("windows-rc")}
		})
		return annotated(p, seccompDefault, "runtime/default", appArmorDefault, "runtime/default")
	}
	windows := func(os api.OSName) *api.Pod {
		return podWith(func(p *api.Pod) {
			p.Spec.OS = &api.PodOS{Name: os}
			p.Spec.InitContainers = []api.Container{{Name: "init"}}
		})
	}
	for _, tc := range []struct {
		name string
		psp  *policy.PodSecurityPolicy
		pod  *api.Pod
		want func(*api.Pod)
	}{
		{
			name: "MustRunAs policy, Windows pod", psp: everything(policy.RunAsUserStrategyMustRunAs), pod: windows(api.Windows),
			want: func(p *api.Pod) { p.Spec.RuntimeClassName = ptr.To("windows-rc") },
		},
		{
			name: "MustRunAsNonRoot policy, Windows pod", psp: everything(policy.RunAsUserStrategyMustRunAsNonRoot), pod: windows(api.Windows),
			want: func(p *api.Pod) {
				p.Spec.RuntimeClassName = ptr.To("windows-rc")
				allContainers(p, func(c *api.Container) { csc(c).RunAsNonRoot = ptr.To(true) })
			},
		},
		{
			name: "contrast: MustRunAs policy, Linux pod", psp: everything(policy.RunAsUserStrategyMustRunAs), pod: windows(api.Linux),
			want: func(p *api.Pod) {
				restrictiveDefaults(p)
				p.Spec.RuntimeClassName = ptr.To("windows-rc")
				p.Spec.SecurityContext.SeccompProfile = &api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault}
				allContainers(p, func(c *api.Container) {
					c.SecurityContext.AppArmorProfile = &api.AppArmorProfile{Type: api.AppArmorProfileTypeRuntimeDefault}
					c.SecurityContext.Capabilities = &api.Capabilities{Add: []api.Capability{"NET_BIND_SERVICE"}, Drop: []api.Capability{"NET_RAW"}}
					c.SecurityContext.ReadOnlyRootFilesystem = ptr.To(true)
				})
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, err := podsecuritypolicy.NewProvider(tc.psp)
			if err != nil {
				t.Fatal(err)
			}
			got := tc.pod.DeepCopy()
			if s := podsecuritypolicy.NewSubject(got); !pr.Mutates(&s) {
				t.Error("Mutates = false")
			}
			pr.MutatePod(got)
			want := tc.pod.DeepCopy()
			tc.want(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("MutatePod (-want +got):\n%s", diff)
			}
		})
	}

	// Through the plugin, a policy whose rules need Linux-only fields
	// refuses a Windows pod (it cannot carry them); one that does not
	// admits it unchanged.
	runCreates(t, []createCase{
		{
			name: "Windows pod under restrictive is refused", psps: psps(restrictive()), pod: windows(api.Windows),
			wantErrs: []string{"spec.containers[0].securityContext.runAsUser: Required value", "spec.securityContext.fsGroup: Invalid value: []: unable to validate empty groups against required ranges"},
		},
		{name: "Windows pod under permissive", psps: psps(permissive()), pod: windows(api.Windows), wantPSP: "privileged"},
	})
}

// TestPortSysctlSlashNames: sysctl names written with "/" are judged by
// their "." form (4.8.8).
func TestPortSysctlSlashNames(t *testing.T) {
	sysctls := func(allowedUnsafe, forbidden []string) []*policy.PodSecurityPolicy {
		return psps(psp(permissive, "p", func(s *policy.PodSecurityPolicySpec) {
			s.AllowedUnsafeSysctls, s.ForbiddenSysctls = allowedUnsafe, forbidden
		}))
	}
	withSysctl := func(name string) *api.Pod {
		return podWith(func(p *api.Pod) { p.Spec.SecurityContext.Sysctls = []api.Sysctl{{Name: name, Value: "1"}} })
	}
	runCreates(t, []createCase{
		{name: "net/ipv4/ip_local_port_range is safe", psps: sysctls(nil, nil), pod: withSysctl("net/ipv4/ip_local_port_range"), wantPSP: "p"},
		{
			name: "forbidden pattern matches the slash form", psps: sysctls(nil, []string{"net.ipv4.*"}), pod: withSysctl("net/ipv4/ip_local_port_range"),
			wantErrs: []string{`sysctl "net/ipv4/ip_local_port_range" is not allowed`},
		},
		{name: "allowed unsafe pattern matches the slash form", psps: sysctls([]string{"kernel.msg*"}, nil), pod: withSysctl("kernel/msgmax"), wantPSP: "p"},
		{name: "unsafe slash form refused", psps: sysctls(nil, nil), pod: withSysctl("kernel/msgmax"), wantErrs: []string{`unsafe sysctl "kernel/msgmax" is not allowed`}},
	})
}

// TestPortErrorsInPolicyOrder: a refusal lists the policies' errors in the
// order the policies were tried (v1.24: map order).
func TestPortErrorsInPolicyOrder(t *testing.T) {
	pod := podWith(func(p *api.Pod) {
		lineapi.SetPodHostNamespaces(&p.Spec, lineapi.HostNamespaces{PID: true})
		c0(p).Privileged = ptr.To(true)
	})
	// "a" refuses only the privileged container, "b" only hostPID.
	a := psp(permissive, "a", nil)
	b := psp(permissive, "b", func(s *policy.PodSecurityPolicySpec) { s.Privileged, s.HostPID = true, false })
	for range 10 {
		p := newTestPlugin(nil, b, a)
		r := newRequest(t, admission.Create, pod.DeepCopy(), nil, pod.Namespace, "", testUser)
		err := r.admit(p)
		if err == nil {
			t.Fatal("Admit allowed the pod")
		}
		msg := err.Error()
		priv, pid := strings.Index(msg, "Privileged containers are not allowed"), strings.Index(msg, "Host PID is not allowed to be used")
		if priv < 0 || pid < 0 || priv > pid {
			t.Fatalf("want a's error, then b's: %v", err)
		}
	}
}

// TestPortNotSyncedIsUnavailable: until the policy cache has synced, pods
// are refused with 503 and a Retry-After rather than judged against a
// partial list of policies. admission.Handler waits 10 s before giving up,
// so the two phases run in parallel.
func TestPortNotSyncedIsUnavailable(t *testing.T) {
	t.Parallel()
	for _, phase := range []string{"Admit", "Validate"} {
		t.Run(phase, func(t *testing.T) {
			t.Parallel()
			p := newTestPlugin(nil, permissive())
			p.SetReadyFunc(func() bool { return false })
			pod := goodPod()
			r := newRequest(t, admission.Create, pod, nil, pod.Namespace, "", testUser)
			var err error
			if phase == "Admit" {
				err = r.admit(p)
			} else {
				err = r.validate(p)
			}
			if !apierrors.IsServiceUnavailable(err) {
				t.Fatalf("got %v, want 503 Service Unavailable", err)
			}
			if delay, ok := apierrors.SuggestsClientDelay(err); !ok || delay != 1 {
				t.Errorf("RetryAfterSeconds = %d, %v; want 1", delay, ok)
			}
			if diff := cmp.Diff(goodPod(), pod); diff != "" {
				t.Errorf("pod changed (-before +after):\n%s", diff)
			}
			r.wantAudit(t, "", "")
		})
	}

	t.Run("requests the plugin ignores do not wait", func(t *testing.T) {
		t.Parallel()
		p := newTestPlugin(nil, permissive())
		p.SetReadyFunc(func() bool { return false })
		pod := goodPod()
		start := time.Now()
		r := newRequest(t, admission.Create, pod, nil, pod.Namespace, "status", testUser)
		if err := r.admit(p); err != nil {
			t.Errorf("Admit of a subresource: %v", err)
		}
		r = newRequest(t, admission.Update, pod, pod.DeepCopy(), pod.Namespace, "", testUser)
		if err := r.admit(p); err != nil {
			t.Errorf("Admit of an update: %v", err)
		}
		if err := r.validate(p); err != nil {
			t.Errorf("Validate of an unchanged update: %v", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("ignored requests took %v", d)
		}
	})

	t.Run("a cache that syncs while waiting", func(t *testing.T) {
		t.Parallel()
		p := newTestPlugin(nil, permissive())
		var calls atomic.Int32
		p.SetReadyFunc(func() bool { return calls.Add(1) > 2 })
		c := createCase{psps: psps(permissive()), pod: goodPod(), wantPSP: "privileged"}
		pod := c.pod.DeepCopy()
		r := newRequest(t, admission.Create, pod, nil, pod.Namespace, "", testUser)
		if err := r.admit(p); err != nil {
			t.Fatalf("Admit: %v", err)
		}
		if err := r.validate(p); err != nil {
			t.Fatalf("Validate: %v", err)
		}
		r.wantAudit(t, "privileged", "privileged")
	})
}
