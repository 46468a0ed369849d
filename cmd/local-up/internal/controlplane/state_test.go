// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package controlplane

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pkiutil"

	"github.com/turnstile-k8s/turnstile/internal/localnode"
)

// A state made on loopback alone, then run where the apiserver must also
// be reached on another address: only apiserver.crt is issued again, from
// the same CA; the CAs, the other certificates and the service-account
// keys are the same files. A run that fits removes nothing.
func TestReissueMisfits(t *testing.T) {
	dir := t.TempDir()
	o := Options{Dir: dir, Port: 16443, ControllerManagerPort: 10257, SchedulerPort: 10259}
	before, err := kubeadmConfig(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := writePKIAndKubeconfigs(before, dir); err != nil {
		t.Fatal(err)
	}
	kept := []string{"ca.crt", "ca.key", "front-proxy-ca.crt", "front-proxy-client.crt", "apiserver-kubelet-client.crt", "sa.key", "sa.pub"}
	files := func() map[string][]byte {
		m := map[string][]byte{}
		for _, f := range append(kept, "apiserver.crt") {
			data, err := os.ReadFile(filepath.Join(dir, "pki", f))
			if err != nil {
				t.Fatal(err)
			}
			m[f] = data
		}
		return m
	}
	first := files()

	// The same settings: nothing to issue.
	if err := reissueMisfits(before); err != nil {
		t.Fatal(err)
	}
	if again := files(); !bytes.Equal(again["apiserver.crt"], first["apiserver.crt"]) {
		t.Error("apiserver.crt was issued again for the settings it was made with")
	}

	o.Nodes = 1
	layout := localnode.Layout{Nodes: netip.MustParsePrefix("198.18.0.0/24"), Pods: netip.MustParsePrefix("198.18.16.0/20"),
		Services: netip.MustParsePrefix("10.96.0.0/12")}
	after, err := kubeadmConfig(o, &layout)
	if err != nil {
		t.Fatal(err)
	}
	if err := writePKIAndKubeconfigs(after, dir); err == nil || !strings.Contains(err.Error(), "198.18.0.1") {
		t.Fatalf("kubeadm took a certificate that lacks the new address: %v", err)
	}
	if err := reissueMisfits(after); err != nil {
		t.Fatal(err)
	}
	if err := writePKIAndKubeconfigs(after, dir); err != nil {
		t.Fatalf("after reissuing: %v", err)
	}
	second := files()
	for _, f := range kept {
		if !bytes.Equal(first[f], second[f]) {
			t.Errorf("%s changed; only apiserver.crt should", f)
		}
	}
	cert, err := pkiutil.TryLoadCertFromDisk(filepath.Join(dir, "pki"), "apiserver")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"198.18.0.1", "127.0.0.1", "10.96.0.1", "kubernetes.default.svc"} {
		if err := cert.VerifyHostname(name); err != nil {
			t.Errorf("the new apiserver.crt: %v", err)
		}
	}
}

func TestCompareStateVersion(t *testing.T) {
	o := Options{Dir: "/state", CleanCommand: "`make clean-local`"}
	for _, tc := range []struct {
		made, running string
		refused       []string // what the refusal names; nil: accepted
	}{
		{made: "v1.37.2", running: "v1.37.2+turnstile.1"},
		{made: "v1.37.1+turnstile.1", running: "v1.37.2+turnstile.1"},
		{made: "v1.37.2+turnstile.1", running: "v1.37.1+turnstile.1"}, // patches move both ways
		{made: "v1.36.5+turnstile.1", running: "v1.37.2+turnstile.1"}, // the upgrade
		{made: "v1.37.2+turnstile.1", running: "v1.36.5+turnstile.1", refused: []string{"v1.37.2+turnstile.1", "v1.36.5+turnstile.1", "downgrade (v1.37 to v1.36)", "`make clean-local`", "Nothing was started"}},
		{made: "v1.35.0", running: "v1.37.2", refused: []string{"v1.35.0", "v1.37.2", "skips a minor", "one minor at a time"}},
		{made: "v2.0.0", running: "v1.37.2", refused: []string{"downgrade"}},
	} {
		err := compareStateVersion(version.MustParseSemantic(tc.made), version.MustParseSemantic(tc.running), o)
		if tc.refused == nil {
			if err != nil {
				t.Errorf("%s on a state of %s: refused: %v", tc.running, tc.made, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s on a state of %s: accepted", tc.running, tc.made)
			continue
		}
		for _, want := range tc.refused {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s on a state of %s: %q lacks %q", tc.running, tc.made, err, want)
			}
		}
	}
}

// The network is chosen on a state's first run, with or without nodes, and
// kept; a state an earlier local-up made without recording one keeps
// kubeadm's ranges without nodes and is refused with them.
func TestChooseNetwork(t *testing.T) {
	dir := t.TempDir()
	o := Options{Dir: dir, CleanCommand: "`make clean-local`"}
	first, err := chooseNetwork(o, false)
	if err != nil || first == nil {
		t.Fatalf("a new state without nodes: %v, %v", first, err)
	}
	var recorded localnode.Layout
	data, err := os.ReadFile(filepath.Join(dir, networkFile))
	if err != nil || json.Unmarshal(data, &recorded) != nil || recorded != *first {
		t.Fatalf("%s holds %s (%v), want %+v", networkFile, data, err, *first)
	}
	if again, err := chooseNetwork(o, true); err != nil || *again != *first {
		t.Errorf("the next run without nodes: %+v, %v; want %+v", again, err, *first)
	}

	legacy := Options{Dir: t.TempDir(), CleanCommand: "`make clean-local`"}
	if l, err := chooseNetwork(legacy, true); err != nil || l != nil {
		t.Errorf("an earlier local-up's state without nodes: %+v, %v; want kubeadm's ranges (nil)", l, err)
	}
	legacy.Nodes = 1
	if _, err := chooseNetwork(legacy, true); err == nil || !strings.Contains(err.Error(), "`make clean-local` resets it") {
		t.Errorf("an earlier local-up's state with nodes: %v; want a refusal naming the reset", err)
	}
}

// What a root run writes in a user's state goes back to the user; the
// nodes' own files stay root's.
func TestGiveBack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to own files as another user")
	}
	dir := t.TempDir()
	const nobody = 65534
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"etcd/member/wal/0.wal", "pki/apiserver.crt", "nodes/n0/kubelet.conf"} {
		path := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := giveBack(dir); err != nil {
		t.Fatal(err)
	}
	for f, uid := range map[string]uint32{"etcd": nobody, "etcd/member/wal/0.wal": nobody, "pki/apiserver.crt": nobody, "nodes": 0, "nodes/n0/kubelet.conf": 0} {
		info, err := os.Lstat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Sys().(*syscall.Stat_t).Uid; got != uid {
			t.Errorf("%s belongs to uid %d, want %d", f, got, uid)
		}
	}
}
