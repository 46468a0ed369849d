// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// nodecertCreateNode creates node through the server's admin and deletes it
// at the end of the test.
func nodecertCreateNode(t *testing.T, s *nodecertServer, node *corev1.Node) *corev1.Node {
	t.Helper()
	created, err := s.admin.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating node %s: %v", node.Name, err)
	}
	t.Cleanup(func() { _ = s.admin.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	return created
}

// nodecertBoundPod is a pod already bound to node, as if scheduled.
func nodecertBoundPod(name, node string) *corev1.Pod {
	pod := pausePod(name, "")
	pod.Spec.NodeName = node
	return pod
}

func nodecertMergePatchNode(c kubernetes.Interface, name, patch string) error {
	_, err := c.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// NodeRestriction: a kubelet (system:node:<name> in system:nodes, through
// --authorization-mode=Node,RBAC) may modify its own Node and the pods bound
// to it, and nothing else; it cannot change node-restriction.kubernetes.io/
// labels or its taints. Without the plugin the Node authorizer alone lets it
// do all of that to any node and any pod.
func nodecertNodeRestriction(t *testing.T, s *nodecertServer) {
	ctx := context.Background()
	ns := createNamespace(t, s.admin)
	const self, other = "nc-kubelet-a", "nc-kubelet-b"
	for _, name := range []string{self, other, "nc-kubelet-d", "nc-kubelet-e"} {
		nodecertCreateNode(t, s, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-restriction.kubernetes.io/pool": "gold"}},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{
				{Key: "e2e.turnstile.dev/dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule},
			}},
		})
	}
	kubelet := s.as(t, "system:node:"+self, "system:nodes")

	t.Run("own-node", func(t *testing.T) {
		admittedNodecert(t, "kubelet sets permitted labels on its Node", nodecertMergePatchNode(kubelet, self,
			`{"metadata":{"labels":{"e2e.turnstile.dev/role":"web","topology.kubernetes.io/zone":"z1","kubelet.kubernetes.io/x":"y","node.kubernetes.io/instance-type":"small"}}}`))
		_, err := kubelet.CoreV1().Nodes().Patch(ctx, self, types.MergePatchType,
			[]byte(`{"status":{"conditions":[{"type":"Ready","status":"False","reason":"E2E"}]}}`), metav1.PatchOptions{}, "status")
		admittedNodecert(t, "kubelet reports its Node's status", err)
		s.judged(t, "kubelet changes a node-restriction.kubernetes.io/ label on its Node",
			nodecertMergePatchNode(kubelet, self, `{"metadata":{"labels":{"node-restriction.kubernetes.io/pool":"silver"}}}`),
			"is not allowed to modify labels: node-restriction.kubernetes.io/pool")
		s.judged(t, "kubelet removes a node-restriction.kubernetes.io/ label from its Node",
			nodecertMergePatchNode(kubelet, self, `{"metadata":{"labels":{"node-restriction.kubernetes.io/pool":null}}}`),
			"is not allowed to modify labels: node-restriction.kubernetes.io/pool")
		s.judged(t, "kubelet adds an unlisted kubernetes.io label to its Node",
			nodecertMergePatchNode(kubelet, self, `{"metadata":{"labels":{"example.kubernetes.io/team":"a"}}}`),
			"is not allowed to modify labels: example.kubernetes.io/team")
		s.judged(t, "kubelet removes its Node's taints",
			nodecertMergePatchNode(kubelet, self, `{"spec":{"taints":null}}`),
			`node "nc-kubelet-a" is not allowed to modify taints`)
		s.judged(t, "kubelet adds a taint to its Node",
			nodecertMergePatchNode(kubelet, self, `{"spec":{"taints":[{"key":"e2e.turnstile.dev/dedicated","value":"infra","effect":"NoSchedule"},{"key":"e2e.turnstile.dev/new","effect":"NoSchedule"}]}}`),
			`node "nc-kubelet-a" is not allowed to modify taints`)
		// Deleting its own Node is refused by the Node authorizer, which
		// never grants delete on nodes, with or without the plugin.
		err = kubelet.CoreV1().Nodes().Delete(ctx, self, metav1.DeleteOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot delete resource "nodes"`) {
			t.Errorf("kubelet deletes its Node: %v, want 403 from the authorizer", err)
		}
	})

	t.Run("other-nodes", func(t *testing.T) {
		s.judged(t, "kubelet labels another Node",
			nodecertMergePatchNode(kubelet, other, `{"metadata":{"labels":{"e2e.turnstile.dev/role":"web"}}}`),
			`node "nc-kubelet-a" is not allowed to modify node "nc-kubelet-b"`)
		_, err := kubelet.CoreV1().Nodes().Patch(ctx, other, types.MergePatchType,
			[]byte(`{"status":{"conditions":[{"type":"Ready","status":"False","reason":"E2E"}]}}`), metav1.PatchOptions{}, "status")
		s.judged(t, "kubelet reports another Node's status", err, `node "nc-kubelet-a" is not allowed to modify node "nc-kubelet-b"`)
		_, err = kubelet.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "nc-kubelet-z"}}, metav1.CreateOptions{})
		s.judged(t, "kubelet registers a Node of another name", err, `node "nc-kubelet-a" is not allowed to modify node "nc-kubelet-z"`)
		if err == nil {
			_ = s.admin.CoreV1().Nodes().Delete(ctx, "nc-kubelet-z", metav1.DeleteOptions{})
		}
	})

	t.Run("register", func(t *testing.T) {
		// A kubelet registering its own Node may not give it restricted labels.
		const name = "nc-kubelet-c"
		registering := s.as(t, "system:node:"+name, "system:nodes")
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-restriction.kubernetes.io/pool": "gold"}}}
		_, err := registering.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		s.judged(t, "kubelet registers its Node with a node-restriction.kubernetes.io/ label", err,
			`node "nc-kubelet-c" is not allowed to set the following labels: node-restriction.kubernetes.io/pool`)
		if err == nil {
			_ = s.admin.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		}
		node.Labels = map[string]string{"kubernetes.io/hostname": name, "e2e.turnstile.dev/role": "web"}
		_, err = registering.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		admittedNodecert(t, "kubelet registers its Node with permitted labels", err)
		if err == nil {
			t.Cleanup(func() { _ = s.admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		}
	})

	t.Run("delete-with-rbac", func(t *testing.T) {
		// Given delete on nodes by RBAC, a kubelet still may not delete
		// another Node. Upstream's plugin lets it delete its own (the
		// documentation says otherwise; the authorizer is what stops it).
		const deleter, victim = "nc-kubelet-d", "nc-kubelet-e"
		s.grant(t, "node-deleter", "system:node:"+deleter,
			authorizationv1.ResourceAttributes{Verb: "delete", Resource: "nodes", Name: victim},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"delete"}})
		c := s.as(t, "system:node:"+deleter, "system:nodes")
		s.judged(t, "kubelet with RBAC delete deletes another Node", c.CoreV1().Nodes().Delete(ctx, victim, metav1.DeleteOptions{}),
			`node "nc-kubelet-d" is not allowed to modify node "nc-kubelet-e"`)
		admittedNodecert(t, "kubelet with RBAC delete deletes its own Node", c.CoreV1().Nodes().Delete(ctx, deleter, metav1.DeleteOptions{}))
	})

	t.Run("pods", func(t *testing.T) {
		for _, pod := range []*corev1.Pod{nodecertBoundPod("mine", self), nodecertBoundPod("theirs", other)} {
			if _, err := s.admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		setStatus := func(name string) error {
			pod, err := s.admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: "e2e.turnstile.dev/Seen", Status: corev1.ConditionTrue})
			_, err = kubelet.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
			return err
		}
		admittedNodecert(t, "kubelet updates the status of a pod bound to it", setStatus("mine"))
		s.judged(t, "kubelet updates the status of another node's pod", setStatus("theirs"),
			`node "nc-kubelet-a" can only update pod status for pods with spec.nodeName set to itself`)

		// The plugin finds the pod to delete in an informer: retry while it
		// has not seen the pod yet.
		del := func(name string) error {
			return nodecertRetryWhileInformerLags(func() error {
				return kubelet.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{})
			})
		}
		admittedNodecert(t, "kubelet deletes a pod bound to it", del("mine"))
		s.judged(t, "kubelet deletes another node's pod", del("theirs"),
			`node "nc-kubelet-a" can only delete pods with spec.nodeName set to itself`)

		// Kubelets create only mirror pods, bound to and owned by themselves.
		node, err := s.admin.CoreV1().Nodes().Get(ctx, self, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mirror := nodecertBoundPod("mirror", self)
		mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "e2e"}
		mirror.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: self, UID: node.UID, Controller: ptr.To(true)}}
		admittedNodecert(t, "kubelet creates a mirror pod of its own", nodecertRetryWhileInformerLags(func() error {
			_, err := kubelet.CoreV1().Pods(ns).Create(ctx, mirror, metav1.CreateOptions{})
			return err
		}))
		_, err = kubelet.CoreV1().Pods(ns).Create(ctx, nodecertBoundPod("made-up", self), metav1.CreateOptions{})
		s.judged(t, "kubelet creates a pod that is not a mirror pod", err,
			`pod does not have "kubernetes.io/config.mirror" annotation, node "nc-kubelet-a" can only create mirror pods`)
		elsewhere := nodecertBoundPod("mirror-elsewhere", other)
		elsewhere.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "e2e"}
		_, err = kubelet.CoreV1().Pods(ns).Create(ctx, elsewhere, metav1.CreateOptions{})
		s.judged(t, "kubelet creates a mirror pod bound to another node", err,
			`node "nc-kubelet-a" can only create pods with spec.nodeName set to itself`)
	})
}

// TaintNodesByCondition: a new Node gets the not-ready NoSchedule taint,
// once; later updates are left alone.
func nodecertTaintNodesByCondition(t *testing.T, s *nodecertServer) {
	ctx := context.Background()
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	count := func(node *corev1.Node) int {
		n := 0
		for _, taint := range node.Spec.Taints {
			if taint.MatchTaint(&notReady) {
				n++
			}
		}
		return n
	}
	want := 0
	if s.on {
		want = 1
	}

	fresh := nodecertCreateNode(t, s, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "nc-fresh"}})
	if got := count(fresh); got != want {
		t.Errorf("new node has %d not-ready NoSchedule taints, want %d: %+v", got, want, fresh.Spec.Taints)
	}
	if s.on && len(fresh.Spec.Taints) != 1 {
		t.Errorf("new node taints = %+v, want only the not-ready one", fresh.Spec.Taints)
	}

	tainted := nodecertCreateNode(t, s, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "nc-fresh-tainted"},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: "e2e.turnstile.dev/dedicated", Effect: corev1.TaintEffectNoExecute},
			notReady,
		}},
	})
	if got := count(tainted); got != 1 || len(tainted.Spec.Taints) != 2 {
		t.Errorf("node created with the not-ready taint: taints %+v, want it once beside the other", tainted.Spec.Taints)
	}

	// The plugin acts on creation only: the taint can be removed.
	if err := nodecertMergePatchNode(s.admin, fresh.Name, `{"spec":{"taints":null}}`); err != nil {
		t.Fatal(err)
	}
	updated, err := s.admin.CoreV1().Nodes().Get(ctx, fresh.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(updated.Spec.Taints) != 0 {
		t.Errorf("after removing the taints: %+v, want none", updated.Spec.Taints)
	}
}

// DefaultTolerationSeconds: pods that do not tolerate the not-ready and
// unreachable NoExecute taints get tolerations for them, with the seconds of
// --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds (17 and 42 here, not 300).
func nodecertDefaultTolerationSeconds(t *testing.T, s *nodecertServer) {
	ctx := context.Background()
	ns := createNamespace(t, s.admin)
	defaulted := func(key string, seconds int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(seconds)}
	}
	notReady := defaulted(corev1.TaintNodeNotReady, nodecertNotReadySeconds)
	unreachable := defaulted(corev1.TaintNodeUnreachable, nodecertUnreachableSeconds)
	own := defaulted(corev1.TaintNodeNotReady, 5)
	everything := corev1.Toleration{Operator: corev1.TolerationOpExists}

	for _, tc := range []struct {
		name    string
		given   []corev1.Toleration
		wantOn  []corev1.Toleration
		wantOff []corev1.Toleration
	}{
		{name: "plain", wantOn: []corev1.Toleration{notReady, unreachable}},
		{name: "own-not-ready", given: []corev1.Toleration{own}, wantOn: []corev1.Toleration{own, unreachable}, wantOff: []corev1.Toleration{own}},
		{name: "tolerates-everything", given: []corev1.Toleration{everything}, wantOn: []corev1.Toleration{everything}, wantOff: []corev1.Toleration{everything}},
	} {
		pod := pausePod(tc.name, "")
		pod.Spec.Tolerations = tc.given
		created, err := s.admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := tc.wantOff
		if s.on {
			want = tc.wantOn
		}
		if !slices.EqualFunc(created.Spec.Tolerations, want, func(a, b corev1.Toleration) bool {
			return a.MatchToleration(&b) && ptr.Equal(a.TolerationSeconds, b.TolerationSeconds)
		}) {
			t.Errorf("%s: tolerations %s, want %s", tc.name, toJSON(t, created.Spec.Tolerations), toJSON(t, want))
		}
	}
}

// PodTopologyLabels: binding a pod to a Node (pods/binding, as the
// scheduler does) copies the Node's topology.kubernetes.io/zone and /region
// labels, and no others, onto the pod. Upstream does the same for a pod
// created with spec.nodeName set, which the documentation does not mention.
func nodecertPodTopologyLabels(t *testing.T, s *nodecertServer) {
	ctx := context.Background()
	ns := createNamespace(t, s.admin)
	const node = "nc-zoned"
	nodecertCreateNode(t, s, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{
		corev1.LabelTopologyZone:   "e2e-zone-1",
		corev1.LabelTopologyRegion: "e2e-region",
		corev1.LabelHostname:       node,
		"e2e.turnstile.dev/rack":   "r7",
	}}})
	wantLabels := map[string]string{"app": "web"}
	if s.on {
		wantLabels[corev1.LabelTopologyZone] = "e2e-zone-1"
		wantLabels[corev1.LabelTopologyRegion] = "e2e-region"
	}

	// The plugin reads the Node from an informer and copies nothing from a
	// Node it has not seen yet, so the first pods may be bound before it
	// has: bind fresh pods until one gets labels (or, without the plugin,
	// check the first).
	attempt := 0
	var bound *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		attempt++
		pod := pausePod(fmt.Sprintf("bound-%d", attempt), "")
		pod.Labels = map[string]string{"app": "web"}
		if _, err := s.admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return false, err
		}
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
		if err := s.admin.CoreV1().Pods(ns).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
			return false, err
		}
		var err error
		if bound, err = s.admin.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		return !s.on || len(bound.Labels) > 1, nil
	})
	if bound == nil {
		t.Fatalf("binding a pod: %v", err)
	}
	if bound.Spec.NodeName != node || !maps.Equal(bound.Labels, wantLabels) {
		t.Errorf("pod bound to %s: node %q, labels %v, want labels %v", node, bound.Spec.NodeName, bound.Labels, wantLabels)
	}

	pod := nodecertBoundPod("created-bound", node)
	pod.Labels = map[string]string{"app": "web"}
	created, err := s.admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(created.Labels, wantLabels) {
		t.Errorf("pod created with nodeName %s: labels %v, want %v", node, created.Labels, wantLabels)
	}
}

// NodeDeclaredFeatureValidator: an update of a bound pod that needs a node
// feature (here a resize of pod-level resources, which needs
// InPlacePodLevelResourcesVerticalScaling) is refused unless the pod's Node
// lists that feature in status.declaredFeatures.
func nodecertNodeDeclaredFeatureValidator(t *testing.T, s *nodecertServer) {
	ctx := context.Background()
	ns := createNamespace(t, s.admin)
	const feature = "InPlacePodLevelResourcesVerticalScaling"
	for name, features := range map[string][]string{"nc-ndf-plain": {}, "nc-ndf-capable": {feature}} {
		node := nodecertCreateNode(t, s, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelOSStable: "linux"}}})
		capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
		node.Status = corev1.NodeStatus{Capacity: capacity, Allocatable: capacity, DeclaredFeatures: features}
		if _, err := s.admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("declaring features on %s: %v", name, err)
		}
	}
	resize := func(node string) error {
		pod := nodecertBoundPod("on-"+node, node)
		pod.Spec.Resources = &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		}
		if _, err := s.admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return nodecertRetryWhileInformerLags(func() error {
			_, err := s.admin.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType,
				[]byte(`{"spec":{"resources":{"requests":{"cpu":"150m"}}}}`), metav1.PatchOptions{}, "resize")
			return err
		})
	}
	s.judged(t, "resizing pod-level resources on a node that does not declare "+feature, resize("nc-ndf-plain"),
		`pod update requires features `+feature+` which are not available on node "nc-ndf-plain"`)
	admittedNodecert(t, "resizing pod-level resources on a node that declares "+feature, resize("nc-ndf-capable"))
}
