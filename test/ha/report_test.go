// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package ha

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnstile-k8s/turnstile/test/ha/report"
)

// A step's row holds the load's window, and the JSON written beside the
// table holds every figure.
func TestWriteReport(t *testing.T) {
	r := &report.Report{Title: "TestX", Began: time.Now()}
	w := Window{Writes: 10, Acked: 8, Refused: 1, Deliberate: 1, Unknown: 1, Failed: 1, ErrorSeconds: 2.5, OutageSeconds: 2, StallSeconds: 3}
	s := NewStep("upgrade node1", "kubeadm upgrade apply", time.Minute, w, 0, 2*time.Second)
	s.Pods = &report.PodCreates{Sent: 4, AsExpected: 3, Failed: 1}
	s.Versions = []report.NodeVersions{{Node: "node1", APIServer: "v1.37.2+turnstile.1", Etcd: "3.7.0-0", Kubelet: "v1.37.2"}}
	r.Steps = append(r.Steps, NewStep("steady state", "no fault", 10*time.Second, w, 0, time.Second), s)
	path := filepath.Join(t.TempDir(), "report.md")
	WriteReport(t, r, path)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(path), "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back report.Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Steps) != 2 || back.Steps[1].Pods.AsExpected != 3 || back.Steps[1].Versions[0].APIServer != "v1.37.2+turnstile.1" ||
		back.Steps[0].LongestOutageSeconds != 2 || back.Steps[0].Acknowledged != 8 || back.Steps[1].ConvergedSeconds != 2 {
		t.Errorf("report.json: %s", data)
	}
}
