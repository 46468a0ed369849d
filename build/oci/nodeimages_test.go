package oci

import (
	"testing"

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
