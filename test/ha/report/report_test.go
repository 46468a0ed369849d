// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package report

import (
	"strings"
	"testing"
	"time"
)

// The run's table has the pod creates and versions columns only when a
// step has them; the evidence pages' has no versions, and says the commit
// and command.
func TestTables(t *testing.T) {
	r := &Report{Title: "TestX", Command: "sudo make test-ha", Commit: "abc1234", Began: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC), Seconds: 90}
	steady := Step{Name: "steady state", What: "no fault", Writes: 10, Acknowledged: 8, Refused: 1, Deliberate: 1, Unknown: 1, FailedRequests: 1,
		ErrorWindowSeconds: 2.5, LongestOutageSeconds: 2, LongestStallSeconds: 3, ConvergedSeconds: 1}
	r.Steps = append(r.Steps, steady)
	if md := r.Markdown(); strings.Contains(md, "Pod creates") || strings.Contains(md, "Versions after") {
		t.Errorf("columns without data:\n%s", md)
	}
	s := steady
	s.Name, s.What = "upgrade node1", "kubeadm upgrade apply | node"
	s.Pods = &PodCreates{Sent: 4, AsExpected: 3, Failed: 1}
	s.Versions = []NodeVersions{{Node: "node1", APIServer: "v1.37.2+turnstile.1", Etcd: "3.7.0-0", Kubelet: "v1.37.2"}, {Node: "worker", Kubelet: "v1.36.5"}}
	r.Steps = append(r.Steps, s)
	md := r.Markdown()
	for _, want := range []string{
		"Run of 2026-11-28T12:00:00Z, TestX, in 1m30s.",
		"| Step | Writes | Acknowledged | Refused (deliberate) | Unknown | Lost | Failed requests | Error window (s) | Longest outage (s) | Longest stall (s) | Converged after (s) | Pod creates: as expected / wrong / failed | Versions after | What happened |",
		"| steady state | 10 | 8 | 1 (1) | 1 | 0 | 1 | 2.5 | 2.0 | 3.0 | 1.0 |  |  | no fault |",
		`| 3 / 0 / 1 | node1: apiserver v1.37.2+turnstile.1, etcd 3.7.0-0, kubelet v1.37.2; worker: kubelet v1.36.5 | kubeadm upgrade apply \| node |`,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the run's table lacks %q:\n%s", want, md)
		}
	}
	evidence := r.Evidence()
	for _, want := range []string{
		"At `abc1234`, `sudo make test-ha` took 1m30s (2026-11-28).",
		"| 1.0 | 3 / 0 / 1 | kubeadm upgrade apply \\| node |",
		"Whole run: ",
	} {
		if !strings.Contains(evidence, want) {
			t.Errorf("the evidence lacks %q:\n%s", want, evidence)
		}
	}
	if strings.Contains(evidence, "Versions after") || strings.Contains(evidence, "Images:") {
		t.Errorf("the evidence has the versions, or images of a run that had none from bundles:\n%s", evidence)
	}
	r.Images = &Images{Bundles: []string{"v1.36.5's a.oci.tar", "v1.37.2's b.oci.tar"}}
	const images = "Images: from the air-gap bundles alone, v1.36.5's a.oci.tar and v1.37.2's b.oci.tar, each list's signature verified on every node; 0 requests reached a registry."
	if md, evidence := r.Markdown(), r.Evidence(); !strings.Contains(md, images) || !strings.Contains(evidence, images) {
		t.Errorf("an air-gapped run's report and evidence lack %q:\n%s\n%s", images, md, evidence)
	}
}
