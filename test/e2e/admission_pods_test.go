// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// AlwaysPullImages: every container list and image volume of a new pod is
// set to pull Always. Upstream ignores subresources (so an ephemeral
// container added through pods/ephemeralcontainers keeps its policy) and
// updates that bring no new image; an update that does bring one gets
// Always too, which a pod created with another policy cannot take.
func testSimpleAlwaysPullImages(t *testing.T, s simpleServers) {
	ctx := context.Background()
	ns := simpleNamespace(t, s.on, "", nil)
	pod := func(name string) *corev1.Pod {
		p := simplePod(name)
		p.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: simpleImage, ImagePullPolicy: corev1.PullIfNotPresent}}
		p.Spec.Volumes = []corev1.Volume{{Name: "tools", VolumeSource: corev1.VolumeSource{
			Image: &corev1.ImageVolumeSource{Reference: simpleImage, PullPolicy: corev1.PullIfNotPresent}}}}
		return p
	}
	policies := func(p *corev1.Pod) []corev1.PullPolicy {
		var out []corev1.PullPolicy
		for _, c := range p.Spec.InitContainers {
			out = append(out, c.ImagePullPolicy)
		}
		for _, c := range p.Spec.Containers {
			out = append(out, c.ImagePullPolicy)
		}
		for _, c := range p.Spec.EphemeralContainers {
			out = append(out, c.ImagePullPolicy)
		}
		for _, v := range p.Spec.Volumes {
			if v.Image != nil {
				out = append(out, v.Image.PullPolicy)
			}
		}
		return out
	}
	always := []corev1.PullPolicy{corev1.PullAlways, corev1.PullAlways, corev1.PullAlways}
	asAsked := []corev1.PullPolicy{corev1.PullIfNotPresent, corev1.PullNever, corev1.PullIfNotPresent}

	got, err := s.on.CoreV1().Pods(ns).Create(ctx, pod("forced"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("on: %v", err)
	}
	if p := policies(got); !slices.Equal(p, always) {
		t.Errorf("on: pull policies (init, container, image volume) = %v, want %v", p, always)
	}
	got, err = s.off.CoreV1().Pods(ns).Create(ctx, pod("as-asked"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("off: %v", err)
	}
	if p := policies(got); !slices.Equal(p, asAsked) {
		t.Errorf("off: pull policies = %v, want them as asked %v", p, asAsked)
	}

	// Updates of the pod created without the plugin.
	if _, err := s.on.CoreV1().Pods(ns).Patch(ctx, "as-asked", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("on: label update (no new image): %v, want admitted", err)
	}
	newImage := []byte(`{"spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.9"}]}}`)
	_, err = s.on.CoreV1().Pods(ns).Patch(ctx, "as-asked", types.StrategicMergePatchType, newImage, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "pod updates may not change fields") {
		t.Errorf("on: update to a new image: got %v, want 422 (the plugin sets Always, which the pod may not change to)", err)
	}
	if _, err := s.off.CoreV1().Pods(ns).Patch(ctx, "as-asked", types.StrategicMergePatchType, newImage, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("off: update to a new image: %v, want admitted", err)
	}
	// An update of the pod created with the plugin that brings a new image
	// and asks for another policy keeps Always; without the plugin the
	// policy change is refused, as pods cannot change it.
	newImagePolicy := []byte(`{"spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.9","imagePullPolicy":"IfNotPresent"}]}}`)
	got, err = s.on.CoreV1().Pods(ns).Patch(ctx, "forced", types.StrategicMergePatchType, newImagePolicy, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Errorf("on: update to a new image and IfNotPresent: %v, want admitted", err)
	} else if p := policies(got); !slices.Equal(p, always) {
		t.Errorf("on: update to a new image and IfNotPresent: pull policies %v, want %v", p, always)
	}
	_, err = s.off.CoreV1().Pods(ns).Patch(ctx, "forced", types.StrategicMergePatchType, newImagePolicy, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsInvalid(err) {
		t.Errorf("off: update to a new image and IfNotPresent: got %v, want 422", err)
	}

	// pods/ephemeralcontainers is a subresource, which upstream leaves alone.
	debug := []byte(`{"spec":{"ephemeralContainers":[{"name":"debugger","image":"busybox:1.36","imagePullPolicy":"IfNotPresent"}]}}`)
	got, err = s.on.CoreV1().Pods(ns).Patch(ctx, "forced", types.StrategicMergePatchType, debug, metav1.PatchOptions{}, "ephemeralcontainers")
	if err != nil {
		t.Fatalf("on: adding an ephemeral container: %v", err)
	}
	if p := got.Spec.EphemeralContainers[0].ImagePullPolicy; p != corev1.PullIfNotPresent {
		t.Errorf("on: ephemeral container pull policy = %s, want IfNotPresent (upstream skips subresources)", p)
	}
}

// ExtendedResourceToleration: a pod that requests an extended resource (in
// a container or an init container) tolerates the taint of that name.
func testSimpleExtendedResourceToleration(t *testing.T, s simpleServers) {
	ctx := context.Background()
	ns := simpleNamespace(t, s.on, "", nil)
	one, two := resource.MustParse("1"), resource.MustParse("2")
	pod := func(name string) *corev1.Pod {
		p := simplePod(name)
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"example.com/fpga": one}, Limits: corev1.ResourceList{"example.com/fpga": one}}
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: simpleImage, Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"example.com/gpu": two}, Limits: corev1.ResourceList{"example.com/gpu": two}}}}
		return p
	}
	got, err := s.on.CoreV1().Pods(ns).Create(ctx, pod("accelerated"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("on: %v", err)
	}
	for _, key := range []string{"example.com/fpga", "example.com/gpu"} {
		want := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
		found := false
		for _, tol := range got.Spec.Tolerations {
			found = found || tol == want
		}
		if !found {
			t.Errorf("on: no toleration %+v in %+v", want, got.Spec.Tolerations)
		}
	}
	plain := simplePod("cpu-only")
	plain.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	if got, err := s.on.CoreV1().Pods(ns).Create(ctx, plain, metav1.CreateOptions{}); err != nil {
		t.Errorf("on: cpu-only pod: %v", err)
	} else if simpleHasToleration(got.Spec.Tolerations, "cpu") {
		t.Errorf("on: cpu-only pod got a toleration for cpu: %+v", got.Spec.Tolerations)
	}
	got, err = s.off.CoreV1().Pods(ns).Create(ctx, pod("untolerated"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("off: %v", err)
	}
	if simpleHasToleration(got.Spec.Tolerations, "example.com/fpga") || simpleHasToleration(got.Spec.Tolerations, "example.com/gpu") {
		t.Errorf("off: tolerations %+v, want none for extended resources", got.Spec.Tolerations)
	}
}

// LimitPodHardAntiAffinityTopology: required pod anti-affinity may only use
// kubernetes.io/hostname; preferred terms are not limited.
func testSimpleLimitPodHardAntiAffinityTopology(t *testing.T, s simpleServers) {
	ctx := context.Background()
	ns := simpleNamespace(t, s.on, "", nil)
	pod := func(name, key string, required bool) *corev1.Pod {
		p := simplePod(name)
		term := corev1.PodAffinityTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			TopologyKey:   key,
		}
		anti := &corev1.PodAntiAffinity{}
		if required {
			anti.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{term}
		} else {
			anti.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term}}
		}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: anti}
		return p
	}
	_, err := s.on.CoreV1().Pods(ns).Create(ctx, pod("zone", corev1.LabelTopologyZone, true), metav1.CreateOptions{})
	simpleForbidden(t, "on: required anti-affinity per zone", err,
		`pods "zone" is forbidden: affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey topology.kubernetes.io/zone but only key kubernetes.io/hostname is allowed`)
	if _, err := s.on.CoreV1().Pods(ns).Create(ctx, pod("host", corev1.LabelHostname, true), metav1.CreateOptions{}); err != nil {
		t.Errorf("on: required anti-affinity per hostname: %v, want admitted", err)
	}
	if _, err := s.on.CoreV1().Pods(ns).Create(ctx, pod("preferred-zone", corev1.LabelTopologyZone, false), metav1.CreateOptions{}); err != nil {
		t.Errorf("on: preferred anti-affinity per zone: %v, want admitted", err)
	}
	if _, err := s.off.CoreV1().Pods(ns).Create(ctx, pod("off-zone", corev1.LabelTopologyZone, true), metav1.CreateOptions{}); err != nil {
		t.Errorf("off: required anti-affinity per zone: %v, want admitted", err)
	}
}

// LimitRanger: a namespace's LimitRange defaults containers' requests and
// limits and rejects what exceeds its max. Without a LimitRange nothing is
// defaulted: upstream creates none (the documentation's "0.1 CPU in the
// default namespace" came from old cluster scripts, not the plugin).
func testSimpleLimitRanger(t *testing.T, s simpleServers) {
	ctx := context.Background()
	ns := simpleNamespace(t, s.on, "", nil)
	q := resource.MustParse
	if _, err := s.on.CoreV1().LimitRanges(ns).Create(ctx, &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "limits"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			Default:        corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("256Mi")},
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("64Mi")},
			Max:            corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")},
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantRequests := corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("64Mi")}
	wantLimits := corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("256Mi")}

	got, err := s.on.CoreV1().Pods(ns).Create(ctx, simplePod("defaulted"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("on: %v", err)
	}
	r := got.Spec.Containers[0].Resources
	if !simpleEqualResources(r.Requests, wantRequests) || !simpleEqualResources(r.Limits, wantLimits) {
		t.Errorf("on: resources %v, want requests %v and limits %v from the LimitRange", r, wantRequests, wantLimits)
	}
	if a := got.Annotations["kubernetes.io/limit-ranger"]; !strings.HasPrefix(a, "LimitRanger plugin set: ") {
		t.Errorf("on: annotation kubernetes.io/limit-ranger = %q", a)
	}
	big := simplePod("too-big")
	big.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: q("2")}
	_, err = s.on.CoreV1().Pods(ns).Create(ctx, big, metav1.CreateOptions{})
	simpleForbidden(t, "on: container over the max", err, "maximum cpu usage per Container is 1, but limit is 2")

	got, err = s.off.CoreV1().Pods(ns).Create(ctx, simplePod("as-asked"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("off: %v", err)
	}
	if r := got.Spec.Containers[0].Resources; len(r.Requests)+len(r.Limits) > 0 {
		t.Errorf("off: resources %v, want none", r)
	}
	big.Name = "off-too-big"
	if _, err := s.off.CoreV1().Pods(ns).Create(ctx, big, metav1.CreateOptions{}); err != nil {
		t.Errorf("off: container over the max: %v, want admitted", err)
	}

	// No LimitRange, no defaults.
	bare := simpleNamespace(t, s.on, "", nil)
	got, err = s.on.CoreV1().Pods(bare).Create(ctx, simplePod("bare"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("on, namespace without a LimitRange: %v", err)
	}
	if r := got.Spec.Containers[0].Resources; len(r.Requests)+len(r.Limits) > 0 {
		t.Errorf("on, namespace without a LimitRange: resources %v, want none", r)
	}
}

func simpleEqualResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

const simpleNodeSelectorKey = "scheduler.alpha.kubernetes.io/node-selector"

// PodNodeSelector, configured by testdata/simple/podnodeselector.yaml: the
// namespace's annotation, or else clusterDefaultNodeSelector, is merged into
// each new pod's node selector; a pod that contradicts it, or leaves the
// namespace's whitelist in the configuration, is rejected.
func testSimplePodNodeSelector(t *testing.T, s simpleServers) {
	ctx := context.Background()
	const pool, disk = "e2e.turnstile.dev/pool", "e2e.turnstile.dev/disk"
	create := func(c kubernetes.Interface, ns, name string, selector map[string]string) (*corev1.Pod, error) {
		p := simplePod(name)
		p.Spec.NodeSelector = selector
		return c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	}
	expect := func(what string, got *corev1.Pod, err error, want map[string]string) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		} else if !maps.Equal(got.Spec.NodeSelector, want) {
			t.Errorf("%s: nodeSelector %v, want %v", what, got.Spec.NodeSelector, want)
		}
	}

	plain := simpleNamespace(t, s.on, "", nil)
	got, err := create(s.on, plain, "cluster-default", nil)
	expect("on, unannotated namespace", got, err, map[string]string{pool: "general"})
	got, err = create(s.on, plain, "merged", map[string]string{disk: "ssd"})
	expect("on, unannotated namespace, pod with its own selector", got, err, map[string]string{pool: "general", disk: "ssd"})
	_, err = create(s.on, plain, "conflict", map[string]string{pool: "gpu"})
	simpleForbidden(t, "on, pod contradicting the cluster default", err, "pod node label selector conflicts with its namespace node label selector")

	gpu := simpleNamespace(t, s.on, "", map[string]string{simpleNodeSelectorKey: pool + "=gpu"})
	got, err = create(s.on, gpu, "annotated", nil)
	expect("on, annotated namespace", got, err, map[string]string{pool: "gpu"})
	_, err = create(s.on, gpu, "conflict", map[string]string{pool: "general"})
	simpleForbidden(t, "on, pod contradicting the namespace annotation", err, "pod node label selector conflicts with its namespace node label selector")

	// An empty annotation is a selector too: no cluster default.
	anywhere := simpleNamespace(t, s.on, "", map[string]string{simpleNodeSelectorKey: ""})
	got, err = create(s.on, anywhere, "anywhere", nil)
	expect("on, namespace with an empty annotation", got, err, nil)

	// The whitelist of e2e-pns-restricted: pool=restricted, disk=ssd.
	restricted := simpleNamespace(t, s.on, "e2e-pns-restricted", map[string]string{simpleNodeSelectorKey: pool + "=restricted"})
	got, err = create(s.on, restricted, "whitelisted", map[string]string{disk: "ssd"})
	expect("on, whitelisted selector", got, err, map[string]string{pool: "restricted", disk: "ssd"})
	_, err = create(s.on, restricted, "hdd", map[string]string{disk: "hdd"})
	simpleForbidden(t, "on, selector outside the whitelist", err, "pod node label selector labels conflict with its namespace whitelist")

	got, err = create(s.off, plain, "off-cluster-default", nil)
	expect("off, unannotated namespace", got, err, nil)
	got, err = create(s.off, gpu, "off-conflict", map[string]string{pool: "general"})
	expect("off, pod contradicting the namespace annotation", got, err, map[string]string{pool: "general"})
	got, err = create(s.off, restricted, "off-hdd", map[string]string{disk: "hdd"})
	expect("off, selector outside the whitelist", got, err, map[string]string{disk: "hdd"})
}

const (
	simpleDefaultTolerationsKey   = "scheduler.alpha.kubernetes.io/defaultTolerations"
	simpleTolerationsWhitelistKey = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"
)

// PodTolerationRestriction, configured in testdata/simple/admission-config.yaml:
// a new pod gets its namespace's default tolerations (annotation), or else
// the cluster's, and its tolerations must fit the namespace's whitelist, or
// else the cluster's, on create and on update. Upstream merges rather than
// rejecting a pod whose tolerations differ from the defaults (the
// documentation's "conflict"), adds a memory-pressure toleration to pods
// that are not BestEffort, and answers a whitelist violation with a plain
// error, hence 500 rather than 403.
func testSimplePodTolerationRestriction(t *testing.T, s simpleServers) {
	ctx := context.Background()
	const (
		clusterDefault = "e2e.turnstile.dev/cluster-default"
		clusterAllowed = "e2e.turnstile.dev/cluster-allowed"
		nsDefault      = "e2e.turnstile.dev/ns-default"
		nsAllowed      = "e2e.turnstile.dev/ns-allowed"
		forbidden      = "e2e.turnstile.dev/forbidden"
	)
	tol := func(key string) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	}
	create := func(c kubernetes.Interface, ns, name string, keys ...string) (*corev1.Pod, error) {
		p := simplePod(name)
		for _, k := range keys {
			p.Spec.Tolerations = append(p.Spec.Tolerations, tol(k))
		}
		return c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	}
	expect := func(what string, got *corev1.Pod, err error, has []string, hasNot ...string) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		for _, k := range has {
			if !simpleHasToleration(got.Spec.Tolerations, k) {
				t.Errorf("%s: no toleration for %s in %+v", what, k, got.Spec.Tolerations)
			}
		}
		for _, k := range hasNot {
			if simpleHasToleration(got.Spec.Tolerations, k) {
				t.Errorf("%s: unexpected toleration for %s in %+v", what, k, got.Spec.Tolerations)
			}
		}
	}

	plain := simpleNamespace(t, s.on, "", nil)
	got, err := create(s.on, plain, "defaulted")
	expect("on, cluster default", got, err, []string{clusterDefault}, corev1.TaintNodeMemoryPressure)
	got, err = create(s.on, plain, "cluster-allowed", clusterAllowed)
	expect("on, toleration in the cluster whitelist", got, err, []string{clusterAllowed, clusterDefault})
	_, err = create(s.on, plain, "forbidden", forbidden)
	simpleRejectedWith(t, "on, toleration outside the cluster whitelist", err, http.StatusInternalServerError,
		"pod tolerations (possibly merged with namespace default tolerations) conflict with its cluster whitelist")
	burstable := simplePod("burstable")
	burstable.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	got, err = s.on.CoreV1().Pods(plain).Create(ctx, burstable, metav1.CreateOptions{})
	expect("on, pod that is not BestEffort", got, err, []string{corev1.TaintNodeMemoryPressure})

	annotated := simpleNamespace(t, s.on, "", map[string]string{
		simpleDefaultTolerationsKey: toJSON(t, []corev1.Toleration{tol(nsDefault)}),
		simpleTolerationsWhitelistKey: toJSON(t, []corev1.Toleration{
			{Key: nsDefault, Operator: corev1.TolerationOpExists},
			{Key: nsAllowed, Operator: corev1.TolerationOpExists},
			{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
			{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		}),
	})
	got, err = create(s.on, annotated, "ns-allowed", nsAllowed)
	expect("on, namespace default and whitelist", got, err, []string{nsDefault, nsAllowed}, clusterDefault)
	_, err = create(s.on, annotated, "cluster-allowed", clusterAllowed)
	simpleRejectedWith(t, "on, toleration the cluster allows but the namespace does not", err, http.StatusInternalServerError,
		"pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace whitelist")

	// Tolerations may be added to an existing pod; the whitelist still holds.
	update := func(c kubernetes.Interface, key string) error {
		p, err := c.CoreV1().Pods(annotated).Get(ctx, "ns-allowed", metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Spec.Tolerations = append(p.Spec.Tolerations, tol(key))
		_, err = c.CoreV1().Pods(annotated).Update(ctx, p, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	simpleRejectedWith(t, "on, update adding a toleration outside the whitelist", update(s.on, forbidden),
		http.StatusInternalServerError, "conflict with its namespace whitelist")

	got, err = create(s.off, plain, "off-defaulted")
	expect("off, no cluster default", got, err, nil, clusterDefault)
	got, err = create(s.off, annotated, "off-forbidden", forbidden)
	expect("off, toleration outside the whitelist", got, err, []string{forbidden}, nsDefault)
	if err := update(s.off, forbidden); err != nil {
		t.Errorf("off, update adding a toleration outside the whitelist: %v", err)
	}
}

// Priority: a pod's priorityClassName resolves to its integer priority and
// preemption policy; an unknown class is rejected; a pod without a class
// gets the global default; only one class may be the global default.
func testSimplePriority(t *testing.T, s simpleServers) {
	ctx := context.Background()
	ns := simpleNamespace(t, s.on, "", nil)
	createClass := func(c kubernetes.Interface, prefix string, value int32, globalDefault bool) *schedulingv1.PriorityClass {
		t.Helper()
		pc, err := c.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
			ObjectMeta:       metav1.ObjectMeta{GenerateName: prefix},
			Value:            value,
			GlobalDefault:    globalDefault,
			PreemptionPolicy: ptr.To(corev1.PreemptNever),
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating PriorityClass %s: %v", prefix, err)
		}
		t.Cleanup(func() {
			_ = c.SchedulingV1().PriorityClasses().Delete(context.Background(), pc.Name, metav1.DeleteOptions{})
		})
		return pc
	}
	pod := func(name, class string) *corev1.Pod {
		p := simplePod(name)
		p.Spec.PriorityClassName = class
		return p
	}
	high := createClass(s.on, "e2e-high-", 1000, false)
	simpleEventually(t, "on: a pod of class "+high.Name+" gets priority 1000", func() (bool, string) {
		got, err := s.on.CoreV1().Pods(ns).Create(ctx, pod("high", high.Name), simpleDryRun)
		if err != nil {
			return false, err.Error()
		}
		return ptr.Deref(got.Spec.Priority, -1) == 1000, toJSON(t, got.Spec)
	})
	got, err := s.on.CoreV1().Pods(ns).Create(ctx, pod("high", high.Name), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("on: %v", err)
	}
	if ptr.Deref(got.Spec.Priority, -1) != 1000 || ptr.Deref(got.Spec.PreemptionPolicy, "") != corev1.PreemptNever {
		t.Errorf("on: priority %v, preemptionPolicy %v, want 1000 and Never from %s", got.Spec.Priority, got.Spec.PreemptionPolicy, high.Name)
	}
	_, err = s.on.CoreV1().Pods(ns).Create(ctx, pod("missing", "e2e-no-such-class"), metav1.CreateOptions{})
	simpleForbidden(t, "on: unknown class", err, "no PriorityClass with name e2e-no-such-class was found")
	own := pod("own-priority", high.Name)
	own.Spec.Priority = ptr.To[int32](7)
	_, err = s.on.CoreV1().Pods(ns).Create(ctx, own, metav1.CreateOptions{})
	simpleForbidden(t, "on: pod that sets its own priority", err, "the integer value of priority (7) must not be provided in pod spec")

	got, err = s.off.CoreV1().Pods(ns).Create(ctx, pod("off-missing", "e2e-no-such-class"), metav1.CreateOptions{})
	if err != nil {
		t.Errorf("off: unknown class: %v, want admitted", err)
	} else if got.Spec.Priority != nil {
		t.Errorf("off: priority %d, want none", *got.Spec.Priority)
	}

	// The global default.
	def := createClass(s.on, "e2e-default-", 50, true)
	simpleEventually(t, "on: a pod without a class gets the global default", func() (bool, string) {
		got, err := s.on.CoreV1().Pods(ns).Create(ctx, pod("defaulted", ""), simpleDryRun)
		if err != nil {
			return false, err.Error()
		}
		return got.Spec.PriorityClassName == def.Name && ptr.Deref(got.Spec.Priority, -1) == 50, toJSON(t, got.Spec)
	})
	if got, err := s.off.CoreV1().Pods(ns).Create(ctx, pod("off-defaulted", ""), metav1.CreateOptions{}); err != nil {
		t.Errorf("off: pod without a class: %v", err)
	} else if got.Spec.PriorityClassName != "" || got.Spec.Priority != nil {
		t.Errorf("off: pod without a class got %q/%v, want neither", got.Spec.PriorityClassName, got.Spec.Priority)
	}
	_, err = s.on.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-second-default"}, Value: 60, GlobalDefault: true,
	}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	simpleForbidden(t, "on: a second global default", err, "PriorityClass "+def.Name+" is already marked as default. Only one default can exist")
	_, err = s.off.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-second-default"}, Value: 60, GlobalDefault: true,
	}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Errorf("off: a second global default: %v, want admitted", err)
	}
}

// RuntimeClass: a pod of a RuntimeClass gets its overhead and scheduling
// (node selector and tolerations); an unknown class, or an overhead that the
// class does not define, is rejected. Upstream admits a pod whose overhead
// equals its class's (the documentation says any preset overhead is
// rejected).
func testSimpleRuntimeClass(t *testing.T, s simpleServers) {
	ctx := context.Background()
	ns := simpleNamespace(t, s.on, "", nil)
	const runtimeKey = "e2e.turnstile.dev/runtime"
	overhead := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("120Mi")}
	rc, err := s.on.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-sandboxed-"},
		Handler:    "runsc",
		Overhead:   &nodev1.Overhead{PodFixed: overhead},
		Scheduling: &nodev1.Scheduling{
			NodeSelector: map[string]string{runtimeKey: "sandboxed"},
			Tolerations:  []corev1.Toleration{{Key: runtimeKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.on.NodeV1().RuntimeClasses().Delete(context.Background(), rc.Name, metav1.DeleteOptions{})
	})
	pod := func(name, class string, podOverhead corev1.ResourceList) *corev1.Pod {
		p := simplePod(name)
		if class != "" {
			p.Spec.RuntimeClassName = ptr.To(class)
		}
		p.Spec.Overhead = podOverhead
		return p
	}

	got, err := s.on.CoreV1().Pods(ns).Create(ctx, pod("sandboxed", rc.Name, nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("on: %v", err)
	}
	if !simpleEqualResources(got.Spec.Overhead, overhead) {
		t.Errorf("on: overhead %v, want %v", got.Spec.Overhead, overhead)
	}
	if got.Spec.NodeSelector[runtimeKey] != "sandboxed" || !simpleHasToleration(got.Spec.Tolerations, runtimeKey) {
		t.Errorf("on: nodeSelector %v, tolerations %+v, want the class's scheduling", got.Spec.NodeSelector, got.Spec.Tolerations)
	}
	if _, err := s.on.CoreV1().Pods(ns).Create(ctx, pod("same-overhead", rc.Name, overhead), metav1.CreateOptions{}); err != nil {
		t.Errorf("on: pod with the class's own overhead: %v, want admitted", err)
	}
	_, err = s.on.CoreV1().Pods(ns).Create(ctx, pod("missing", "e2e-no-such-class", nil), metav1.CreateOptions{})
	simpleForbidden(t, "on: unknown class", err, `pod rejected: RuntimeClass "e2e-no-such-class" not found`)
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}
	_, err = s.on.CoreV1().Pods(ns).Create(ctx, pod("own-overhead", "", small), metav1.CreateOptions{})
	simpleForbidden(t, "on: overhead without a class", err, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
	_, err = s.on.CoreV1().Pods(ns).Create(ctx, pod("other-overhead", rc.Name, small), metav1.CreateOptions{})
	simpleForbidden(t, "on: overhead other than the class's", err, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
	conflict := pod("conflict", rc.Name, nil)
	conflict.Spec.NodeSelector = map[string]string{runtimeKey: "plain"}
	_, err = s.on.CoreV1().Pods(ns).Create(ctx, conflict, metav1.CreateOptions{})
	simpleForbidden(t, "on: node selector contradicting the class", err, "conflict: runtimeClass.scheduling.nodeSelector["+runtimeKey+"] = sandboxed")

	got, err = s.off.CoreV1().Pods(ns).Create(ctx, pod("off-sandboxed", rc.Name, nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("off: %v", err)
	}
	if len(got.Spec.Overhead) > 0 || got.Spec.NodeSelector[runtimeKey] != "" || simpleHasToleration(got.Spec.Tolerations, runtimeKey) {
		t.Errorf("off: overhead %v, nodeSelector %v, tolerations %+v, want none from the class", got.Spec.Overhead, got.Spec.NodeSelector, got.Spec.Tolerations)
	}
	for _, p := range []*corev1.Pod{pod("off-missing", "e2e-no-such-class", nil), pod("off-own-overhead", "", small)} {
		if _, err := s.off.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Errorf("off: %s: %v, want admitted", p.Name, err)
		}
	}
}

// ServiceAccount: a new pod runs as the "default" ServiceAccount unless it
// names one, which must exist; it gets the projected API token volume in
// every container unless automounting is off, and the ServiceAccount's
// imagePullSecrets; with kubernetes.io/enforce-mountable-secrets it may
// mount only the ServiceAccount's secrets.
func testSimpleServiceAccount(t *testing.T, s simpleServers) {
	ctx := context.Background()
	ns := simpleNamespace(t, s.on, "", nil)
	for _, sa := range []*corev1.ServiceAccount{
		{ObjectMeta: metav1.ObjectMeta{Name: "builder"}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "quiet"}, AutomountServiceAccountToken: ptr.To(false)},
		{ObjectMeta: metav1.ObjectMeta{Name: "strict", Annotations: map[string]string{"kubernetes.io/enforce-mountable-secrets": "true"}},
			Secrets: []corev1.ObjectReference{{Name: "mine"}}},
	} {
		if _, err := s.on.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name, sa string) *corev1.Pod {
		p := simplePod(name)
		p.Spec.ServiceAccountName = sa
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: simpleImage}}
		return p
	}
	const mountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	tokenVolume := func(p *corev1.Pod) string {
		for _, v := range p.Spec.Volumes {
			if strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil {
				for _, src := range v.Projected.Sources {
					if src.ServiceAccountToken != nil {
						return v.Name
					}
				}
			}
		}
		return ""
	}
	mounted := func(c corev1.Container, volume string) bool {
		for _, m := range c.VolumeMounts {
			if m.Name == volume && m.MountPath == mountPath && m.ReadOnly {
				return true
			}
		}
		return false
	}

	got, err := s.on.CoreV1().Pods(ns).Create(ctx, pod("defaulted", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("on: %v", err)
	}
	if got.Spec.ServiceAccountName != "default" {
		t.Errorf("on: serviceAccountName %q, want default", got.Spec.ServiceAccountName)
	}
	if v := tokenVolume(got); v == "" {
		t.Errorf("on: no projected token volume in %+v", got.Spec.Volumes)
	} else if !mounted(got.Spec.Containers[0], v) || !mounted(got.Spec.InitContainers[0], v) {
		t.Errorf("on: token volume %s not mounted at %s in every container", v, mountPath)
	}
	got, err = s.on.CoreV1().Pods(ns).Create(ctx, pod("builder", "builder"), metav1.CreateOptions{})
	if err != nil {
		t.Errorf("on: builder: %v", err)
	} else if len(got.Spec.ImagePullSecrets) != 1 || got.Spec.ImagePullSecrets[0].Name != "registry" {
		t.Errorf("on: imagePullSecrets %v, want the ServiceAccount's [registry]", got.Spec.ImagePullSecrets)
	}
	got, err = s.on.CoreV1().Pods(ns).Create(ctx, pod("quiet", "quiet"), metav1.CreateOptions{})
	if err != nil {
		t.Errorf("on: quiet: %v", err)
	} else if v := tokenVolume(got); v != "" {
		t.Errorf("on: ServiceAccount with automountServiceAccountToken=false: got token volume %s", v)
	}
	_, err = s.on.CoreV1().Pods(ns).Create(ctx, pod("ghost", "ghost"), metav1.CreateOptions{})
	simpleForbidden(t, "on: missing ServiceAccount", err, `error looking up service account `+ns+`/ghost: serviceaccount "ghost" not found`)
	secretPod := func(secret string) *corev1.Pod {
		p := pod("strict-"+secret, "strict")
		p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}}
		return p
	}
	if _, err := s.on.CoreV1().Pods(ns).Create(ctx, secretPod("mine"), metav1.CreateOptions{}); err != nil {
		t.Errorf("on: enforce-mountable-secrets, the ServiceAccount's secret: %v, want admitted", err)
	}
	_, err = s.on.CoreV1().Pods(ns).Create(ctx, secretPod("other"), metav1.CreateOptions{})
	simpleForbidden(t, "on: enforce-mountable-secrets, another secret", err,
		`volume with secret.secretName="other" is not allowed because service account strict does not reference that secret`)

	got, err = s.off.CoreV1().Pods(ns).Create(ctx, pod("off-defaulted", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("off: %v", err)
	}
	if got.Spec.ServiceAccountName != "" || len(got.Spec.Volumes) > 0 {
		t.Errorf("off: serviceAccountName %q, volumes %+v, want neither", got.Spec.ServiceAccountName, got.Spec.Volumes)
	}
	for _, p := range []*corev1.Pod{pod("ghost", "ghost"), secretPod("other")} {
		p.Name = "off-" + p.Name
		if _, err := s.off.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Errorf("off: %s: %v, want admitted", p.Name, err)
		}
	}
}

// PodResizeValidator (upstream v1.36, not in the documentation): a resize
// (pods/resize) of a pod bound to a node must fit the node's allocatable
// CPU and memory.
func testSimplePodResizeValidator(t *testing.T, s simpleServers) {
	ctx := context.Background()
	ns := simpleNamespace(t, s.on, "", nil)
	node, err := s.on.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-resize-", Labels: map[string]string{corev1.LabelOSStable: "linux"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.on.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("10")}
	node.Status.Capacity, node.Status.Allocatable = capacity, capacity
	if _, err := s.on.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	create := func(name, nodeName string) {
		t.Helper()
		p := simplePod(name)
		p.Spec.NodeName = nodeName
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
		if _, err := s.off.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("bound", node.Name)
	create("unbound", "")
	resize := func(c kubernetes.Interface, name, cpu string) error {
		patch := `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"` + cpu + `"}}}]}}`
		_, err := c.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "resize")
		return err
	}
	simpleEventually(t, "on: a resize that fits the node is admitted", func() (bool, string) {
		err := resize(s.on, "bound", "500m")
		return err == nil, fmt.Sprint(err)
	})
	simpleForbidden(t, "on: resize beyond the node's allocatable CPU", resize(s.on, "bound", "2"),
		"node didn't have enough allocatable resources: cpu, requested: 2000, allocatable: 1000")
	if err := resize(s.on, "unbound", "2"); err != nil {
		t.Errorf("on: resize of a pod on no node: %v, want admitted", err)
	}
	if err := resize(s.off, "bound", "2"); err != nil {
		t.Errorf("off: resize beyond the node's allocatable CPU: %v, want admitted", err)
	}
}
