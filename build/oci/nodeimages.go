// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"fmt"
	"path"

	"github.com/distribution/reference"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	kubeadmimages "k8s.io/kubernetes/cmd/kubeadm/app/images"
	kubeadmutil "k8s.io/kubernetes/cmd/kubeadm/app/util"
	e2eimage "k8s.io/kubernetes/test/utils/image"
)

// The images a local node needs that it would otherwise pull, by the exact
// names the kubelet, kubeadm and upstream's e2e framework of the pinned
// release use, so that they follow each Kubernetes line.
// cmd/nodeimages builds them (make node-images).
//
// The e2e framework's names come from k8s.io/kubernetes/test/utils/image,
// which reads KUBE_TEST_REPO_LIST when it loads (and fetches it when it is
// a URL); the Makefile does not pass that variable on, and these are the
// original names, which it does not change.
const (
	// PauseImage is the sandbox image: kubeadm's and the kubelet's default.
	PauseImage = "registry.k8s.io/pause:" + kubeadmconstants.PauseVersion
	// CoreDNSImage is the CoreDNS kubeadm deploys.
	CoreDNSImage = "registry.k8s.io/coredns/" + kubeadmconstants.CoreDNSImageName + ":" + kubeadmconstants.CoreDNSVersion
	// BusyBoxPrevImage is the busybox of earlier releases' e2e tests; the
	// busybox archive holds this name too.
	BusyBoxPrevImage = "registry.k8s.io/e2e-test-images/busybox:1.36.1-1"
)

var (
	// AgnhostImage and BusyBoxImage are upstream's e2e images
	// configs[Agnhost] and configs[BusyBox].
	AgnhostImage = E2EImage(e2eimage.Agnhost)
	BusyBoxImage = E2EImage(e2eimage.BusyBox)
	// AgnhostPrevImage is configs[AgnhostPrev], which some e2e tests use;
	// the agnhost archive holds this name too.
	AgnhostPrevImage = E2EImage(e2eimage.AgnhostPrev)
)

// E2EImage is the name upstream's e2e framework gives the image.
func E2EImage(id e2eimage.ImageID) string {
	config := e2eimage.GetOriginalImageConfigs()[id]
	return config.GetE2EImage()
}

// NodeImage is one image of a local node, as cmd/nodeimages writes it.
type NodeImage struct {
	// Name is short, for messages and file names: pause, busybox, agnhost,
	// coredns.
	Name string
	// Tags holds every name the image has, the main one (PauseImage,
	// ...) first; its archive holds all of them.
	Tags []string
	// Binary, for a control-plane image, is the file in the bin directory
	// the image holds as /usr/local/bin/<Name>; Name when empty.
	Binary string
	// Tarball is the docker-archive's file name in the output directory
	// (make node-images: _output/images/node), for `ctr -n k8s.io images
	// import`.
	Tarball string
}

// NodeImages lists the images cmd/nodeimages builds, in the order it
// builds them.
func NodeImages() []NodeImage {
	return []NodeImage{
		{Name: "pause", Tags: []string{PauseImage}, Tarball: "pause.tar"},
		{Name: "busybox", Tags: []string{BusyBoxImage, BusyBoxPrevImage}, Tarball: "busybox.tar"},
		{Name: "agnhost", Tags: []string{AgnhostImage, AgnhostPrevImage}, Tarball: "agnhost.tar"},
		{Name: "coredns", Tags: []string{CoreDNSImage}, Tarball: "coredns.tar"},
	}
}

// E2EImageArchive is the one docker-archive, in the output directory (make
// e2e-images: _output/images/e2e), that holds every E2EImages image: they
// share one Debian root file system, which the archive holds once.
const E2EImageArchive = "e2e.tar"

// E2EImages are the rest of the images upstream's e2e framework runs
// (`e2e.test --list-images`), by the names k8s.io/kubernetes/test/utils/image
// gives them, for running its suites against local nodes: built by
// cmd/nodeimages -e2e on a Debian root file system (mmdebstrap) where
// upstream's are on Alpine or Debian, and imported after NodeImages, so that
// their agnhost, which has the Debian tools the Services and DNS specs run
// (nc -v -t, dig), replaces NodeImages' busybox-based one. Every image is in
// the one archive E2EImageArchive. Not built: the images meant to fail to
// pull (invalid.registry.k8s.io, the private registry's agnhost), the
// node-perf workloads, the NFS and iSCSI volume servers and the AppArmor
// loader (kernel features this machine's kernel lacks or that need a kernel
// server), and sig-storage's CSI sidecars; docs/local-nodes.md says why.
func E2EImages() []NodeImage {
	image := func(name string, tags ...string) NodeImage {
		return NodeImage{Name: name, Tags: tags, Tarball: E2EImageArchive}
	}
	return append([]NodeImage{
		image("agnhost-debian", AgnhostImage, AgnhostPrevImage),
		image("kitten", E2EImage(e2eimage.Kitten)),
		image("nautilus", E2EImage(e2eimage.Nautilus)),
		image("nginx", E2EImage(e2eimage.Nginx), E2EImage(e2eimage.NginxNew)),
		image("nonroot", E2EImage(e2eimage.NonRoot)),
		image("nonewprivs", E2EImage(e2eimage.Nonewprivs)),
		image("glibc-dns-testing", E2EImage(e2eimage.GlibcDnsTesting)),
		image("perl", E2EImage(e2eimage.Perl)),
		image("sample-apiserver", E2EImage(e2eimage.APIServer)),
		image("resource-consumer", E2EImage(e2eimage.ResourceConsumer)),
		image("ipc-utils", E2EImage(e2eimage.IpcUtils)),
		image("regression-issue-74839", E2EImage(e2eimage.RegressionIssue74839)),
	}, lineE2EImages(image)...)
}

// ControlPlaneImages are the images `kubeadm init` and `kubeadm upgrade`
// run as static pods, under the names kubeadm gives them for
// kubernetesVersion (for example v1.37.2): upstream's kube-apiserver,
// kube-controller-manager, kube-scheduler and etcd, built from go.mod's
// tool lines, FROM scratch with the binary in /usr/local/bin as upstream's
// images hold it. Ours (make image) replaces the kube-apiserver by a
// kubeadm patch; upstream's is there for a vanilla control plane.
func ControlPlaneImages(kubernetesVersion string) []NodeImage {
	tag := kubeadmutil.KubernetesVersionToImageTag(kubernetesVersion)
	return []NodeImage{
		{Name: "kube-apiserver", Binary: "kube-apiserver-upstream", Tags: []string{"registry.k8s.io/kube-apiserver:" + tag}, Tarball: "kube-apiserver.tar"},
		{Name: "kube-controller-manager", Tags: []string{"registry.k8s.io/kube-controller-manager:" + tag}, Tarball: "kube-controller-manager.tar"},
		{Name: "kube-scheduler", Tags: []string{"registry.k8s.io/kube-scheduler:" + tag}, Tarball: "kube-scheduler.tar"},
		{Name: "etcd", Tags: []string{"registry.k8s.io/etcd:" + kubeadmconstants.DefaultEtcdVersion}, Tarball: "etcd.tar"},
	}
}

// ConformanceImageArchive is the docker-archive, beside E2EImageArchive
// (make conformance-image: _output/images/e2e), of ConformanceImage.
const ConformanceImageArchive = "conformance.tar"

// ConformanceImage is upstream's conformance image of kubernetesVersion
// (test/conformance/image: go-runner running ginkgo over e2e.test), under
// the names its Makefile pushes, registry.k8s.io/conformance:vX.Y.Z and
// registry.k8s.io/conformance-ARCH:vX.Y.Z: hydrophone and sonobuoy ask
// for the first, with the server's version.
func ConformanceImage(kubernetesVersion, arch string) NodeImage {
	return NodeImage{Name: "conformance", Tags: []string{
		"registry.k8s.io/conformance:" + kubernetesVersion,
		"registry.k8s.io/conformance-" + arch + ":" + kubernetesVersion,
	}, Tarball: ConformanceImageArchive}
}

// AirGapImages are the images of make release's air-gap bundle for a
// kubeadm cluster of kubernetesVersion whose imageRepository is
// repository: exactly what `kubeadm config images list` names (kubeadm's
// own images.GetControlPlaneImages, so the list follows each line), in its
// order: kube-apiserver, kube-controller-manager, kube-scheduler,
// kube-proxy, CoreDNS, pause and etcd. Each image's Name is its
// repository's last element (coredns, pause, ...) and its one tag the name
// kubeadm gives it, fully qualified as containerd names it
// (docker.io/turnstile-k8s/pause:3.10.2); the bundle's kube-apiserver is ours. An image kubeadm
// names that is not one of the seven is an error, so that a release whose
// kubeadm wants another image fails instead of shipping a bundle that
// lacks it.
func AirGapImages(repository, kubernetesVersion string) ([]NodeImage, error) {
	cfg := &kubeadmapi.ClusterConfiguration{
		ImageRepository:   repository,
		KubernetesVersion: kubernetesVersion,
		Etcd:              kubeadmapi.Etcd{Local: &kubeadmapi.LocalEtcd{}},
	}
	known := map[string]bool{kubeadmconstants.KubeAPIServer: true, kubeadmconstants.KubeControllerManager: true,
		kubeadmconstants.KubeScheduler: true, kubeadmconstants.KubeProxy: true, kubeadmconstants.CoreDNSImageName: true,
		"pause": true, kubeadmconstants.Etcd: true}
	var out []NodeImage
	for _, ref := range kubeadmimages.GetControlPlaneImages(cfg) {
		// As containerd and the kubelet name it: docker.io/... for a
		// repository without a registry.
		full, err := reference.ParseDockerRef(ref)
		if err != nil {
			return nil, fmt.Errorf("kubeadm's image %q (imageRepository %q): %w", ref, repository, err)
		}
		short := path.Base(reference.Path(full))
		if !known[short] {
			return nil, fmt.Errorf("kubeadm %s names the image %s, which the air-gap bundle does not build (oci.AirGapImages)", kubernetesVersion, ref)
		}
		out = append(out, NodeImage{Name: short, Tags: []string{full.String()}})
	}
	if len(out) != len(known) {
		return nil, fmt.Errorf("kubeadm %s names %d images, the air-gap bundle builds %d: %v", kubernetesVersion, len(out), len(known), out)
	}
	return out, nil
}

// AirGapArchive is the base name of the air-gap bundle of one platform
// (make release writes BASE.oci.tar and its image list BASE.txt; build/
// nodeimages -airgap writes the images it builds as BASE.tar).
func AirGapArchive(goos, goarch string) string { return "airgap-images-" + goos + "-" + goarch }
