// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"slices"
	"strings"
	"testing"

	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	e2eimage "k8s.io/kubernetes/test/utils/image"
)

// The node images' names are the ones upstream's e2e framework uses, each
// once.
func TestNodeImageNamesMatchUpstream(t *testing.T) {
	upstream := e2eimage.GetOriginalImageConfigs()
	for _, tc := range []struct {
		id   e2eimage.ImageID
		ours string
	}{
		{e2eimage.Agnhost, AgnhostImage},
		{e2eimage.AgnhostPrev, AgnhostPrevImage},
		{e2eimage.BusyBox, BusyBoxImage},
		{e2eimage.Pause, PauseImage},
	} {
		config := upstream[tc.id]
		if want := config.GetE2EImage(); tc.ours != want {
			t.Errorf("ours %s, upstream's e2e framework %s", tc.ours, want)
		}
	}
	seen := map[string]bool{}
	for _, img := range NodeImages() {
		if img.Name == "" || img.Tarball != img.Name+".tar" || len(img.Tags) == 0 {
			t.Errorf("%+v", img)
		}
		for _, tag := range img.Tags {
			if seen[tag] {
				t.Errorf("%s twice", tag)
			}
			seen[tag] = true
		}
	}
	for _, name := range []string{PauseImage, BusyBoxImage, BusyBoxPrevImage, AgnhostImage, AgnhostPrevImage, CoreDNSImage} {
		if !seen[name] {
			t.Errorf("NodeImages lacks %s", name)
		}
	}
	// Every E2EImages name is one the e2e framework runs, and each is built
	// once, into the one archive.
	upstreamNames := map[string]bool{}
	for _, c := range upstream {
		upstreamNames[c.GetE2EImage()] = true
	}
	for _, img := range E2EImages() {
		if img.Name == "" || img.Tarball != E2EImageArchive || len(img.Tags) == 0 {
			t.Errorf("%+v", img)
		}
		for _, tag := range img.Tags {
			if !upstreamNames[tag] {
				t.Errorf("E2EImages: the e2e framework runs no %s", tag)
			}
			if seen[tag] && tag != AgnhostImage && tag != AgnhostPrevImage {
				t.Errorf("%s twice", tag)
			}
			seen[tag] = true
		}
	}
}

// The air-gap bundle's images are kubeadm's, under the repository it is
// given, with the tags kubeadm's constants name; a repository kubeadm
// cannot use is an error.
func TestAirGapImages(t *testing.T) {
	images, err := AirGapImages("turnstile-k8s", "v1.37.2")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"docker.io/turnstile-k8s/kube-apiserver:v1.37.2",
		"docker.io/turnstile-k8s/kube-controller-manager:v1.37.2",
		"docker.io/turnstile-k8s/kube-scheduler:v1.37.2",
		"docker.io/turnstile-k8s/kube-proxy:v1.37.2",
		"docker.io/turnstile-k8s/coredns:" + kubeadmconstants.CoreDNSVersion,
		"docker.io/turnstile-k8s/pause:" + kubeadmconstants.PauseVersion,
		"docker.io/turnstile-k8s/etcd:" + kubeadmconstants.DefaultEtcdVersion,
	}
	var got []string
	for _, img := range images {
		if len(img.Tags) != 1 || !strings.Contains(img.Tags[0], "/"+img.Name+":") {
			t.Errorf("%+v", img)
		}
		got = append(got, img.Tags...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("AirGapImages:\n got %q\nwant %q", got, want)
	}
	if _, err := AirGapImages("Not A Repository", "v1.37.2"); err == nil || !strings.Contains(err.Error(), `imageRepository "Not A Repository"`) {
		t.Errorf("a repository with spaces: %v", err)
	}
	images, err = AirGapImages("registry.example.com:5000/mirror", "v1.37.2")
	if err != nil || images[0].Tags[0] != "registry.example.com:5000/mirror/kube-apiserver:v1.37.2" {
		t.Errorf("a registry's repository: %v, %+v", err, images)
	}
}
