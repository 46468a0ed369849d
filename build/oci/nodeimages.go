package oci

import (
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	kubeadmutil "k8s.io/kubernetes/cmd/kubeadm/app/util"
)

// The images a local node needs that it would otherwise pull, by the exact
// names the kubelet, kubeadm and upstream's e2e framework use.
// build/nodeimages builds them (make node-images).
const (
	// PauseImage is the sandbox image: kubeadm's and the kubelet's default.
	PauseImage = "registry.k8s.io/pause:" + kubeadmconstants.PauseVersion
	// CoreDNSImage is the CoreDNS kubeadm deploys.
	CoreDNSImage = "registry.k8s.io/coredns/" + kubeadmconstants.CoreDNSImageName + ":" + kubeadmconstants.CoreDNSVersion
	// AgnhostImage and BusyBoxImage are upstream's e2e images, as
	// k8s.io/kubernetes/test/utils/image (manifest.go) names them:
	// configs[Agnhost] and configs[BusyBox]. That package is not imported
	// here because its init reads KUBE_TEST_REPO_LIST, possibly from the
	// network; a test compares these with it.
	AgnhostImage = "registry.k8s.io/e2e-test-images/agnhost:2.63.0"
	BusyBoxImage = "registry.k8s.io/e2e-test-images/busybox:1.37.0-1"
	// AgnhostPrevImage is configs[AgnhostPrev], which some e2e tests use;
	// the agnhost archive holds this name too.
	AgnhostPrevImage = "registry.k8s.io/e2e-test-images/agnhost:2.55"
	// BusyBoxPrevImage is the busybox of earlier releases' e2e tests; the
	// busybox archive holds this name too.
	BusyBoxPrevImage = "registry.k8s.io/e2e-test-images/busybox:1.36.1-1"
)

// NodeImage is one image of a local node, as build/nodeimages writes it.
type NodeImage struct {
	// Name is short, for messages and file names: pause, busybox, agnhost,
	// coredns.
	Name string
	// Tags holds every name the image has, the main one (PauseImage,
	// ...) first; its archive holds all of them.
	Tags []string
	// Tarball is the docker-archive's file name in the output directory
	// (make node-images: _output/images/node), for `ctr -n k8s.io images
	// import`.
	Tarball string
}

// NodeImages lists the images build/nodeimages builds, in the order it
// builds them.
func NodeImages() []NodeImage {
	return []NodeImage{
		{Name: "pause", Tags: []string{PauseImage}, Tarball: "pause.tar"},
		{Name: "busybox", Tags: []string{BusyBoxImage, BusyBoxPrevImage}, Tarball: "busybox.tar"},
		{Name: "agnhost", Tags: []string{AgnhostImage, AgnhostPrevImage}, Tarball: "agnhost.tar"},
		{Name: "coredns", Tags: []string{CoreDNSImage}, Tarball: "coredns.tar"},
	}
}

// e2eRegistry is upstream's e2e framework's registry for its test images
// (test/utils/image: list.PromoterE2eRegistry).
const e2eRegistry = "registry.k8s.io/e2e-test-images/"

// E2EImageArchive is the one docker-archive, in the output directory (make
// e2e-images: _output/images/e2e), that holds every E2EImages image: they
// share one Debian root file system, which the archive holds once.
const E2EImageArchive = "e2e.tar"

// E2EImages are the rest of the images upstream's e2e framework runs
// (`e2e.test --list-images`), by the names k8s.io/kubernetes/test/utils/image
// gives them, for running its suites against local nodes: built by
// build/nodeimages -e2e on a Debian root file system (mmdebstrap) where
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
	return []NodeImage{
		image("agnhost-debian", AgnhostImage, AgnhostPrevImage),
		image("kitten", e2eRegistry+"kitten:1.8"),
		image("nautilus", e2eRegistry+"nautilus:1.8"),
		image("nginx", e2eRegistry+"nginx:1.15-4", e2eRegistry+"nginx:1.27-0"),
		image("nonroot", e2eRegistry+"nonroot:1.5"),
		image("nonewprivs", e2eRegistry+"nonewprivs:1.4"),
		image("glibc-dns-testing", e2eRegistry+"glibc-dns-testing:2.0.0"),
		image("perl", e2eRegistry+"perl:5.26"),
		image("sample-apiserver", e2eRegistry+"sample-apiserver:1.29.2"),
		image("resource-consumer", e2eRegistry+"resource-consumer:1.14"),
		image("ipc-utils", e2eRegistry+"ipc-utils:1.4"),
		image("regression-issue-74839", e2eRegistry+"regression-issue-74839:1.4"),
		image("distroless-iptables", "registry.k8s.io/build-image/distroless-iptables:v0.9.6"),
	}
}

// ControlPlaneImages are the images `kubeadm init` runs as static pods
// next to the kube-apiserver (`make image` builds ours): upstream's
// kube-controller-manager, kube-scheduler and etcd, built from go.mod's
// tool lines, under the names kubeadm gives them for kubernetesVersion
// (for example v1.36.3), FROM scratch with the binary in /usr/local/bin as
// upstream's images hold it.
func ControlPlaneImages(kubernetesVersion string) []NodeImage {
	tag := kubeadmutil.KubernetesVersionToImageTag(kubernetesVersion)
	return []NodeImage{
		{Name: "kube-controller-manager", Tags: []string{"registry.k8s.io/kube-controller-manager:" + tag}, Tarball: "kube-controller-manager.tar"},
		{Name: "kube-scheduler", Tags: []string{"registry.k8s.io/kube-scheduler:" + tag}, Tarball: "kube-scheduler.tar"},
		{Name: "etcd", Tags: []string{"registry.k8s.io/etcd:" + kubeadmconstants.DefaultEtcdVersion}, Tarball: "etcd.tar"},
	}
}
