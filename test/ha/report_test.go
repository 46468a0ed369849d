// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package ha

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The report's table has the pod creates and versions columns only when a
// step has them, and its JSON, written beside it, holds every figure.
func TestReport(t *testing.T) {
	r := &Report{Title: "TestX", Began: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}
	w := Window{Writes: 10, Acked: 8, Refused: 1, Deliberate: 1, Unknown: 1, Failed: 1, ErrorSeconds: 2.5, OutageSeconds: 2, StallSeconds: 3}
	r.Steps = append(r.Steps, NewStep("steady state", "no fault", 10*time.Second, w, 0, time.Second))
	if md := r.Markdown(); strings.Contains(md, "Pod creates") || strings.Contains(md, "Versions after") {
		t.Errorf("columns without data:\n%s", md)
	}
	s := NewStep("upgrade node1", "kubeadm upgrade apply", time.Minute, w, 0, 2*time.Second)
	s.Pods = &PodCreates{Sent: 4, AsExpected: 3, Failed: 1}
	s.Versions = []NodeVersions{{Node: "node1", APIServer: "v1.37.2+turnstile.1", Etcd: "3.7.0-0", Kubelet: "v1.37.2"}, {Node: "worker", Kubelet: "v1.36.5"}}
	r.Steps = append(r.Steps, s)
	md := r.Markdown()
	for _, want := range []string{
		"| Step | Writes | Acknowledged | Refused (deliberate) | Unknown | Lost | Failed requests | Error window (s) | Longest outage (s) | Longest stall (s) | Converged after (s) | Pod creates: as expected / wrong / failed | Versions after | What happened |",
		"| steady state | 10 | 8 | 1 (1) | 1 | 0 | 1 | 2.5 | 2.0 | 3.0 | 1.0 |  |  | no fault |",
		"| 3 / 0 / 1 | node1: apiserver v1.37.2+turnstile.1, etcd 3.7.0-0, kubelet v1.37.2; worker: kubelet v1.36.5 | kubeadm upgrade apply |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the table lacks %q:\n%s", want, md)
		}
	}
	path := filepath.Join(t.TempDir(), "report.md")
	r.Write(t, path)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(path), "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Steps) != 2 || back.Steps[1].Pods.AsExpected != 3 || back.Steps[1].Versions[0].APIServer != "v1.37.2+turnstile.1" || back.Steps[0].LongestOutageSeconds != 2 {
		t.Errorf("report.json: %s", data)
	}
}
