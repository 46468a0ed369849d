// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package policies is the PodSecurityPolicy set of the all-documented
// configuration: what a multi-tenant cluster of the PodSecurityPolicy era
// ran. It has the three policies of the Kubernetes documentation
// (privileged, baseline and restricted), granted as the documentation
// grants them, and one policy per team, granted to that team's service accounts in its namespace: 43
// policies, each with the RBAC `use` grant that makes it available.
//
// The load creates pods as a system:masters user, who may use every
// policy. The plugin tries policies in name order and takes the first that
// admits the pod unchanged, else the first that admits it by mutating it.
// Every policy but privileged mutates the bench pod (they set a default
// seccomp or AppArmor profile, user and group IDs, or a runtime class), so
// each pod create goes through the 27 policies whose names sort before
// privileged before privileged admits it as it is.
package policies

import (
	"context"
	"fmt"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/measure"
	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	policyv1beta1 "github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
	pspclient "github.com/turnstile-k8s/turnstile/pkg/client/clientset/versioned"
	"github.com/turnstile-k8s/turnstile/test/fixtures"
	"github.com/turnstile-k8s/turnstile/test/pspscale"
)

// Annotation is where the plugin records the policy that admitted a pod.
const Annotation = "kubernetes.io/psp"

// Team is one tenant: a namespace and a policy of its own.
type Team struct {
	Name string
	// tweak adapts the team's restricted policy to its workloads; nil keeps it.
	tweak func(*policyv1beta1.PodSecurityPolicySpec)
	// baseline also grants the documentation's baseline policy to the
	// team's service accounts (workloads not yet moved to their own policy).
	baseline bool
}

var teams = []Team{
	{Name: "analytics"},
	{Name: "api-gateway", tweak: lowPorts},
	{Name: "auth", tweak: readOnlyRoot},
	{Name: "billing", tweak: readOnlyRoot},
	{Name: "catalog"},
	{Name: "checkout"},
	{Name: "ci-runners", tweak: runtimeClass("gvisor")},
	{Name: "data-platform", tweak: csiDrivers("ebs.csi.aws.com", "efs.csi.aws.com")},
	{Name: "dns", tweak: hostPorts(53, 53)},
	{Name: "edge", tweak: hostNetwork(80, 443)},
	{Name: "etl", tweak: csiDrivers("ebs.csi.aws.com")},
	{Name: "fraud"},
	{Name: "frontend", tweak: lowPorts},
	{Name: "identity", tweak: readOnlyRoot},
	{Name: "ingest", tweak: csiDrivers("ebs.csi.aws.com")},
	{Name: "inventory"},
	{Name: "kafka", tweak: unsafeSysctls("net.core.somaxconn")},
	{Name: "logging", tweak: nodeAgent(policyv1beta1.AllowedHostPath{PathPrefix: "/var/log", ReadOnly: true})},
	{Name: "ml-training", tweak: runtimeClass("nvidia")},
	{Name: "mobile-backend"},
	{Name: "monitoring", tweak: nodeExporter},
	{Name: "notifications"},
	{Name: "orders"},
	{Name: "payments", tweak: readOnlyRoot},
	{Name: "platform", tweak: lowPorts},
	{Name: "pricing"},
	{Name: "recommendations"},
	{Name: "reporting", baseline: true},
	{Name: "search", tweak: csiDrivers("ebs.csi.aws.com")},
	{Name: "security", tweak: nodeAgent(policyv1beta1.AllowedHostPath{PathPrefix: "/proc", ReadOnly: true}, policyv1beta1.AllowedHostPath{PathPrefix: "/etc", ReadOnly: true})},
	{Name: "shipping"},
	{Name: "storage", tweak: csiDrivers("ebs.csi.aws.com", "efs.csi.aws.com", "secrets-store.csi.k8s.io")},
	{Name: "streaming", tweak: unsafeSysctls("net.core.somaxconn")},
	{Name: "support", baseline: true},
	{Name: "tracing"},
	{Name: "video", baseline: true},
	{Name: "warehouse", baseline: true},
	{Name: "web", tweak: lowPorts},
	{Name: "workflows", baseline: true},
	{Name: "zookeeper", tweak: readOnlyRoot},
}

// Scale, when its teams are set (-psp-teams, -psp-bindings), replaces
// the named teams by that many generic ones, each with its own restricted
// policy and grant, named app-NNN so that every one sorts before
// privileged and is tried for the load's pod, and adds that many other
// RoleBindings and ClusterRoleBindings: PodSecurityPolicy at the scale of
// make bench-psp, seen by the whole apiserver.
var Scale struct{ Teams, Bindings int }

// benchTeams are the teams the benchmark creates.
func benchTeams() []Team {
	if Scale.Teams == 0 {
		return teams
	}
	out := make([]Team, Scale.Teams)
	for i := range out {
		out[i] = Team{Name: fmt.Sprintf("app-%03d", i)}
	}
	return out
}

// createOtherBindings creates pspscale.OtherBindings (n of them, across
// namespaces) from eight clients at once.
func createOtherBindings(ctx context.Context, c kubernetes.Interface, namespaces []string, n int) error {
	objects := make(chan runtime.Object)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for o := range objects {
				var err error
				switch o := o.(type) {
				case *rbacv1.ClusterRole:
					_, err = c.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
				case *rbacv1.ClusterRoleBinding:
					_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
				case *rbacv1.RoleBinding:
					_, err = c.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
				default:
					err = fmt.Errorf("not a binding: %T", o)
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	all := pspscale.OtherBindings(n, namespaces)
	if len(all) > 0 {
		// The ClusterRole first, so that no binding names a missing role.
		if _, err := c.RbacV1().ClusterRoles().Create(ctx, all[0].(*rbacv1.ClusterRole), metav1.CreateOptions{}); err != nil {
			close(objects)
			wg.Wait()
			return fmt.Errorf("other bindings: %w", err)
		}
		all = all[1:]
	}
	for _, o := range all {
		objects <- o
	}
	close(objects)
	wg.Wait()
	select {
	case err := <-errs:
		return fmt.Errorf("other bindings: %w", err)
	default:
		return nil
	}
}

// PSP is a PodSecurityPolicy with the seccomp and AppArmor annotations.
func PSP(name string, annotations map[string]string, spec policyv1beta1.PodSecurityPolicySpec) *policyv1beta1.PodSecurityPolicy {
	return &policyv1beta1.PodSecurityPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}, Spec: spec}
}

// privilegedPolicy allows everything, as the documentation's privileged
// example does.
func privilegedPolicy() *policyv1beta1.PodSecurityPolicy {
	return PSP("privileged", map[string]string{policy.SeccompAllowedProfilesAnnotationKey: policy.SeccompAllowAny}, policyv1beta1.PodSecurityPolicySpec{
		Privileged:               true,
		AllowPrivilegeEscalation: ptr.To(true),
		AllowedCapabilities:      []corev1.Capability{policyv1beta1.AllowAllCapabilities},
		Volumes:                  []policyv1beta1.FSType{policyv1beta1.All},
		HostNetwork:              true,
		HostPorts:                []policyv1beta1.HostPortRange{{Min: 0, Max: 65535}},
		HostIPC:                  true,
		HostPID:                  true,
		RunAsUser:                policyv1beta1.RunAsUserStrategyOptions{Rule: policyv1beta1.RunAsUserStrategyRunAsAny},
		SELinux:                  policyv1beta1.SELinuxStrategyOptions{Rule: policyv1beta1.SELinuxStrategyRunAsAny},
		SupplementalGroups:       policyv1beta1.SupplementalGroupsStrategyOptions{Rule: policyv1beta1.SupplementalGroupsStrategyRunAsAny},
		FSGroup:                  policyv1beta1.FSGroupStrategyOptions{Rule: policyv1beta1.FSGroupStrategyRunAsAny},
	})
}

// baselinePolicy is the documentation's baseline: no privilege, no host
// namespaces or host paths, the container runtime's default capabilities
// minus NET_RAW, the runtime's default AppArmor profile, any user.
func baselinePolicy() *policyv1beta1.PodSecurityPolicy {
	return PSP("baseline", map[string]string{
		policy.AppArmorAllowedProfilesAnnotationKey: "runtime/default",
		policy.AppArmorDefaultProfileAnnotationKey:  "runtime/default",
		policy.SeccompAllowedProfilesAnnotationKey:  policy.SeccompAllowAny,
	}, policyv1beta1.PodSecurityPolicySpec{
		AllowedCapabilities: []corev1.Capability{
			"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "SETGID", "SETUID",
			"SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE",
		},
		Volumes: []policyv1beta1.FSType{
			policyv1beta1.ConfigMap, policyv1beta1.EmptyDir, policyv1beta1.Projected, policyv1beta1.Secret,
			policyv1beta1.DownwardAPI, policyv1beta1.CSI, policyv1beta1.PersistentVolumeClaim, policyv1beta1.Ephemeral,
			policyv1beta1.AWSElasticBlockStore, policyv1beta1.AzureDisk, policyv1beta1.AzureFile, policyv1beta1.CephFS,
			policyv1beta1.Cinder, policyv1beta1.FC, policyv1beta1.FlexVolume, policyv1beta1.Flocker,
			policyv1beta1.GCEPersistentDisk, policyv1beta1.GitRepo, policyv1beta1.Glusterfs, policyv1beta1.ISCSI,
			policyv1beta1.NFS, policyv1beta1.PhotonPersistentDisk, policyv1beta1.PortworxVolume, policyv1beta1.Quobyte,
			policyv1beta1.RBD, policyv1beta1.ScaleIO, policyv1beta1.StorageOS, policyv1beta1.VsphereVolume,
		},
		RunAsUser:          policyv1beta1.RunAsUserStrategyOptions{Rule: policyv1beta1.RunAsUserStrategyRunAsAny},
		SELinux:            policyv1beta1.SELinuxStrategyOptions{Rule: policyv1beta1.SELinuxStrategyRunAsAny},
		SupplementalGroups: policyv1beta1.SupplementalGroupsStrategyOptions{Rule: policyv1beta1.SupplementalGroupsStrategyRunAsAny},
		FSGroup:            policyv1beta1.FSGroupStrategyOptions{Rule: policyv1beta1.FSGroupStrategyRunAsAny},
	})
}

// restrictedAnnotations default and allow only the runtime's seccomp and
// AppArmor profiles.
func restrictedAnnotations() map[string]string {
	return map[string]string{
		policy.SeccompAllowedProfilesAnnotationKey:  "docker/default,runtime/default",
		policy.SeccompDefaultProfileAnnotationKey:   "runtime/default",
		policy.AppArmorAllowedProfilesAnnotationKey: "runtime/default",
		policy.AppArmorDefaultProfileAnnotationKey:  "runtime/default",
	}
}

// RestrictedSpec is the documentation's restricted policy: non-root, no
// privilege escalation, every capability dropped, group IDs assigned, only
// the volume types a workload needs.
func RestrictedSpec() policyv1beta1.PodSecurityPolicySpec {
	groups := []policyv1beta1.IDRange{{Min: 1, Max: 65535}}
	return policyv1beta1.PodSecurityPolicySpec{
		AllowPrivilegeEscalation: ptr.To(false),
		RequiredDropCapabilities: []corev1.Capability{"ALL"},
		Volumes: []policyv1beta1.FSType{
			policyv1beta1.ConfigMap, policyv1beta1.EmptyDir, policyv1beta1.Projected, policyv1beta1.Secret,
			policyv1beta1.DownwardAPI, policyv1beta1.CSI, policyv1beta1.PersistentVolumeClaim, policyv1beta1.Ephemeral,
		},
		RunAsUser:          policyv1beta1.RunAsUserStrategyOptions{Rule: policyv1beta1.RunAsUserStrategyMustRunAsNonRoot},
		SELinux:            policyv1beta1.SELinuxStrategyOptions{Rule: policyv1beta1.SELinuxStrategyRunAsAny},
		SupplementalGroups: policyv1beta1.SupplementalGroupsStrategyOptions{Rule: policyv1beta1.SupplementalGroupsStrategyMustRunAs, Ranges: groups},
		FSGroup:            policyv1beta1.FSGroupStrategyOptions{Rule: policyv1beta1.FSGroupStrategyMustRunAs, Ranges: groups},
	}
}

// TeamPolicy is restricted with the team's own range of 1,000 user and
// group IDs, so that tenants do not share file ownership, then the team's
// tweak.
func TeamPolicy(i int, t Team) *policyv1beta1.PodSecurityPolicy {
	spec := RestrictedSpec()
	base := int64(100000 + 1000*i)
	ids := []policyv1beta1.IDRange{{Min: base, Max: base + 999}}
	spec.RunAsUser = policyv1beta1.RunAsUserStrategyOptions{Rule: policyv1beta1.RunAsUserStrategyMustRunAs, Ranges: ids}
	spec.RunAsGroup = &policyv1beta1.RunAsGroupStrategyOptions{Rule: policyv1beta1.RunAsGroupStrategyMustRunAs, Ranges: ids}
	spec.SupplementalGroups.Ranges = ids
	spec.FSGroup.Ranges = ids
	if t.tweak != nil {
		t.tweak(&spec)
	}
	return PSP(t.Name, restrictedAnnotations(), spec)
}

// The teams' tweaks.

func readOnlyRoot(s *policyv1beta1.PodSecurityPolicySpec) { s.ReadOnlyRootFilesystem = true }

func lowPorts(s *policyv1beta1.PodSecurityPolicySpec) {
	s.AllowedCapabilities = []corev1.Capability{"NET_BIND_SERVICE"}
}

func hostPorts(lo, hi int32) func(*policyv1beta1.PodSecurityPolicySpec) {
	return func(s *policyv1beta1.PodSecurityPolicySpec) {
		lowPorts(s)
		s.HostPorts = append(s.HostPorts, policyv1beta1.HostPortRange{Min: lo, Max: hi})
	}
}

func hostNetwork(ports ...int32) func(*policyv1beta1.PodSecurityPolicySpec) {
	return func(s *policyv1beta1.PodSecurityPolicySpec) {
		lowPorts(s)
		s.HostNetwork = true
		for _, p := range ports {
			s.HostPorts = append(s.HostPorts, policyv1beta1.HostPortRange{Min: p, Max: p})
		}
	}
}

func runtimeClass(name string) func(*policyv1beta1.PodSecurityPolicySpec) {
	return func(s *policyv1beta1.PodSecurityPolicySpec) {
		s.RuntimeClass = &policyv1beta1.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{name}, DefaultRuntimeClassName: ptr.To(name)}
	}
}

func csiDrivers(names ...string) func(*policyv1beta1.PodSecurityPolicySpec) {
	return func(s *policyv1beta1.PodSecurityPolicySpec) {
		for _, n := range names {
			s.AllowedCSIDrivers = append(s.AllowedCSIDrivers, policyv1beta1.AllowedCSIDriver{Name: n})
		}
	}
}

func unsafeSysctls(names ...string) func(*policyv1beta1.PodSecurityPolicySpec) {
	return func(s *policyv1beta1.PodSecurityPolicySpec) { s.AllowedUnsafeSysctls = names }
}

// nodeAgent is a per-node daemon that reads host files: any user, read-only
// host paths under the given prefixes.
func nodeAgent(paths ...policyv1beta1.AllowedHostPath) func(*policyv1beta1.PodSecurityPolicySpec) {
	return func(s *policyv1beta1.PodSecurityPolicySpec) {
		s.RunAsUser = policyv1beta1.RunAsUserStrategyOptions{Rule: policyv1beta1.RunAsUserStrategyRunAsAny}
		s.RunAsGroup = nil
		s.Volumes = append(s.Volumes, policyv1beta1.HostPath)
		s.AllowedHostPaths = paths
	}
}

// nodeExporter is the monitoring agent: host network and PID namespace, its
// metrics port, read-only /proc and /sys.
func nodeExporter(s *policyv1beta1.PodSecurityPolicySpec) {
	nodeAgent(policyv1beta1.AllowedHostPath{PathPrefix: "/proc", ReadOnly: true}, policyv1beta1.AllowedHostPath{PathPrefix: "/sys", ReadOnly: true})(s)
	s.HostNetwork, s.HostPID = true, true
	s.HostPorts = []policyv1beta1.HostPortRange{{Min: 9100, Max: 9100}}
}

// UseRule grants `use` of the named policies.
func UseRule(names ...string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{"policy"}, Resources: []string{"podsecuritypolicies"}, ResourceNames: names, Verbs: []string{"use"}}}
}

func groups(names ...string) []rbacv1.Subject {
	var out []rbacv1.Subject
	for _, n := range names {
		out = append(out, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: n})
	}
	return out
}

// Created drops the object a Create returns.
func Created[T any](_ T, err error) error { return err }

// Step is one object to create.
type Step struct {
	What   string
	Create func() error
}

// RunSteps creates the steps' objects in order and stops at the first that
// fails, naming it.
func RunSteps(steps []Step) error {
	for _, s := range steps {
		if err := s.Create(); err != nil {
			return fmt.Errorf("create %s: %w", s.What, err)
		}
	}
	return nil
}

// Setup creates the policy set and its grants on s, then
// waits until the plugin admits the bench pod as expected.
func Setup(ctx context.Context, s *measure.Server) error {
	c, rbac := s.Client, s.Client.RbacV1()
	// Every PodSecurityPolicy request gets the API's deprecation warning.
	quiet := rest.CopyConfig(s.Config)
	quiet.WarningHandler = rest.NoWarnings{}
	psps, err := pspclient.NewForConfig(quiet)
	if err != nil {
		return err
	}
	policies := psps.PolicyV1beta1().PodSecurityPolicies()
	opts := metav1.CreateOptions{}
	roleRef := func(kind, name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

	// The documentation's grants: privileged for kube-system's service
	// accounts and for the nodes, restricted for every authenticated user.
	var steps []Step
	for _, name := range []string{"privileged", "baseline", "restricted"} {
		steps = append(steps, Step{"ClusterRole psp:" + name, func() error {
			return Created(rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: meta("psp:" + name), Rules: UseRule(name)}, opts))
		}})
	}
	steps = append(steps,
		Step{"ClusterRoleBinding psp:nodes", func() error {
			return Created(rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: meta("psp:nodes"), RoleRef: roleRef("ClusterRole", "psp:privileged"), Subjects: groups("system:nodes"),
			}, opts))
		}},
		Step{"ClusterRoleBinding psp:restricted", func() error {
			return Created(rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: meta("psp:restricted"), RoleRef: roleRef("ClusterRole", "psp:restricted"), Subjects: groups("system:authenticated"),
			}, opts))
		}},
		Step{"RoleBinding kube-system/psp:privileged", func() error {
			return Created(rbac.RoleBindings("kube-system").Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: meta("psp:privileged"), RoleRef: roleRef("ClusterRole", "psp:privileged"), Subjects: groups("system:serviceaccounts:kube-system"),
			}, opts))
		}},
	)

	// Each team: its namespace and default service account, its deployers
	// with the edit role's rules (edit itself is filled in by
	// kube-controller-manager, which the benchmark does not run), its own
	// policy for its service accounts, and for some baseline as well.
	benchTeams := benchTeams()
	for i, t := range benchTeams {
		ns := t.Name
		steps = append(steps,
			Step{ns + " Namespace", func() error {
				return Created(c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: meta(ns)}, opts))
			}},
			Step{ns + " ServiceAccount", func() error {
				return Created(c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta("default")}, opts))
			}},
			Step{ns + " RoleBinding deployers", func() error {
				return Created(rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
					ObjectMeta: meta("deployers"), RoleRef: roleRef("ClusterRole", "system:aggregate-to-edit"), Subjects: groups(ns + ":deployers"),
				}, opts))
			}},
			Step{ns + " Role psp", func() error {
				return Created(rbac.Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: meta("psp:" + ns), Rules: UseRule(ns)}, opts))
			}},
			Step{ns + " RoleBinding psp", func() error {
				return Created(rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
					ObjectMeta: meta("psp:" + ns), RoleRef: roleRef("Role", "psp:"+ns), Subjects: groups("system:serviceaccounts:" + ns),
				}, opts))
			}},
			Step{ns + " PodSecurityPolicy", func() error { return Created(policies.Create(ctx, TeamPolicy(i, t), opts)) }},
		)
		if t.baseline {
			steps = append(steps, Step{ns + " RoleBinding psp:baseline", func() error {
				return Created(rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
					ObjectMeta: meta("psp:baseline"), RoleRef: roleRef("ClusterRole", "psp:baseline"), Subjects: groups("system:serviceaccounts:" + ns),
				}, opts))
			}})
		}
	}
	// privileged last: once the plugin admits a pod with it, its informer
	// has seen every policy created before it.
	for _, p := range []*policyv1beta1.PodSecurityPolicy{baselinePolicy(), PSP("restricted", restrictedAnnotations(), RestrictedSpec()), privilegedPolicy()} {
		steps = append(steps, Step{"PodSecurityPolicy " + p.Name, func() error { return Created(policies.Create(ctx, p, opts)) }})
	}
	if err := RunSteps(steps); err != nil {
		return err
	}
	var namespaces []string
	for _, t := range benchTeams {
		namespaces = append(namespaces, t.Name)
	}
	if err := createOtherBindings(ctx, c, namespaces, Scale.Bindings); err != nil {
		return err
	}

	// The load's pod, sent as the load sends it (system:masters), must be
	// admitted unchanged by privileged.
	var last string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		// Each probe runs to its end (ctx, not the poll's), so that last is
		// a real answer.
		pod, err := c.CoreV1().Pods(benchTeams[0].Name).Create(ctx, fixtures.Pod("psp-probe", ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("admitted with %s=%q", Annotation, pod.Annotations[Annotation])
		return pod.Annotations[Annotation] == "privileged", nil
	})
	if err != nil {
		return fmt.Errorf("bench pod: want it admitted by PodSecurityPolicy privileged; last: %s", last)
	}
	// A team's service account may use its team's policy, and not
	// privileged, once RBAC's informers have the grants. (A team's own pods
	// cannot be probed through admission here: SecurityContextDeny, also on
	// in all-documented, refuses the user and group IDs that the team's
	// policy gives them.)
	Team := benchTeams[0].Name
	sa := serviceaccount.UserInfo(Team, "default", "")
	mayUse := func(policy string) (bool, error) {
		review, err := c.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: sa.GetName(), Groups: sa.GetGroups(),
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: Team, Verb: "use", Group: "policy", Resource: "podsecuritypolicies", Name: policy},
		}}, opts)
		return err == nil && review.Status.Allowed, err
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return mayUse(Team)
	})
	if err != nil {
		return fmt.Errorf("%s may not use PodSecurityPolicy %s: %w", sa.GetName(), Team, err)
	}
	if ok, err := mayUse("privileged"); ok || err != nil {
		return fmt.Errorf("%s may use PodSecurityPolicy privileged (%v)", sa.GetName(), err)
	}
	return nil
}
