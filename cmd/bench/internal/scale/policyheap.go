// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/attribution"
	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/measure"
	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/policies"
	pspclient "github.com/turnstile-k8s/turnstile/pkg/client/clientset/versioned"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// PolicyHeapSize is what -policy-heap fills each server with.
type PolicyHeapSize struct{ Nodes, Pods, Policies int }

func ParsePolicyHeapSize(s string) (PolicyHeapSize, error) {
	parts := strings.Split(s, "/")
	var n [3]int
	if len(parts) != len(n) {
		return PolicyHeapSize{}, fmt.Errorf("-policy-heap %q: want NODES/PODS/POLICIES", s)
	}
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || (i == 2 && v < 1) {
			return PolicyHeapSize{}, fmt.Errorf("-policy-heap %q: %q is not a count (at least one policy)", s, p)
		}
		n[i] = v
	}
	return PolicyHeapSize{n[0], n[1], n[2]}, nil
}

// policyHeapReport is what -policy-heap measured.
type policyHeapReport struct {
	Size PolicyHeapSize `json:"size"`
	// The live heaps after a collection: of the server serving
	// policy/v1beta1 with the policies, and of the one not serving it.
	ServingMiB    float64 `json:"servingLiveHeapMiB"`
	NotServingMiB float64 `json:"notServingLiveHeapMiB"`
	// Their resident sets.
	ServingRSSMiB    float64 `json:"servingRssMiB"`
	NotServingRSSMiB float64 `json:"notServingRssMiB"`
}

// share is what serving the API adds, of the heap without it.
func (r policyHeapReport) share() float64 { return (r.ServingMiB - r.NotServingMiB) / r.NotServingMiB }

// servingPolicyArgs serve policy/v1beta1 without the admission plugin, so
// that both servers admit the same pods and hold the same objects but the
// policies.
var servingPolicyArgs = []string{"--runtime-config=policy/v1beta1/podsecuritypolicies=true"}

// RunPolicyHeap measures what serving policy/v1beta1 with size.Policies
// policies costs in heap: two of our apiservers, one serving the API with
// the policies created, one not, each then given the same nodes and pods
// (the pods unscheduled, as a cluster of size.Nodes holds them), and their
// live heaps compared after a collection. The policy server's storage, its
// watch cache of the policies and the decoding of its requests are what
// differs.
func RunPolicyHeap(size PolicyHeapSize, out string, workers int) error {
	ctx := context.Background()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	root, pki, err := measure.Workspace("turnstile-policy-heap-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	r := policyHeapReport{Size: size}
	for _, side := range []struct {
		name      string
		args      []string
		heap, rss *float64
		policies  bool
	}{
		{"serving", servingPolicyArgs, &r.ServingMiB, &r.ServingRSSMiB, true},
		{"not-serving", nil, &r.NotServingMiB, &r.NotServingRSSMiB, false},
	} {
		fmt.Fprintf(os.Stderr, "bench: policy heap: %s policy/v1beta1: %d nodes, %d pods%s\n", side.name, size.Nodes, size.Pods,
			map[bool]string{true: fmt.Sprintf(", %d policies", size.Policies)}[side.policies])
		heap, rss, err := fillAndWeigh(ctx, filepath.Join(root, side.name), pki, side.args, size, side.policies, workers,
			filepath.Join(out, "policy-heap-"+side.name+".pprof"))
		if err != nil {
			return fmt.Errorf("%s: %w", side.name, err)
		}
		*side.heap, *side.rss = heap, rss
	}
	fmt.Printf("\nServing policy/v1beta1 with %d policies, %d nodes and %d pods on both servers:\n", size.Policies, size.Nodes, size.Pods)
	fmt.Printf("  live heap %.1f MiB against %.1f MiB without the API: %+.1f MiB, %+.2f%%\n", r.ServingMiB, r.NotServingMiB, r.ServingMiB-r.NotServingMiB, 100*r.share())
	fmt.Printf("  resident set %.1f MiB against %.1f MiB\n", r.ServingRSSMiB, r.NotServingRSSMiB)
	fmt.Printf("  what differs: go tool pprof -top -sample_index=inuse_space -diff_base %s %s\n",
		filepath.Join(out, "policy-heap-not-serving.pprof"), filepath.Join(out, "policy-heap-serving.pprof"))
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "policy-heap.json"), data, 0o644)
}

// fillAndWeigh starts one of our apiservers with args, creates what size
// says (the policies themselves only when withPolicies is set, their RBAC
// grants always), and returns its live heap and resident set in MiB.
func fillAndWeigh(ctx context.Context, dir string, pki *framework.PKI, args []string, size PolicyHeapSize, withPolicies bool, workers int, profileFile string) (heap, rss float64, err error) {
	// The live heap is the runtime's exact figure; the finer sampling is
	// for the profile, so that its difference names a few MiB reliably.
	s, err := measure.Start(dir, pki, "", args, fmt.Sprintf("memprofilerate=%d", attribution.ProfiledMemRate))
	if err != nil {
		return 0, 0, err
	}
	defer s.Stop()
	// Both servers get the grants (RBAC); only the serving one the
	// policies.
	var psps pspclient.Interface
	if withPolicies {
		quiet := rest.CopyConfig(s.Config)
		quiet.WarningHandler = rest.NoWarnings{}
		if psps, err = pspclient.NewForConfig(quiet); err != nil {
			return 0, 0, err
		}
	}
	if err := ensurePolicies(ctx, s.Client, psps, size.Policies, workers); err != nil {
		return 0, 0, err
	}
	if err := ensureNodes(ctx, s.Client, size.Nodes, workers); err != nil {
		return 0, 0, err
	}
	const namespaces = 10
	for i := range namespaces {
		ns := fmt.Sprintf("heap-%d", i)
		if err := ignoreExists(policies.Created(s.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}))); err != nil {
			return 0, 0, err
		}
		// No controller-manager runs to make it.
		if err := ignoreExists(policies.Created(s.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}))); err != nil {
			return 0, 0, err
		}
	}
	tmpl := workloadPod("heap", false)
	err = parallel(ctx, 0, size.Pods, workers, func(ctx context.Context, i int) error {
		pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
		pod.Name = fmt.Sprintf("pod-%05d", i)
		return ignoreExists(policies.Created(s.Client.CoreV1().Pods(fmt.Sprintf("heap-%d", i%namespaces)).Create(ctx, pod, metav1.CreateOptions{})))
	})
	if err != nil {
		return 0, 0, err
	}
	// The watch caches and informers catch up with the last writes.
	time.Sleep(5 * time.Second)
	p, heap, err := s.LiveHeap(ctx)
	if err != nil {
		return 0, 0, err
	}
	if err := measure.WriteProfile(p, profileFile); err != nil {
		return 0, 0, err
	}
	rss, err = measure.ProcMiB(fmt.Sprintf("/proc/%d/status", s.APIServer.Pid()), "VmRSS:")
	return heap, rss, err
}
