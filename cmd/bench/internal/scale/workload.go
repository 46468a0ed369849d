// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/policies"
	policyv1beta1 "github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
	pspclient "github.com/turnstile-k8s/turnstile/pkg/client/clientset/versioned"
)

// The scale benchmark's cluster: the workloads live in scaleNamespaces
// namespaces, the probe in its own, on a node of its own that kwok does not
// manage. Every side gets the same objects, except the PodSecurityPolicies
// and PersistentVolumeLabel rules, which only Turnstile has.
const (
	scaleNamespaces = 10
	probeNamespace  = "scale-probe"
	probeNode       = "probe-node"
	probeUser       = "scale-prober"
	probeScheduler  = "scale-probe" // no such scheduler: the probe binds its pods itself
	// workloadPolicy is the policy every workload may use. It sorts after
	// the tenants' policies, so that each pod create passes all of them
	// first (v1.24 tries policies in name order).
	workloadPolicy = "zz-workloads"
)

func workloadNamespace(i int) string { return fmt.Sprintf("scale-%d", i%scaleNamespaces) }

func tenantPolicy(i int) string { return fmt.Sprintf("tenant-%04d", i) }

// parallel runs do(i) for i in [from, to) on workers goroutines and returns
// the first error.
func parallel(ctx context.Context, from, to, workers int, do func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i := from; i < to && gctx.Err() == nil; i++ {
		g.Go(func() error { return do(gctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// ignoreExists makes a create idempotent, so that a step can top up what
// the previous one made.
func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// setupScale creates what every step relies on: the namespaces, the
// probe's node, its identity and grants, and the workloads' policy grant.
func setupScale(ctx context.Context, c kubernetes.Interface) error {
	var steps []policies.Step
	for i := range scaleNamespaces {
		steps = append(steps, policies.Step{What: "namespace " + workloadNamespace(i), Create: func() error {
			return ignoreExists(policies.Created(c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workloadNamespace(i)}}, metav1.CreateOptions{})))
		}})
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:serviceaccounts:" + probeNamespace}}
	for i := range scaleNamespaces {
		subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "system:serviceaccounts:" + workloadNamespace(i)})
	}
	steps = append(steps,
		policies.Step{What: "namespace " + probeNamespace, Create: func() error {
			return ignoreExists(policies.Created(c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probeNamespace}}, metav1.CreateOptions{})))
		}},
		policies.Step{What: "node " + probeNode, Create: func() error {
			return ignoreExists(policies.Created(c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: probeNode}}, metav1.CreateOptions{})))
		}},
		policies.Step{What: "clusterrole " + probeUser, Create: func() error {
			return ignoreExists(policies.Created(c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: probeUser},
				Rules: []rbacv1.PolicyRule{
					{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "delete", "list"}},
					{APIGroups: []string{""}, Resources: []string{"pods/binding"}, Verbs: []string{"create"}},
					{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch"}},
					{APIGroups: []string{""}, Resources: []string{"persistentvolumes"}, Verbs: []string{"create", "delete"}},
					{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}},
				},
			}, metav1.CreateOptions{})))
		}},
		policies.Step{What: "clusterrolebinding " + probeUser, Create: func() error {
			return ignoreExists(policies.Created(c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: probeUser},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: probeUser},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: probeUser}},
			}, metav1.CreateOptions{})))
		}},
		policies.Step{What: "the grant of " + workloadPolicy, Create: func() error {
			return grantPolicy(ctx, c, workloadPolicy, subjects)
		}},
	)
	return policies.RunSteps(steps)
}

// grantPolicy creates the ClusterRole that may use policy and binds it to
// subjects: RBAC's share of a policy, created on every side so that the
// authorizer has the same bindings to scan.
func grantPolicy(ctx context.Context, c kubernetes.Interface, policy string, subjects []rbacv1.Subject) error {
	name := "psp:" + policy
	if err := ignoreExists(policies.Created(c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      policies.UseRule(policy),
	}, metav1.CreateOptions{}))); err != nil {
		return err
	}
	return ignoreExists(policies.Created(c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   subjects,
	}, metav1.CreateOptions{})))
}

// workloadPolicySpec admits the workloads' pods as SecurityContextDeny
// (also on) requires: it drops every capability and forbids privilege
// escalation, which changes the pod, but assigns no user, group or SELinux
// options.
func workloadPolicySpec() policyv1beta1.PodSecurityPolicySpec {
	spec := policies.RestrictedSpec()
	spec.RunAsUser = policyv1beta1.RunAsUserStrategyOptions{Rule: policyv1beta1.RunAsUserStrategyRunAsAny}
	spec.SupplementalGroups = policyv1beta1.SupplementalGroupsStrategyOptions{Rule: policyv1beta1.SupplementalGroupsStrategyRunAsAny}
	spec.FSGroup = policyv1beta1.FSGroupStrategyOptions{Rule: policyv1beta1.FSGroupStrategyRunAsAny}
	return spec
}

// ensurePolicies tops the policy count up to n: the workloads' policy and
// n-1 tenants' policies, each granted to its tenant's service accounts
// (a namespace with no workloads here). The RBAC grants are made on every
// side; the policies only where psps is not nil (Turnstile).
func ensurePolicies(ctx context.Context, c kubernetes.Interface, psps pspclient.Interface, n, workers int) error {
	if psps != nil {
		if err := ignoreExists(policies.Created(psps.PolicyV1beta1().PodSecurityPolicies().Create(ctx, policies.PSP(workloadPolicy, nil, workloadPolicySpec()), metav1.CreateOptions{}))); err != nil {
			return fmt.Errorf("create policy %s: %w", workloadPolicy, err)
		}
	}
	return parallel(ctx, 1, n, workers, func(ctx context.Context, i int) error {
		name := tenantPolicy(i)
		if psps != nil {
			if err := ignoreExists(policies.Created(psps.PolicyV1beta1().PodSecurityPolicies().Create(ctx, policies.TeamPolicy(i, policies.Team{Name: name}), metav1.CreateOptions{}))); err != nil {
				return fmt.Errorf("create policy %s: %w", name, err)
			}
		}
		if err := grantPolicy(ctx, c, name, []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:serviceaccounts:" + name}}); err != nil {
			return fmt.Errorf("grant policy %s: %w", name, err)
		}
		return nil
	})
}

// ensureNodes tops the fake nodes up to n. kwok initializes and then
// heartbeats every node labelled kwokNodeLabel.
func ensureNodes(ctx context.Context, c kubernetes.Interface, n, workers int) error {
	key, value, _ := strings.Cut(kwokNodeLabel, "=")
	return parallel(ctx, 0, n, workers, func(ctx context.Context, i int) error {
		name := fmt.Sprintf("kwok-%05d", i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name: name,
				Labels: map[string]string{
					key: value, corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
					corev1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%3),
				},
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")},
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")},
			},
		}
		if err := ignoreExists(policies.Created(c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}))); err != nil {
			return fmt.Errorf("create node %s: %w", name, err)
		}
		return nil
	})
}

// workloadPod is the pod of every workload and of the probe: one container
// with requests, as a Deployment's pod is, that every side's plugins admit.
// With samePods it arrives as Turnstile's PodSecurityPolicy would store it
// (samePodsFields): then every side holds the same pods, and what differs
// between the sides is the binaries, not the objects.
func workloadPod(app string, samePods bool) corev1.PodTemplateSpec {
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}},
			}},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
		},
	}
	if samePods {
		samePodsFields(&tmpl)
	}
	return tmpl
}

// samePodsFields sets what v1.24's PodSecurityPolicy adds to a workload pod
// under workloadPolicy: the annotation naming the policy, and the defaults
// of its security context (no privilege escalation, every capability
// dropped). TestSamePodsAsAdmitted checks the policy changes nothing else.
func samePodsFields(tmpl *corev1.PodTemplateSpec) {
	tmpl.Annotations = map[string]string{policies.Annotation: workloadPolicy}
	for i := range tmpl.Spec.Containers {
		tmpl.Spec.Containers[i].SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	}
}

// ensureDeployments tops the workloads up to pods pods, in Deployments of
// replicas each, spread over the workload namespaces.
func ensureDeployments(ctx context.Context, c kubernetes.Interface, pods, replicas, workers int, samePods bool) error {
	count := (pods + replicas - 1) / replicas
	return parallel(ctx, 0, count, workers, func(ctx context.Context, i int) error {
		name := fmt.Sprintf("app-%04d", i)
		r := min(replicas, pods-i*replicas)
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(int32(r)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: workloadPod(name, samePods),
			},
		}
		deployments := c.AppsV1().Deployments(workloadNamespace(i))
		_, err := deployments.Create(ctx, d, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// The last Deployment of the step before may have been a
			// partial one: scale it to its share of this step.
			patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, r)
			_, err = deployments.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		}
		if err != nil {
			return fmt.Errorf("create deployment %s/%s: %w", workloadNamespace(i), name, err)
		}
		return nil
	})
}

// availablePods sums the available replicas of every workload Deployment.
func availablePods(ctx context.Context, c kubernetes.Interface) (available, deployments int, err error) {
	for i := range scaleNamespaces {
		list, err := c.AppsV1().Deployments(workloadNamespace(i)).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return 0, 0, err
		}
		for _, d := range list.Items {
			available += int(d.Status.AvailableReplicas)
		}
		deployments += len(list.Items)
	}
	return available, deployments, nil
}

// podStates counts workload pods by how far they got: the scheduler has
// not bound them, kwok has not started them, or they run but are not
// ready. A step that is not reached is waiting on whichever is large.
type podStates struct {
	Unscheduled, Pending, Unready, Ready int
}

func (s *podStates) add(p *corev1.Pod) {
	switch {
	case p.Spec.NodeName == "":
		s.Unscheduled++
	case p.Status.Phase == corev1.PodPending:
		s.Pending++
	case podutil.IsPodReady(p):
		s.Ready++
	default:
		s.Unready++
	}
}

func (s podStates) String() string {
	return fmt.Sprintf("workload pods: %d not scheduled, %d scheduled but pending, %d started but not ready, %d ready",
		s.Unscheduled, s.Pending, s.Unready, s.Ready)
}

func workloadPodStates(ctx context.Context, c kubernetes.Interface) (podStates, error) {
	var s podStates
	for i := range scaleNamespaces {
		list, err := c.CoreV1().Pods(workloadNamespace(i)).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return s, err
		}
		for i := range list.Items {
			s.add(&list.Items[i])
		}
	}
	return s, nil
}

// volumeRulesYAML is PersistentVolumeLabel's configuration with n rules,
// one per tenant: rule i labels the disks named "tenant-<i>-..." with one of
// three zones. The probe's volumes spread over the rules, so that a create
// tries half of them on average before the one that matches.
func volumeRulesYAML(n int) string {
	var b strings.Builder
	b.WriteString("apiVersion: persistentvolumelabel.admission.turnstile.dev/v1alpha1\nkind: PersistentVolumeLabelConfiguration\nrules:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - name: %s\n    match:\n      volumeType: gcePersistentDisk\n      idRegex: '^%s-'\n    zones: [zone-%d]\n    region: region-1\n",
			tenantPolicy(i), tenantPolicy(i), i%3)
	}
	return b.String()
}

// latency is one operation's client-side latency over a probe.
type latency struct {
	Count  int     `json:"count"`
	Errors int     `json:"errors"`
	P50    float64 `json:"p50Ms"`
	P99    float64 `json:"p99Ms"`
	// FirstError is the first failure's message, for the report.
	FirstError string `json:"firstError,omitempty"`
}

// recorder collects latencies by operation from concurrent probes.
type recorder struct {
	mu     sync.Mutex
	times  map[string][]time.Duration
	errors map[string]int
	first  map[string]string
}

func newRecorder() *recorder {
	return &recorder{times: map[string][]time.Duration{}, errors: map[string]int{}, first: map[string]string{}}
}

// time runs request and records its latency under op; a failure is
// counted and not timed. It returns the request's error.
func (r *recorder) time(op string, request func() error) error {
	began := time.Now()
	err := request()
	took := time.Since(began)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.errors[op]++
		if r.first[op] == "" {
			r.first[op] = err.Error()
		}
		return err
	}
	r.times[op] = append(r.times[op], took)
	return nil
}

func (r *recorder) latencies() map[string]latency {
	out := map[string]latency{}
	for op, ts := range r.times {
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		pct := func(p float64) float64 { return float64(ts[int(p*float64(len(ts)-1))].Microseconds()) / 1000 }
		out[op] = latency{Count: len(ts), Errors: r.errors[op], P50: pct(0.50), P99: pct(0.99), FirstError: r.first[op]}
	}
	for op, n := range r.errors {
		if _, ok := out[op]; !ok {
			out[op] = latency{Errors: n, FirstError: r.first[op]}
		}
	}
	return out
}

// The operations the probe times.
const (
	opPodCreate    = "pod create"
	opBinding      = "binding"
	opPodStatus    = "pod status patch"
	opVolumeCreate = "volume create"
	opListPodsNS   = "list pods (namespace)"
	opListPodsPage = "list pods (all, page of 500)"
	opListNodes    = "list nodes"
)

// probe measures the cluster at its current size: o.Probes rounds of a
// pod's life as a kubelet and scheduler see it (create, bind, status
// patch) plus a PersistentVolume create, from o.Concurrency clients as
// probeUser; then rounds of the LISTs controllers and users make, one
// after another, at least o.ListProbes of them and for at least o.ListFor.
// A p99 is the slowest hundredth: of fewer than a hundred it is only the
// slowest one, and of a few hundred one garbage collection or fsync
// decides it. The writes take milliseconds, so they get many rounds. The
// LISTs get a time as well as a count: a LIST of every pod takes seconds
// at 30,000 pods, where a hundred rounds is all there is time for, while
// on a small cluster a hundred rounds take 5 s and 30 s gives five times
// the samples. Everything the probe creates is deleted again (untimed). c
// is probeUser's client.
func probe(ctx context.Context, c kubernetes.Interface, o Options, volumeRules, step int) (map[string]latency, error) {
	r := newRecorder()
	perClient := (o.Probes + o.Concurrency - 1) / o.Concurrency
	var wg sync.WaitGroup
	for client := range o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perClient {
				if ctx.Err() != nil {
					return
				}
				probePod(ctx, c, r, fmt.Sprintf("probe-%d-%d-%d", step, client, i), o.SamePods)
				probeVolume(ctx, c, r, fmt.Sprintf("%s-disk-%d-%d-%d", tenantPolicy((client*perClient+i)%max(volumeRules, 1)), step, client, i))
			}
		}()
	}
	wg.Wait()
	began := time.Now()
	for round := 0; (round < o.ListProbes || time.Since(began) < o.ListFor) && ctx.Err() == nil; round++ {
		_ = r.time(opListPodsNS, func() error {
			return policies.Created(c.CoreV1().Pods(workloadNamespace(0)).List(ctx, metav1.ListOptions{}))
		})
		_ = r.time(opListPodsPage, func() error { return policies.Created(c.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 500})) })
		_ = r.time(opListNodes, func() error { return policies.Created(c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})) })
	}
	return r.latencies(), ctx.Err()
}

func probePod(ctx context.Context, c kubernetes.Interface, r *recorder, name string, samePods bool) {
	tmpl := workloadPod("probe", samePods)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: tmpl.Labels, Annotations: tmpl.Annotations}, Spec: tmpl.Spec}
	pod.Spec.SchedulerName = probeScheduler
	pods := c.CoreV1().Pods(probeNamespace)
	if r.time(opPodCreate, func() error { return policies.Created(pods.Create(ctx, pod, metav1.CreateOptions{})) }) != nil {
		return
	}
	defer func() {
		_ = pods.Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}()
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: probeNode}}
	if r.time(opBinding, func() error { return pods.Bind(ctx, binding, metav1.CreateOptions{}) }) != nil {
		return
	}
	now := time.Now().UTC().Format(time.RFC3339)
	patch := fmt.Sprintf(`{"status":{"phase":"Running","podIP":"127.0.0.2","podIPs":[{"ip":"127.0.0.2"}],"startTime":%q,"conditions":[{"type":"Ready","status":"True","lastTransitionTime":%q}]}}`, now, now)
	_ = r.time(opPodStatus, func() error {
		return policies.Created(pods.Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"))
	})
}

func probeVolume(ctx context.Context, c kubernetes.Interface, r *recorder, disk string) {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: disk},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: disk}},
		},
	}
	if r.time(opVolumeCreate, func() error {
		return policies.Created(c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}))
	}) == nil {
		_ = c.CoreV1().PersistentVolumes().Delete(context.WithoutCancel(ctx), disk, metav1.DeleteOptions{})
	}
}

// writeFileAtomic replaces path's content in one rename, so that a reload
// never reads half a file.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
