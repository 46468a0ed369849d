# Copyright 2026 The Turnstile Authors.
# SPDX-License-Identifier: Apache-2.0
# Turnstile: upstream kube-apiserver with every documented admission controller.
# `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

## GO: The go command that builds and tests everything.
GO  ?= go
# Go 1.27.3 builds and tests everything (the go command fetches it from the
# module proxy once, as any module). Under Go 1.26.8, this machine's, make
# vulncheck finds the standard library's fixed advisories of November 2026
# reachable in our kube-apiserver (GO-2026-6599 to GO-2026-6617 and
# GO-2026-6809: net/http's HTTP/2 server and client, crypto/tls,
# crypto/x509, html/template), whose fixes are in 1.26.9, 1.26.10 and 1.27.3;
# 1.27.3 is the one the proxy serves. go.mod stays at go 1.26.0, so the
# language version and the GODEBUG defaults are those upstream builds with.
export GOTOOLCHAIN := go1.27.3
# Static binaries, so that the image can be FROM scratch.
export CGO_ENABLED := 0
# Upstream's e2e image list (build/oci) reads this when it loads, from the
# network when it is a URL: builds and tests use the original names.
unexport KUBE_TEST_REPO_LIST
# Every build, vet and test with -trimpath, which the release needs for
# reproducible binaries: one compiled copy of each package in the build
# cache instead of a trimmed and an untrimmed one, so that a cold `make
# test` compiles Kubernetes once for amd64, not twice.
BASE_GOFLAGS := $(strip $(filter-out -trimpath,$(GOFLAGS)) -trimpath)

# The Kubernetes line to build (lines/README.md): main's, go.mod's, unless
# LINE=1.Y names an older one from lines/supported. An older line builds the
# same tree with its own go.mod files (-modfile) and build tags, into
# _output/lines/1.Y/ instead of _output/.
MAIN_LINE := $(shell hack/line.sh main)
## LINE: The Kubernetes line to build and test: main's by default, or 1.Y, an older one of lines/supported, into _output/lines/1.Y/ (lines/README.md).
LINE ?= $(MAIN_LINE)
ifeq ($(LINE),$(MAIN_LINE))
OUT := _output
LINE_GOFLAGS :=
else ifneq ($(filter bump canary test-bump,$(MAKECMDGOALS)),)
# make bump and make canary take LINE as the line to move, which need not
# be supported yet (the next minor); make test-bump as the line to rehearse.
OUT := _output
LINE_GOFLAGS :=
else
OUT := _output/lines/$(LINE)
LINE_GOFLAGS := $(shell hack/line.sh goflags $(LINE) || echo FAILED)
ifneq ($(filter FAILED,$(LINE_GOFLAGS)),)
$(error LINE=$(LINE) cannot be built (hack/line.sh said why above))
endif
endif
BIN := $(OUT)/bin
# The root module's go commands take the line's flags from GOFLAGS; those
# run in another module (-C DIR) take that module's with $(call goflags,DIR).
export GOFLAGS := $(strip $(BASE_GOFLAGS) $(LINE_GOFLAGS))
# Modules every line builds alike (kwok, containerd) take $(base_goflags).
goflags = GOFLAGS='$(strip $(BASE_GOFLAGS) $(if $(LINE_GOFLAGS),$(shell hack/line.sh goflags $(LINE) $(1))))'
base_goflags = GOFLAGS='$(BASE_GOFLAGS)'

# Upstream binaries built from go.mod's tool lines, at the pinned versions.
TOOL_etcd                    := go.etcd.io/etcd/server/v3
TOOL_kube-apiserver-upstream := k8s.io/kubernetes/cmd/kube-apiserver
TOOL_kube-controller-manager := k8s.io/kubernetes/cmd/kube-controller-manager
TOOL_kube-scheduler          := k8s.io/kubernetes/cmd/kube-scheduler
TOOL_kubeadm                 := k8s.io/kubernetes/cmd/kubeadm
TOOL_kubectl                 := k8s.io/kubernetes/cmd/kubectl
TOOL_kubelet                 := k8s.io/kubernetes/cmd/kubelet
TOOL_kube-proxy              := k8s.io/kubernetes/cmd/kube-proxy
TOOLS := etcd kube-apiserver-upstream kube-controller-manager kube-scheduler kubeadm kubectl kubelet kube-proxy
# What `make run` starts besides our kube-apiserver, and kubectl to use it.
LOCAL_TOOLS := kube-controller-manager kube-scheduler kubectl
# What the e2e tests run: etcd, vanilla kube-apiserver to compare against, kubeadm, and what `make run` runs.
E2E_TOOLS := etcd kube-apiserver-upstream kubeadm $(LOCAL_TOOLS)

# Where `make image` and `make release` say the image lives, as kubeadm's imageRepository.
## IMAGE_REPOSITORY: Where `make image` and `make release` say the images live, as kubeadm's imageRepository.
IMAGE_REPOSITORY ?= turnstile-k8s
# What `make release` builds, and where it writes. ALLOW_DIRTY=1 releases an
# uncommitted tree (not reproducible; the e2e tests do it).
## PLATFORMS: The platforms `make release` builds the kube-apiserver, its images and the air-gap bundles for.
PLATFORMS   ?= linux/amd64 linux/arm64
# What make test-e2e releases and checks: this machine's platform only.
TEST_PLATFORMS := linux/$(shell $(GO) env GOARCH)
# FIPS=1 builds the release with Go's FIPS 140-3 module (GOFIPS140=certified,
# the module version the toolchain names certified), into _output/release-fips,
# every name and the version saying fips.
## FIPS: 1: `make release` builds with Go's FIPS 140-3 module, into _output/release-fips.
FIPS        ?=
ifneq ($(filter-out 1,$(FIPS)),)
$(error FIPS=$(FIPS): want FIPS=1, or nothing)
endif
FIPS_SUFFIX := $(if $(FIPS),-fips)
# The desktops make release builds kubectl-psp for, archived with a krew
# manifest (none in a FIPS release, which is the server's).
## KUBECTL_PSP_PLATFORMS: The desktops `make release` builds kubectl-psp for, with its krew manifest (none with FIPS=1).
KUBECTL_PSP_PLATFORMS ?= $(if $(FIPS),,linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64)
## RELEASE_DIR: Where `make release` writes the release, and `make publish` reads it.
RELEASE_DIR ?= $(OUT)/release$(FIPS_SUFFIX)
## ALLOW_DIRTY: 1: `make release` releases a tree with uncommitted changes, which its commit cannot rebuild.
ALLOW_DIRTY ?=
# The cosign private key (cosign generate-key-pair; its password in
# COSIGN_PASSWORD) that make release signs SHA256SUMS with and make publish
# signs and attests the images with; none: unsigned.
## RELEASE_SIGNING_KEY: A cosign private key (its password in COSIGN_PASSWORD): `make release` signs SHA256SUMS and the air-gap lists with it, `make publish` the images; empty: unsigned.
RELEASE_SIGNING_KEY ?=
# Where make publish pushes: host[:port][/path], the image being
# $(REGISTRY)/kube-apiserver.
## REGISTRY: Where `make publish` pushes: host[:port]/path.
REGISTRY ?=
# make release's air-gap bundles (docs/release.md): for each platform, every
# image kubeadm names for the release under IMAGE_REPOSITORY, ours the
# kube-apiserver, staged in AIRGAP_DIR. AIRGAP= leaves them out (make
# test-e2e's release does: make test-release checks them); a FIPS release
# has none, its other images not being built with the FIPS module.
## AIRGAP: 1: `make release` writes an air-gap bundle per platform; empty: none.
AIRGAP ?= 1
RELEASE_AIRGAP := $(if $(FIPS),,$(AIRGAP))
AIRGAP_DIR := $(OUT)/airgap

# Extra admission plugins for `make run`, for example ADMISSION_PLUGINS=EventRateLimit,PodNodeSelector,
# and its --admission-control-config-file (empty for none).
## ADMISSION_PLUGINS: Admission plugins `make run` enables besides the default ones, comma-separated.
ADMISSION_PLUGINS ?=
## ADMISSION_CONFIG: The --admission-control-config-file of `make run`; empty for none.
ADMISSION_CONFIG ?= examples/admission/admission-config.yaml
# Extra kube-apiserver flags for `make run`, name=value separated by spaces, after
# the ones kubeadm and local-up give, for example
# APISERVER_ARGS=nodes-proxy-get-requires-create=true.
## APISERVER_ARGS: More kube-apiserver flags for `make run`, name=value separated by spaces.
APISERVER_ARGS ?=
# Real worker nodes for `make run` (root only), and the control plane's ports.
# E2E_IMAGES=1 has the nodes import the e2e framework's images too (make e2e-images).
## NODES: Real worker nodes for `make run` (root only).
NODES ?= 0
## E2E_IMAGES: 1: the nodes of `make run` import the e2e framework's images too (`make e2e-images`).
E2E_IMAGES ?=
## PORT: The kube-apiserver's port under `make run`.
PORT ?= 6443
## CONTROLLER_MANAGER_PORT: The kube-controller-manager's port under `make run`.
CONTROLLER_MANAGER_PORT ?= 10257
## SCHEDULER_PORT: The kube-scheduler's port under `make run`.
SCHEDULER_PORT ?= 10259
# `make run`'s state (kept across runs), and what resets it, as local-up's
# messages name it.
## LOCAL_DIR: The state of `make run` (certificates, etcd's data, logs), kept across runs.
LOCAL_DIR ?= $(OUT)/local
CLEAN_LOCAL := \`make clean-local$(if $(filter-out $(MAIN_LINE),$(LINE)), LINE=$(LINE))$(if $(filter-out $(OUT)/local,$(LOCAL_DIR)), LOCAL_DIR=$(LOCAL_DIR))\`
# What the nodes run besides Debian's containerd, runc and CNI plugins.
NODE_TOOLS := kubelet kube-proxy
# A preview of the next minor (lines/preview) runs its nodes on main's
# kubelet and kube-proxy, which upstream's version skew policy allows (a
# kubelet up to three minors older than the apiserver): the module proxy
# serves a pre-release's control plane before all its kubelet imports. Its
# images (CoreDNS as its kubeadm deploys it) are its own.
PREVIEW := $(filter $(LINE),$(shell hack/line.sh preview))
RUN_NODE_BIN := $(if $(PREVIEW),_output/bin,$(BIN))
comma := ,
space := $(subst ,, )

.PHONY: help build tools image release publish bench bench-scale test-cost bump canary test-line test-preview run node-deps control-plane-images e2e-images clean-local conformance conformance-check conformance-image test test-conformance test-certify test-ha-page test-unit test-e2e test-release test-ha test-ha-kubeadm test-node test-upgrade test-e2e-images test-mutation verify clean FORCE

# A help text names a line's Kubernetes release as <main> (main's line) or
# <upgrade-from> (UPGRADE_FROM's), which help fills in from hack/line.sh.
# The variables a user may set are each under a "## NAME: what it is" line,
# which help prints after the targets (docs/reference/make.md has both).
help: ## List the targets and the variables a user may set.
	@awk 'BEGIN { FS = ":.*## " } /^[a-z0-9-]+:.*## / { printf "  %-14s %s\n", $$1, $$2 }' $(MAKEFILE_LIST) | \
		sed "s/<main>/$$(hack/line.sh version $(MAIN_LINE))/g; s/<upgrade-from>/$(if $(UPGRADE_FROM),$$(hack/line.sh version $(UPGRADE_FROM)),none)/g"
	@echo; echo "Variables (make TARGET NAME=value):"
	@sed -n 's/^## \([A-Z][A-Z0-9_]*\): \(.*\)$$/  \1\t\2/p' $(MAKEFILE_LIST) | expand -t 26

build: $(BIN)/kube-apiserver $(BIN)/kubectl-psp ## Build our kube-apiserver and the kubectl psp plugin (kubectl-psp) into _output/bin.

tools: $(addprefix $(BIN)/,$(TOOLS)) ## Build etcd, vanilla kube-apiserver, kubectl, kubeadm, controller-manager, scheduler.

image: build $(BIN)/image ## Image tarball of our kube-apiserver for this machine in _output/images, built without Docker.
	$(BIN)/image -binary $(BIN)/kube-apiserver -ldflags "$$(hack/ldflags.sh turnstile)" -out $(OUT)/images -repository $(IMAGE_REPOSITORY)

# make release also releases every older line, into _output/lines/1.Y/release
# (RELEASE_DIR=D: D/lines/1.Y); RELEASE_LINES= releases main's alone.
## RELEASE_LINES: The older lines `make release` releases too, each into _output/lines/1.Y/release; empty: main's alone.
RELEASE_LINES ?= $(OLDER_LINES)
release: $(BIN)/release $(if $(RELEASE_SIGNING_KEY),$(BIN)/cosign) $(if $(RELEASE_AIRGAP),airgap-images) ## Static kube-apiserver for linux/amd64 and arm64, a multi-arch image, SBOMs, kubectl-psp for six desktops with its krew manifest, notes, SHA256SUMS in _output/release (and each older line's in _output/lines/1.Y/release); FIPS=1: built with Go's FIPS 140-3 module, in _output/release-fips.
	if [[ -z "$(ALLOW_DIRTY)" && -n "$$(git status --porcelain --untracked-files=no)" ]]; then \
		echo "release: the tree has uncommitted changes; commit them so that the release can be rebuilt from its commit (or ALLOW_DIRTY=1)" >&2; exit 1; fi
	rm -rf $(RELEASE_DIR) && mkdir -p $(RELEASE_DIR)
	ldflags="$$($(if $(FIPS),GOFIPS140=certified) hack/ldflags.sh turnstile)"; \
	psp=$$(mktemp -d) && trap 'rm -rf "$$psp"' EXIT; \
	for p in $(PLATFORMS); do \
		echo "release: building kube-apiserver$(FIPS_SUFFIX) for $$p" >&2; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(if $(FIPS),GOFIPS140=certified) $(GO) build -trimpath -ldflags "$$ldflags" \
			-o $(RELEASE_DIR)/kube-apiserver$(FIPS_SUFFIX)-$${p%/*}-$${p#*/} ./cmd/kube-apiserver; \
	done; \
	for p in $(KUBECTL_PSP_PLATFORMS); do \
		echo "release: building kubectl-psp for $$p" >&2; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -trimpath -ldflags "$$ldflags" -o "$$psp/kubectl-psp-$${p%/*}-$${p#*/}" ./cmd/kubectl-psp; \
	done; \
	$(BIN)/release -dir $(RELEASE_DIR) -platforms "$(subst $(space),$(comma),$(strip $(PLATFORMS)))" -ldflags "$$ldflags" \
		-kubectl-psp-dir "$$psp" -kubectl-psp-platforms "$(subst $(space),$(comma),$(strip $(KUBECTL_PSP_PLATFORMS)))" \
		-repository $(IMAGE_REPOSITORY) $(if $(ALLOW_DIRTY),-allow-dirty) $(if $(FIPS),-fips) \
		$(if $(RELEASE_AIRGAP),-airgap $(AIRGAP_DIR))
	# SHA256SUMS, and each air-gap bundle's image list for whoever carries a
	# bundle alone, signed as Sigstore bundles beside them.
	$(if $(RELEASE_SIGNING_KEY),for f in $(RELEASE_DIR)/SHA256SUMS $(if $(RELEASE_AIRGAP),$(RELEASE_DIR)/airgap-images-*.txt); do \
		$(BIN)/cosign sign-blob --key $(RELEASE_SIGNING_KEY) --tlog-upload=false --use-signing-config=false --yes --bundle $$f.sigstore.json $$f || exit 1; done)
	$(if $(LINE_GOFLAGS),,@for l in $(RELEASE_LINES); do \
		$(MAKE) --no-print-directory release LINE=$$l KUBECTL_PSP_PLATFORMS= RELEASE_DIR=$(if $(filter command line,$(origin RELEASE_DIR)),$(RELEASE_DIR)/lines/$$l,_output/lines/$$l/release$(FIPS_SUFFIX)) || exit 1; done)

# The air-gap bundles' images (AIRGAP, above): the six besides ours are
# built here as make tools and make node-images build them, cross-compiled
# (pause with Debian's cross gcc), into AIRGAP_DIR/<os>-<arch>, and made
# images by cmd/nodeimages -airgap; cmd/release adds ours and writes
# each bundle.
AIRGAP_BINARIES := kube-controller-manager kube-scheduler kube-proxy etcd coredns pause
.PHONY: airgap-images
airgap-images: $(BIN)/nodeimages
	hack/install-package.sh mmdebstrap mmdebstrap
	for p in $(PLATFORMS); do \
		dir=$(AIRGAP_DIR)/$${p%/*}-$${p#*/}; \
		echo "release: building kubeadm's images for $$p (air-gap bundle)" >&2; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(MAKE) --no-print-directory BIN=$$dir $(addprefix $$dir/,$(AIRGAP_BINARIES)) || exit 1; \
		$(BIN)/nodeimages -airgap $$p -bin $$dir -out $(AIRGAP_DIR) -repository $(IMAGE_REPOSITORY) \
			-kubernetes-version $$(hack/line.sh version $(LINE)) || exit 1; \
	done

publish: $(BIN)/publish $(if $(RELEASE_SIGNING_KEY),$(BIN)/cosign) ## REGISTRY=host:port/path: push make release's image index and platform images, and every image of its air-gap bundles under kubeadm's names, by digest, and print the digests; RELEASE_SIGNING_KEY=cosign.key: sign them all and attest each platform's SLSA provenance and SPDX SBOM, offline.
	@if [[ -z "$(REGISTRY)" ]]; then echo "publish: REGISTRY is empty: make publish REGISTRY=host:port/path" >&2; exit 1; fi
	$(BIN)/publish -dir $(RELEASE_DIR) -registry $(REGISTRY) -cosign $(BIN)/cosign $(if $(RELEASE_SIGNING_KEY),-key $(RELEASE_SIGNING_KEY))

## BENCH_FLAGS: More flags for `make bench`'s program (-only, -pairs, -attribute).
BENCH_FLAGS ?=
bench: build $(BIN)/etcd $(BIN)/kube-apiserver-upstream $(BIN)/bench ## Turnstile vs vanilla upstream under load: counts, times and what differs, plus microbenchmarks; BENCH_FLAGS= adds bench's flags (-only, -pairs, -attribute); JSON and profiles in _output/bench.
	mkdir -p $(OUT)/bench
	$(GO) test -run '^$$' -bench . -benchmem -count 1 $$($(GO) list ./pkg/... ./plugin/...) | grep -E '^(Benchmark|goos|cpu|pkg)' > $(OUT)/bench/micro.txt
	TURNSTILE_BIN_DIR=$(CURDIR)/$(BIN) $(BIN)/bench -out $(OUT)/bench -micro $(OUT)/bench/micro.txt $(BENCH_FLAGS)

# >>> bench-scale: the cost against cluster size, on kwok's fake nodes
# (cmd/bench/internal/scale; docs/performance.md). kwok and the plot come from
# test/scale's module, so neither joins the apiserver's module graph. kwok's
# stages (node initialize and heartbeat, pod ready, complete and delete) are
# read from its module, not copied into ours, with one change: pod-ready's
# podIPs list gets strategic merge's `$patch: replace`. kwok v0.8.0 plays
# pod-ready a second time for about a third of the pods, from the pod as it
# saw it before its first patch, and draws a new IP each time; merged, the
# new IP joined the first and the apiserver refused the patch (one IP per
# family): harmless to the pod, which was ready already, but thousands of
# refusals a run that hid what did stall a step. With replace the replay
# is a valid write and the pod keeps the last IP drawn.
## SCALE_STEPS: The steps of `make bench-scale`, comma-separated, each NODES/PODS/POLICIES/RULES.
SCALE_STEPS ?= 100/3000/1/1,1000/10000/100/100,5000/30000/1000/1000
## SCALE_FLAGS: More flags for `make bench-scale`'s program.
SCALE_FLAGS ?=
KWOK_STAGES := node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete

bench-scale: build $(addprefix $(BIN)/,etcd kube-apiserver-upstream kube-controller-manager kube-scheduler bench kwok kwok-stages.yaml plot) ## Cost against cluster size on kwok's fake nodes: Turnstile all-documented, upstream-same, upstream; SCALE_STEPS=, SCALE_FLAGS=; table, JSON and PNG in _output/bench-scale.
	TURNSTILE_BIN_DIR=$(CURDIR)/$(BIN) $(BIN)/bench -scale "$(SCALE_STEPS)" -out $(OUT)/bench-scale $(SCALE_FLAGS)
	$(BIN)/plot -in $(OUT)/bench-scale/plot.json -out $(OUT)/bench-scale/scale.png

# make bench-psp: PodSecurityPolicy at the scale of a large multi-tenant
# cluster, ours side by side with v1.24.17's own plugin and RBAC authorizer
# (test/psp124, a module of its own), in one run, as ratios.
## PSP_BENCHTIME: go test's -benchtime for each case of `make bench-psp`.
PSP_BENCHTIME ?= 1s
## PSP_ROUNDS: How many rounds `make bench-psp` runs; in each, each side runs every case twice, in turn.
PSP_ROUNDS ?= 2
bench-psp: ## PodSecurityPolicy against v1.24.17's own plugin: 1 to 1,000 policies among 100 or 10,000 bindings, three requesters, the same decisions checked; time, allocations and authorizer calls per pod create as ratios; PSP_BENCHTIME=, PSP_ROUNDS=; table in _output/bench-psp.
	$(base_goflags) $(GO) run ./test/pspscale/bench -out $(OUT)/bench-psp -benchtime $(PSP_BENCHTIME) -rounds $(PSP_ROUNDS)

$(BIN)/kwok: FORCE
	$(base_goflags) $(GO) build -C test/scale -trimpath -o $(CURDIR)/$@ sigs.k8s.io/kwok/cmd/kwok

$(BIN)/plot: FORCE
	$(base_goflags) $(GO) build -C test/scale -trimpath -o $(CURDIR)/$@ ./plot

$(BIN)/kwok-stages.yaml: test/scale/go.mod
	mkdir -p $(BIN)
	dir=$$(cd test/scale && export $(base_goflags) && GO=$(GO) ../../hack/module-dir.sh sigs.k8s.io/kwok) && \
	for stage in $(KWOK_STAGES); do echo '---'; cat "$$dir/kustomize/stage/$$stage.yaml"; done | \
		sed 's/^\( *\)podIPs:$$/&\n\1- $$patch: replace/' > $@.tmp
	@test "$$(grep -c -- '- $$patch: replace' $@.tmp)" = 1 || \
		{ echo "$@: kwok's pod-ready stage no longer has the podIPs list this rule changes; look at $(KWOK_STAGES)" >&2; exit 1; }
	mv $@.tmp $@
# <<< bench-scale

run: build $(addprefix $(BIN)/,$(LOCAL_TOOLS)) $(BIN)/local-up $(if $(filter-out 0,$(NODES)),node-deps) $(if $(E2E_IMAGES),e2e-images) ## Local control plane on embedded etcd, NODES=n real nodes (root; E2E_IMAGES=1: with the e2e framework's images), ADMISSION_CONFIG= its admission configuration, APISERVER_ARGS='name=value ...' more kube-apiserver flags; state in _output/local.
	$(BIN)/local-up -dir $(LOCAL_DIR) -bin $(BIN) -node-bin $(RUN_NODE_BIN) -images $(NODE_IMAGES_DIR) -admission-plugins "$(ADMISSION_PLUGINS)" -admission-config "$(ADMISSION_CONFIG)" -nodes $(NODES) -clean-command "$(CLEAN_LOCAL)" \
		-port $(PORT) -controller-manager-port $(CONTROLLER_MANAGER_PORT) -scheduler-port $(SCHEDULER_PORT) \
		$(foreach a,$(APISERVER_ARGS),-apiserver-arg '$(a)') $(if $(E2E_IMAGES),-e2e-images $(E2E_IMAGES_DIR)/e2e.tar)

# What real nodes need: Debian's containerd, runc, CNI plugins, iptables
# (kube-proxy) and nftables (the guard), the kubelet and kube-proxy, images.
node-deps: $(if $(PREVIEW),main-node-tools,$(addprefix $(BIN)/,$(NODE_TOOLS))) node-images node-packages

# A preview's kubelet and kube-proxy: main's (PREVIEW above).
.PHONY: main-node-tools
main-node-tools:
	GOFLAGS='$(BASE_GOFLAGS)' $(MAKE) --no-print-directory LINE=$(MAIN_LINE) $(addprefix _output/bin/,$(NODE_TOOLS))

# The host's side of a node: Debian's containerd, runc, CNI plugins, iptables and nft.
.PHONY: node-packages
node-packages:
	hack/install-package.sh containerd containerd
	hack/install-package.sh runc runc
	hack/install-package.sh /usr/lib/cni/bridge containernetworking-plugins
	hack/install-package.sh iptables iptables
	hack/install-package.sh nft nftables

clean-local: $(BIN)/local-up ## Remove the state of `make run` (PKI, etcd data, logs, the nodes' state), and a killed run's leftovers.
	$(BIN)/local-up -dir $(LOCAL_DIR) -clean

# Go decides what is stale, so these always run and are cheap when nothing changed.
$(BIN)/kube-apiserver: FORCE
	$(GO) build -trimpath -ldflags "$$(hack/ldflags.sh turnstile)" -o $@ ./cmd/kube-apiserver

# The cost guard's planted regression (test/kube-apiserver-planted): never shipped.
$(BIN)/kube-apiserver-planted: FORCE
	$(GO) build -trimpath -ldflags "$$(hack/ldflags.sh turnstile)" -o $@ ./test/kube-apiserver-planted

$(BIN)/kubectl-psp: FORCE
	$(GO) build -trimpath -ldflags "$$(hack/ldflags.sh turnstile)" -o $@ ./cmd/kubectl-psp

$(addprefix $(BIN)/,local-up bench conformance image release nodeimages): FORCE
	$(GO) build -trimpath -o $@ ./cmd/$(notdir $@)

$(addprefix $(BIN)/,$(TOOLS)): FORCE
	$(GO) build -trimpath -ldflags "$$(hack/ldflags.sh upstream)" -o $@ $(TOOL_$(notdir $@))

# >>> node images: what a local node runs instead of pulling.
# `make node-images` writes pause, busybox, agnhost and CoreDNS as docker
# archives holding the exact names the kubelet and the e2e framework use
# (build/oci.NodeImages), built offline: Go modules, Debian packages and the
# k8s.io/kubernetes module's own files. CoreDNS and agnhost are built from
# modules of their own (build/coredns, test/images), so that their
# dependency graphs stay out of go.mod.
NODE_IMAGES_DIR := $(OUT)/images/node
KUBERNETES_DIR   = $$(GO=$(GO) hack/module-dir.sh k8s.io/kubernetes)

.PHONY: node-images
node-images: $(BIN)/pause $(BIN)/agnhost $(BIN)/coredns $(BIN)/busybox-sh $(BIN)/nodeimages ## Images a local node needs (pause, busybox, agnhost, CoreDNS) as docker archives in _output/images/node.
	hack/install-package.sh mmdebstrap mmdebstrap
	hack/install-package.sh /bin/bash-static bash-static
	$(BIN)/nodeimages -out $(NODE_IMAGES_DIR) -bin $(BIN) -kubernetes "$(KUBERNETES_DIR)"

# The rest of the images upstream's e2e framework runs, in one archive
# (build/oci.E2EImages), on a Debian root file system that mmdebstrap makes
# from Debian's packages (kept, and made again only when its package list
# changes), with their Go binaries from test/images/go.mod's tool lines.
E2E_IMAGES_DIR := $(OUT)/images/e2e
E2E_IMAGE_BINARIES := nnp sample-apiserver resource-consumer consume-cpu regression-issue-74839
IMAGE_TOOL_nnp                    := k8s.io/kubernetes/test/images/nonewprivs
IMAGE_TOOL_sample-apiserver       := k8s.io/sample-apiserver
IMAGE_TOOL_resource-consumer      := k8s.io/kubernetes/test/images/resource-consumer
IMAGE_TOOL_consume-cpu            := k8s.io/kubernetes/test/images/resource-consumer/consume-cpu
IMAGE_TOOL_regression-issue-74839 := k8s.io/kubernetes/test/images/regression-issue-74839

.PHONY: e2e-images
e2e-images: node-images control-plane-images $(addprefix $(BIN)/,$(E2E_IMAGE_BINARIES)) ## The rest of the e2e framework's images (nginx, kitten, nonroot, ...: a Debian root file system) in _output/images/e2e; needs root.
	hack/install-package.sh mmdebstrap mmdebstrap
	$(BIN)/nodeimages -e2e -out $(E2E_IMAGES_DIR) -bin $(BIN) -kubernetes "$(KUBERNETES_DIR)"

$(addprefix $(BIN)/,$(E2E_IMAGE_BINARIES)): FORCE
	$(call goflags,test/images) $(GO) build -C test/images -trimpath -ldflags "-s -w" -o $(CURDIR)/$@ $(IMAGE_TOOL_$(notdir $@))

# The busybox image's /bin/sh; static, as the image has no libc.
$(BIN)/busybox-sh: FORCE
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $@ ./build/busybox-sh

# Upstream's pause, as build/pause/Makefile builds it, at kubeadm's PauseVersion.
# gcc always runs (a second); the binary is only replaced when it changed.
# GOARCH other than this machine's (make airgap-images) builds with Debian's
# cross gcc for it.
$(BIN)/pause: FORCE
	host=$$($(GO) env GOHOSTARCH); arch=$${GOARCH:-$$host}; cc=gcc strip=strip; \
	if [[ $$arch == "$$host" ]]; then \
		hack/install-package.sh gcc gcc && hack/install-package.sh "/usr/lib/$$(gcc -print-multiarch)/libc.a" libc6-dev; \
	else \
		case $$arch in amd64) triplet=x86_64-linux-gnu pkg=x86-64-linux-gnu deb=amd64;; arm64) triplet=aarch64-linux-gnu pkg=$$triplet deb=arm64;; \
			*) echo "pause: no cross compiler for GOARCH=$$arch" >&2; exit 1;; esac; \
		cc=$$triplet-gcc strip=$$triplet-strip; \
		hack/install-package.sh "$$cc" "gcc-$$pkg" && hack/install-package.sh "/usr/$$triplet/lib/libc.a" "libc6-dev-$$deb-cross"; \
	fi; \
	kube="$(KUBERNETES_DIR)" || exit 1; \
	version=$$(sed -n 's/^\tPauseVersion = "\(.*\)"$$/\1/p' "$$kube/cmd/kubeadm/app/constants/constants.go"); \
	[[ -n $$version ]] || { echo "pause: no PauseVersion in $$kube/cmd/kubeadm/app/constants/constants.go" >&2; exit 1; }; \
	mkdir -p $(BIN); \
	$$cc -Os -Wall -Werror -static -DVERSION="$$version" -o $@.tmp "$$kube/build/pause/linux/pause.c"; \
	$$strip $@.tmp; \
	if cmp -s $@.tmp $@; then rm $@.tmp; else mv $@.tmp $@; fi

# As test/images/image-util.sh and agnhost's Makefile build it, stamped with its VERSION file.
$(BIN)/agnhost: FORCE
	version=$$(cat "$(KUBERNETES_DIR)/test/images/agnhost/VERSION") || exit 1; \
	$(call goflags,test/images) $(GO) build -C test/images -trimpath -ldflags "-w -X 'main.Version=$$version'" -o $(CURDIR)/$@ k8s.io/kubernetes/test/images/agnhost

# As CoreDNS's Makefile builds it, stamped with the release's commit, which
# the module proxy records, with the plugins build/coredns/main.go lists; at
# the version kubeadm deploys, or it says which to pin.
$(BIN)/coredns: FORCE
	want=$$(sed -n 's/^\tCoreDNSVersion = "\(.*\)"$$/\1/p' "$(KUBERNETES_DIR)/cmd/kubeadm/app/constants/constants.go"); \
	have=$$(cd build/coredns && $(call goflags,build/coredns) $(GO) list -m -f '{{.Version}}' github.com/coredns/coredns); \
	[[ -n $$want && $$want == "$$have" ]] || { echo "coredns: line $(LINE)'s build/coredns/go.mod has CoreDNS $$have, kubeadm deploys '$$want' (make bump moves it)" >&2; exit 1; }; \
	commit=$$(cd build/coredns && $(base_goflags) $(GO) mod download -json "github.com/coredns/coredns@$$have" | sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]*\)",*$$/\1/p'); \
	$(call goflags,build/coredns) $(GO) build -C build/coredns -trimpath -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$${commit:0:7}" -o $(CURDIR)/$@ .
# <<< node images

# >>> vulncheck: govulncheck (golang.org/x/vuln, test/vulncheck's tool line)
# over the kube-apiserver we ship, with its reachability analysis, reading
# the project's own database (test/vulncheck/vulndb, OSV in the Go
# database's layout): the machines that build and test cannot reach
# vuln.go.dev. The binary is linked again with its symbol table (the shipped
# one is stripped, and govulncheck then sees only modules and packages, not
# which functions it holds). test/vulncheck/gate fails on a vulnerable
# function the binary holds in a module older than the advisory's fix, and
# lists those no version fixes. make vulndb-update writes the database from
# golang.org/x/vulndb at VULNDB_VERSION, which the module proxy serves;
# VULNDB=https://vuln.go.dev reads the public one instead.
VULNDB_VERSION := v0.0.0-20261105234957-e22db6528018
## VULNDB: The vulnerability database `make vulncheck` reads: the project's own, or https://vuln.go.dev.
VULNDB ?= file://$(CURDIR)/test/vulncheck/vulndb
# Main's line's modules (lines/modules) and the tools' own.
VULNDB_MODULES = $(shell hack/line.sh modules $(MAIN_LINE) | cut -d' ' -f1) test/hydrophone test/vulncheck build/containerd
.PHONY: vulncheck vulndb-update
vulncheck: $(BIN)/govulncheck ## govulncheck over the kube-apiserver we ship (LINE=1.Y: the line's), after its test that a planted vulnerable module fails; VULNDB=https://vuln.go.dev for the public database.
	TURNSTILE_GOVULNCHECK=$(CURDIR)/$(BIN)/govulncheck TURNSTILE_VULNDB="$(VULNDB)" $(base_goflags) $(GO) test -C test/vulncheck -count=1 ./...
	$(GO) build -trimpath -ldflags "$$(hack/ldflags.sh turnstile | sed 's/^-s -w //')" -o $(OUT)/vulncheck/kube-apiserver ./cmd/kube-apiserver
	$(base_goflags) $(GO) run -C test/vulncheck ./gate -govulncheck $(CURDIR)/$(BIN)/govulncheck -db "$(VULNDB)" $(CURDIR)/$(OUT)/vulncheck/kube-apiserver

$(BIN)/govulncheck: FORCE
	$(base_goflags) $(GO) build -C test/vulncheck -trimpath -o $(CURDIR)/$@ golang.org/x/vuln/cmd/govulncheck

vulndb-update: ## Write test/vulncheck/vulndb from golang.org/x/vulndb at VULNDB_VERSION: the advisories of every module a go.mod of ours (every line's) builds with.
	set -euo pipefail; export $(base_goflags); modules=$$(mktemp); trap 'rm -f "$$modules"' EXIT; \
	for mod in $(VULNDB_MODULES); do $(GO) list -C $$mod -m -f '{{.Path}}' all >> "$$modules"; done; \
	for line in $$(hack/line.sh list); do [[ $$line == $(MAIN_LINE) ]] && continue; \
		for mod in $$(hack/line.sh modules $$line | cut -d' ' -f1); do \
			GOFLAGS="$$(hack/line.sh goflags $$line $$mod)" $(GO) list -C $$mod -m -f '{{.Path}}' all >> "$$modules"; done; done; \
	info=$$($(GO) mod download -json golang.org/x/vulndb@$(VULNDB_VERSION)); \
	dir=$$(echo "$$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	when=$$($(GO) list -m -json golang.org/x/vulndb@$(VULNDB_VERSION) | sed -n 's/^[[:space:]]*"Time": "\(.*\)",$$/\1/p'); \
	$(GO) run -C test/vulncheck ./update -vulndb "$$dir" -modules "$$modules" -modified "$$when" -out $(CURDIR)/test/vulncheck/vulndb
# <<< vulncheck

# >>> fuzz: every fuzzer where input is hostile, FUZZTIME each (5m by
# default), one after another, with the corpus each grows kept under
# test/fuzz/<package>/<Fuzzer> (go test's own cache would lose it), where
# the next run starts from. A finding fails the run, and go test writes the
# failing input under the package's testdata/fuzz, where go test then
# replays it as a test case.
## FUZZTIME: How long `make fuzz` runs each fuzzer.
FUZZTIME ?= 5m
FUZZERS := \
	./pkg/admission/configfile:FuzzValidate \
	./pkg/admission/reload:FuzzReload \
	./plugin/pkg/admission/storage/persistentvolumelabel:FuzzLoad \
	./pkg/apis/policy:FuzzPodSecurityPolicyDecode \
	./plugin/pkg/admission/security/podsecuritypolicy:FuzzAdmission
.PHONY: fuzz
fuzz: ## Every fuzzer (the admission configuration loader and reload, PersistentVolumeLabel's rules, the PSP API's decoding and validation, PSP admission's invariants) for FUZZTIME each (5m); corpus in test/fuzz.
	for f in $(FUZZERS); do pkg=$${f%%:*}; name=$${f##*:}; \
		echo "fuzz: $$name in $$pkg for $(FUZZTIME)" >&2; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) "$$pkg" -args -test.fuzzcachedir=$(CURDIR)/test/fuzz/$${pkg#./} || exit 1; done
# <<< fuzz

# >>> conformance: upstream's [Conformance] specs against a local cluster of
# two real nodes (cmd/conformance; docs/conformance.md). e2e.test and ginkgo
# are upstream's, built from test/conformance's module, stamped as upstream.
## PROFILE: The admission profile `make conformance` runs the specs on (cmd/conformance).
PROFILE ?= all-compatible
## FOCUS: A regular expression: `make conformance` runs only the specs it matches.
FOCUS   ?=
## SKIP: A regular expression: `make conformance` leaves out the specs it matches.
SKIP    ?=
# FOCUS and SKIP reach the runner through its environment, unexpanded: a
# spec name may hold any character (`exec "cat /tmp/health"`, a `$` in a
# regular expression), and neither make nor the shell may read it.
export CONFORMANCE_FOCUS := $(value FOCUS)
export CONFORMANCE_SKIP := $(value SKIP)
## PROCS: How many specs `make conformance` runs at once.
PROCS   ?= 8
CONFORMANCE_TOOLS := $(LOCAL_TOOLS) kube-apiserver-upstream etcd
# The line's binaries, images and reports (LINE=1.Y: under _output/lines/1.Y).
CONFORMANCE_PATHS = -bin $(BIN) -images $(NODE_IMAGES_DIR) -e2e-images $(E2E_IMAGES_DIR)/e2e.tar -containerd $(CONTAINERD_DIR) -out $(OUT)/conformance
# RUNNER=hydrophone runs the suite the way certification does: hydrophone
# (test/hydrophone's module) starts upstream's conformance image, built here
# (make conformance-image), in the cluster.
## RUNNER: Who runs `make conformance`'s specs: ours, or hydrophone, as certification does.
RUNNER ?= ours
CONFORMANCE_RUNNER_DEPS = $(if $(filter hydrophone,$(RUNNER)),conformance-image $(BIN)/hydrophone)

conformance: build $(addprefix $(BIN)/,$(CONFORMANCE_TOOLS) e2e.test ginkgo local-up conformance) node-deps e2e-images containerd $(CONFORMANCE_RUNNER_DEPS) ## Upstream's conformance suite, as root: PROFILE=all-compatible|default|upstream|impact-<plugin>, FOCUS=, SKIP=, RUNNER=ours|hydrophone; reports in _output/conformance/<profile>.
	$(BIN)/conformance -runner "$(RUNNER)" -profile "$(PROFILE)" -focus "$$CONFORMANCE_FOCUS" -skip "$$CONFORMANCE_SKIP" -procs $(PROCS) $(CONFORMANCE_PATHS) \
		-conformance-image $(E2E_IMAGES_DIR)/conformance.tar \
		-reproduce "sudo make conformance PROFILE=$(PROFILE)$(if $(filter-out ours,$(RUNNER)), RUNNER=$(RUNNER))$(if $(filter-out $(MAIN_LINE),$(LINE)), LINE=$(LINE))  # at $$(git rev-parse --short HEAD)"

conformance-image: e2e-images $(addprefix $(BIN)/,e2e.test ginkgo kubectl go-runner nodeimages) ## Upstream's conformance image (registry.k8s.io/conformance:<version>: go-runner, ginkgo, e2e.test, kubectl) in _output/images/e2e; needs root.
	$(BIN)/nodeimages -conformance -out $(E2E_IMAGES_DIR) -bin $(BIN) -kubernetes "$(KUBERNETES_DIR)" -kubernetes-version "$$(hack/line.sh version $(LINE))"

$(BIN)/go-runner: FORCE
	$(call goflags,test/conformance) $(GO) build -C test/conformance -trimpath -o $(CURDIR)/$@ k8s.io/kubernetes/test/conformance/image/go-runner

# cosign and the publish command (cmd/publish's module: cosign's graph
# stays out of the apiserver's), which sign and push a release; and the
# CNCF distribution registry (test/registry's), which make test-release
# publishes to on loopback.
$(BIN)/cosign: FORCE
	$(base_goflags) $(GO) build -C cmd/publish -trimpath -o $(CURDIR)/$@ github.com/sigstore/cosign/v3/cmd/cosign
$(BIN)/publish: FORCE
	$(base_goflags) $(GO) build -C cmd/publish -trimpath -o $(CURDIR)/$@ .
$(BIN)/registry: FORCE
	$(base_goflags) $(GO) build -C test/registry -trimpath -o $(CURDIR)/$@ github.com/distribution/distribution/v3/cmd/registry

# krew (test/krew's module), which make test-release installs kubectl-psp with.
$(BIN)/krew: FORCE
	$(base_goflags) $(GO) build -C test/krew -trimpath -o $(CURDIR)/$@ sigs.k8s.io/krew/cmd/krew

$(BIN)/hydrophone: FORCE
	$(base_goflags) $(GO) build -C test/hydrophone -trimpath -o $(CURDIR)/$@ sigs.k8s.io/hydrophone

conformance-check: $(BIN)/conformance ## DIR=v1.Y/<product>: the CNCF bot's checks on a conformance submission folder.
	@[[ -n "$(DIR)" ]] || { echo "conformance-check: DIR=<folder v1.Y/product> is required" >&2; exit 2; }
	$(BIN)/conformance check -current "$$(hack/line.sh version $(MAIN_LINE))" \
		-conformance-yaml "$(KUBERNETES_DIR)/test/conformance/testdata/conformance.yaml" "$(DIR)"

# docs/tasks/certify.md, every block as written: the page's
# `sudo make conformance RUNNER=hydrophone` is the whole suite.
test-certify: ## docs/tasks/certify.md run as written, as root: the whole conformance suite by hydrophone, the submission's contact address, make conformance-check, the page's undo (TestTaskCertify).
	if [[ $$(id -u) -ne 0 ]]; then echo "test-certify: needs root: its conformance run's nodes create network namespaces, a bridge, cgroups and mounts" >&2; exit 1; fi
	TURNSTILE_CERTIFY=1 $(GO) test -count=1 -timeout 100m -v -run '^TestTaskCertify$$' -ldflags "$$(hack/ldflags.sh upstream)" ./test/e2e/

# make test's tier: the specs cmd/conformance/ci-specs.txt names, on
# all-compatible, with the node images only; parallel specs only.
test-conformance: build $(addprefix $(BIN)/,$(CONFORMANCE_TOOLS) e2e.test ginkgo local-up conformance) node-deps ## make test's conformance tier, as root: the specs cmd/conformance/ci-specs.txt names, on all-compatible.
	$(BIN)/conformance -profile all-compatible -specs cmd/conformance/ci-specs.txt -bin $(BIN) -images $(NODE_IMAGES_DIR) -e2e-images "" -containerd "" -passes parallel -out $(OUT)/conformance/ci
	$(call tier_done,test-conformance)

$(BIN)/e2e.test: FORCE
	$(call goflags,test/conformance) $(GO) test -C test/conformance -c -trimpath -ldflags "$$(hack/ldflags.sh upstream)" -o $(CURDIR)/$@ k8s.io/kubernetes/test/e2e

$(BIN)/ginkgo: FORCE
	$(call goflags,test/conformance) $(GO) build -C test/conformance -trimpath -o $(CURDIR)/$@ github.com/onsi/ginkgo/v2/ginkgo

# containerd 2.x for the conformance nodes (image volumes need 2.1 or
# later), from build/containerd's module, static as containerd's releases
# (CGO_ENABLED=0 leaves out the btrfs snapshotter; devmapper is left out
# too), stamped with its version (the module proxy records no commit for it).
CONTAINERD_DIR := $(BIN)/containerd-2
.PHONY: containerd
containerd: ## containerd 2.x (containerd, its runc shim, ctr) for the nodes of make conformance, in _output/bin/containerd-2.
	version=$$(cd build/containerd && $(base_goflags) $(GO) list -m -f '{{.Version}}' github.com/containerd/containerd/v2); \
	for cmd in containerd containerd-shim-runc-v2 ctr; do \
		CGO_ENABLED=0 $(base_goflags) $(GO) build -C build/containerd -trimpath -tags no_btrfs,no_devmapper \
			-ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$$version" \
			-o $(CURDIR)/$(CONTAINERD_DIR)/$$cmd github.com/containerd/containerd/v2/cmd/$$cmd || exit 1; \
	done
# <<< conformance

# Every binary make test's tiers go build, which hack/test.sh links first,
# two at a time: a tier builds its binaries one after another, and a link
# keeps one core busy. Only go build's: a recipe that may install Debian's
# packages (pause, the node images) stays in its tier, since two apt runs
# cannot share dpkg's lock.
TEST_BINARIES := $(sort kube-apiserver kubectl-psp $(DOC_BINARIES) kube-apiserver-planted $(TOOLS) e2e.test ginkgo agnhost coredns busybox-sh govulncheck)
.PHONY: test-binaries
test-binaries: $(addprefix $(BIN)/,$(TEST_BINARIES)) ## Every binary make test's tiers build, linked two at a time (make test runs it first).
	$(call tier_done,test-binaries)

test: ## Verify, then unit, e2e, every older line's tier, short HA, real-node and conformance-tier tests (the last three as root only, the lines' tier then beside the real nodes), and how long each took. CI runs this.
	MAKE="$(MAKE)" hack/test.sh

# make test's tiers note when each ended in TIER_LOG (hack/test.sh makes
# the table from it).
## TIER_LOG: A file where each tier of `make test` writes when it ended (hack/test.sh sets it).
TIER_LOG ?=
tier_done = $(if $(TIER_LOG),@echo "$(1) $$(date +%s)" >> $(TIER_LOG))

# Unit test binaries are linked without DWARF (-w): nothing reads it, and
# the link of a Kubernetes-sized test binary takes a third less time. Four
# packages at a time, not go test's two: a link leaves part of a core idle,
# and the unit tiers took about a ninth less.
UNIT_FLAGS := -count=1 -p 4 -ldflags=-w

# >>> lines (lines/README.md): an older line's tier, the bump and the canary.
# The tier is the line's unit tests (PodSecurityPolicy's v1.24 decision cases
# among them; -short, so that the largest corpora run on main only) and, against its own binaries, the e2e checks of the binary
# (version, every registered plugin in -h, -h otherwise upstream's), of the
# core objects through the default chain, of PodSecurityPolicy's API and
# admission, and of the other restored plugins. Main's e2e suite also covers
# upstream's plugins, whose e2e cases exercise main's APIs; the line shares
# their code with upstream's release and our registry's unit tests.
LINE_E2E := ^Test(Version|Help.*|UnknownAdmissionPluginIsRejected|CoreObjectsThroughDefaultAdmission|PodSecurityPolicy.*|SecurityContextDenyAndExec|RestoredPluginConfigTypo|PersistentVolumeLabel.*)$$
OLDER_LINES := $(shell grep -v '^\#' lines/supported)
ifeq ($(LINE),$(MAIN_LINE))
test-line: ## The tier of every older line (make test runs it): make vulncheck, unit tests, e2e checks of its binaries; LINE=1.Y for one.
	@for l in $(OLDER_LINES); do $(MAKE) --no-print-directory test-line LINE=$$l || exit 1; done
	$(call tier_done,test-line)
else
test-line: build $(addprefix $(BIN)/,etcd kube-apiserver-upstream kube-controller-manager kubectl) vulncheck
	@echo "test-line: line $(LINE) ($$(hack/line.sh version $(LINE))): unit tests" >&2
	$(GO) test $(UNIT_FLAGS) -short $$($(GO) list ./... | grep -v /test/e2e)
	@echo "test-line: line $(LINE): e2e checks of its binaries" >&2
	TURNSTILE_BIN_DIR=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 20m -parallel 4 -v -run '$(LINE_E2E)' \
		-ldflags "$$(hack/ldflags.sh upstream)" ./test/e2e/
endif

# The preview (lines/preview) as lines/README.md promises it, as root: the
# e2e checks of its binaries that an older line's tier runs, PodSecurityPolicy's
# unit tests (the v1.24 decision cases among them) and a real node on main's
# kubelet. Not part of make test: the pre-release compiles on its own.
test-preview: $(if $(PREVIEW),build $(addprefix $(BIN)/,etcd kube-apiserver-upstream kube-controller-manager kube-scheduler kubectl local-up) node-deps) ## The preview of the next minor, as root (LINE=, default lines/preview's): e2e checks of its binaries, PodSecurityPolicy's unit tests, make run NODES=1 on main's kubelet.
ifeq ($(PREVIEW),)
	@p=$$(hack/line.sh preview); [[ -n $$p ]] || { echo "test-preview: lines/preview lists no minor" >&2; exit 2; }; \
		$(MAKE) --no-print-directory test-preview LINE=$$p
else
	if [[ $$(id -u) -ne 0 ]]; then echo "test-preview: needs root: the node creates network namespaces, a bridge, cgroups and mounts" >&2; exit 1; fi
	@echo "test-preview: line $(LINE) ($$(hack/line.sh version $(LINE))): PodSecurityPolicy's unit tests" >&2
	$(GO) test $(UNIT_FLAGS) ./pkg/security/podsecuritypolicy/... ./plugin/pkg/admission/security/podsecuritypolicy/... ./pkg/pspmigration/...
	@echo "test-preview: line $(LINE): e2e checks of its binaries, and a node on main's kubelet" >&2
	TURNSTILE_BIN_DIR=$(CURDIR)/$(BIN) TURNSTILE_NODE_BIN=$(CURDIR)/_output/bin TURNSTILE_NODE_IMAGES=$(CURDIR)/$(NODE_IMAGES_DIR) \
		$(GO) test -count=1 -timeout 20m -parallel 4 -v -run '$(LINE_E2E)|^TestPreviewOnMainNodes$$' \
		-ldflags "$$(hack/ldflags.sh upstream)" ./test/e2e/
endif

bump: ## LINE=1.Y VERSION=v1.Y.Z: move a line (or main to the next minor) to an upstream release, gated; report in _output/bump.
	@[[ -n "$(VERSION)" ]] || { echo "bump: VERSION=v1.Y.Z is required (LINE= defaults to main's, $(MAIN_LINE))" >&2; exit 2; }
	hack/bump.sh "$(LINE)" "$(VERSION)"

test-bump: ## make bump's passing path, rehearsed: the next patch of an older line (LINE=, default the newest) made from its own, re-versioned and served by a local module proxy, bumped in a clone; the gate, the commit, every doc's version and the report checked. Slow: the line's Kubernetes compiles anew.
	LINE=$(if $(filter command line,$(origin LINE)),$(LINE)) hack/bump-rehearsal.sh

canary: ## VERSION=v1.Y.Z-beta.N: try main's bump to the next minor in a scratch copy; what breaks in _output/canary.
	@[[ -n "$(VERSION)" ]] || { echo "canary: VERSION=v1.Y.Z(-beta.N) is required" >&2; exit 2; }
	hack/canary.sh "$(VERSION)"
# <<< lines

test-unit: ## Unit tests (everything but test/e2e), and the scale plot's in test/scale.
	$(GO) test $(UNIT_FLAGS) $$($(GO) list ./... | grep -v /test/e2e)
	$(base_goflags) $(GO) test -C test/scale -count=1 ./...
	$(call tier_done,test-unit)

test-cost: build $(addprefix $(BIN)/,etcd kube-apiserver-upstream kube-apiserver-planted) ## The cost guard: allocations and etcd requests per pod create, Turnstile over upstream, same-plugins (limit 1.02) and upstream-same (1.04); then the same with a planted 5% regression, which must fail.
	TURNSTILE_COST_GUARD=1 TURNSTILE_BIN_DIR=$(CURDIR)/$(BIN) $(GO) test -count=1 -v -run '^TestCostGuard$$' ./cmd/bench/internal/compare/
	$(call tier_done,test-cost)

test-e2e: build $(addprefix $(BIN)/,$(E2E_TOOLS)) $(BIN)/local-up $(BIN)/image ## E2E tests: real etcd and kube-apiserver processes.
	# The release for this machine's platform, whatever the tree's state, and
	# what checks it: containerd imports the image (the tests skip, saying
	# why, without it). make test-release adds arm64 and qemu.
	$(MAKE) --no-print-directory release ALLOW_DIRTY=1 PLATFORMS="$(TEST_PLATFORMS)" KUBECTL_PSP_PLATFORMS="$(TEST_PLATFORMS)" RELEASE_LINES= AIRGAP=
	hack/install-package.sh containerd containerd || true
	# Stamped like upstream's binaries, so kubeadm's version checks run in-process as in kubeadm.
	TURNSTILE_BIN_DIR=$(CURDIR)/$(BIN) TURNSTILE_RELEASE_DIR=$(CURDIR)/$(RELEASE_DIR) TURNSTILE_RELEASE_PLATFORMS="$(TEST_PLATFORMS)" TURNSTILE_RELEASE_KUBECTL_PSP_PLATFORMS="$(TEST_PLATFORMS)" \
		$(GO) test -count=1 -timeout 45m -parallel 4 -v -ldflags "$$(hack/ldflags.sh upstream)" ./test/e2e/...
	$(call tier_done,test-e2e)

# The whole release as users get it, both platforms: what make test-e2e
# checks of its host-only release, plus the arm64 binary under qemu (its
# version, and serving with etcd embedded) and both in the image index.
# Apart from make test, because a cold arm64 cross-build of kube-apiserver
# takes about 15 minutes on 2 cores.
# make test-release's signing key, which each line's release is signed with.
TEST_RELEASE_KEY_DIR := _output/test-release-key
test-release: build $(addprefix $(BIN)/,$(E2E_TOOLS) krew cosign publish registry $(NODE_TOOLS)) $(BIN)/image ## make release for both platforms, signed with a test key, checked: checksums, SBOMs, provenance, image index, a byte-identical rebuild, arm64 under qemu; make publish to a registry on loopback, verified with cosign; the air-gap bundle imported on a real node that reaches no registry, and kubeadm init from it with both addons, nothing pulled, on each line (as root); and make release FIPS=1 for this machine, serving in FIPS 140-3 mode.
	# cmd/publish's and test/registry's modules, checked here and not by
	# make verify: their graphs (cosign's, the registry's) are 4 GB and a
	# minute of downloads on a cold cache, which make test's budget has not.
	for mod in cmd/publish test/registry; do \
		(cd $$mod && $(base_goflags) $(GO) mod tidy -diff >/dev/null) || { echo "test-release: $$mod/go.mod is not tidy (run go mod tidy in $$mod)" >&2; exit 1; }; done
	$(base_goflags) $(GO) vet -C cmd/publish ./...
	$(base_goflags) $(GO) test -C cmd/publish -count=1 ./...
	# A signing key of the test's own, in place of the operator's.
	rm -rf $(TEST_RELEASE_KEY_DIR) && mkdir -p $(TEST_RELEASE_KEY_DIR)
	cd $(TEST_RELEASE_KEY_DIR) && COSIGN_PASSWORD=test-release $(CURDIR)/$(BIN)/cosign generate-key-pair >/dev/null
	COSIGN_PASSWORD=test-release $(MAKE) --no-print-directory release ALLOW_DIRTY=1 RELEASE_LINES= RELEASE_SIGNING_KEY=$(CURDIR)/$(TEST_RELEASE_KEY_DIR)/cosign.key
	$(MAKE) --no-print-directory release FIPS=1 ALLOW_DIRTY=1 RELEASE_LINES= PLATFORMS="$(TEST_PLATFORMS)" RELEASE_DIR=$(RELEASE_DIR)-fips
	hack/install-package.sh qemu-aarch64-static qemu-user-static || true
	hack/install-package.sh containerd containerd || true
	# The air-gap test's node, as root (it skips, saying so, otherwise).
	if [[ $$(id -u) -eq 0 ]]; then $(MAKE) --no-print-directory node-packages; fi
	TURNSTILE_BIN_DIR=$(CURDIR)/$(BIN) TURNSTILE_RELEASE_DIR=$(CURDIR)/$(RELEASE_DIR) TURNSTILE_RELEASE_PLATFORMS="$(PLATFORMS)" TURNSTILE_RELEASE_KUBECTL_PSP_PLATFORMS="$(KUBECTL_PSP_PLATFORMS)" \
		TURNSTILE_RELEASE_FIPS_DIR=$(CURDIR)/$(RELEASE_DIR)-fips TURNSTILE_RELEASE_AIRGAP=$(AIRGAP) TURNSTILE_RELEASE_REBUILD=1 \
		TURNSTILE_RELEASE_SIGNING_KEY=$(CURDIR)/$(TEST_RELEASE_KEY_DIR)/cosign.key COSIGN_PASSWORD=test-release \
		$(GO) test -count=1 -timeout 30m -v -run '^TestRelease' -ldflags "$$(hack/ldflags.sh upstream)" ./test/e2e/
	# Each older line's air-gap bundle for this machine, signed with the
	# same key, and kubeadm init from it with that line's kubeadm and
	# kubelet (as root).
	if [[ $$(id -u) -eq 0 && -n "$(AIRGAP)" ]]; then for l in $(OLDER_LINES); do \
		COSIGN_PASSWORD=test-release $(MAKE) --no-print-directory release LINE=$$l ALLOW_DIRTY=1 PLATFORMS="$(TEST_PLATFORMS)" KUBECTL_PSP_PLATFORMS= \
			RELEASE_SIGNING_KEY=$(CURDIR)/$(TEST_RELEASE_KEY_DIR)/cosign.key && \
		$(MAKE) --no-print-directory test-release-airgap LINE=$$l || exit 1; done; fi

# make test-release's check of an older line's air-gap bundle (LINE=1.Y), on
# the release make release LINE=1.Y wrote for this machine, signed with
# make test-release's key.
.PHONY: test-release-airgap
test-release-airgap: build $(addprefix $(BIN)/,etcd kubeadm kubelet kube-proxy kubectl cosign) ## The air-gap bundle make release wrote for this machine, signed with make test-release's key, installed as docs/tasks/air-gap-install.md says on a real node that reaches no registry, as root (make test-release runs it for each line; LINE=1.Y for one).
	TURNSTILE_BIN_DIR=$(CURDIR)/$(BIN) TURNSTILE_RELEASE_DIR=$(CURDIR)/$(RELEASE_DIR) TURNSTILE_RELEASE_AIRGAP=1 \
		TURNSTILE_RELEASE_SIGNING_KEY=$(CURDIR)/$(TEST_RELEASE_KEY_DIR)/cosign.key \
		$(GO) test -count=1 -timeout 20m -v -run '^TestReleaseAirGap$$' -ldflags "$$(hack/ldflags.sh upstream)" ./test/e2e/

test-node: build $(addprefix $(BIN)/,$(LOCAL_TOOLS) kubeadm) $(BIN)/local-up node-deps control-plane-images image ## Real nodes, as root: make run NODES=2 with real pods, a real kubeadm init and reset, the guard, a clean Ctrl-C, one state kept with and without nodes (make test-upgrade: kubeadm upgrade).
	if [[ $$(id -u) -ne 0 ]]; then echo "test-node: needs root: the nodes create network namespaces, a bridge, cgroups and mounts" >&2; exit 1; fi
	TURNSTILE_BIN_DIR=$(CURDIR)/$(BIN) TURNSTILE_NODE_IMAGES=$(CURDIR)/$(NODE_IMAGES_DIR) \
	TURNSTILE_APISERVER_IMAGE=$$(ls -t $(CURDIR)/$(OUT)/images/kube-apiserver-*.tar | head -1) \
		$(GO) test -count=1 -timeout 20m -parallel 2 -v -run '^Test(LocalNodes|LocalUpKeepsState|KubeadmInitForReal|Adversarial|PSPMigration|QuickStart)' -ldflags "$$(hack/ldflags.sh upstream)" ./test/e2e/
	$(call tier_done,test-node)

test-e2e-images: build $(addprefix $(BIN)/,$(LOCAL_TOOLS)) $(BIN)/local-up node-deps e2e-images ## The e2e framework's images on a real node, as root: each runs under its name, nothing pulled, and does what the specs use it for.
	if [[ $$(id -u) -ne 0 ]]; then echo "test-e2e-images: needs root: the node creates network namespaces, a bridge, cgroups and mounts" >&2; exit 1; fi
	TURNSTILE_BIN_DIR=$(CURDIR)/$(BIN) TURNSTILE_NODE_IMAGES=$(CURDIR)/$(NODE_IMAGES_DIR) TURNSTILE_E2E_IMAGES=$(CURDIR)/$(E2E_IMAGES_DIR)/e2e.tar \
		$(GO) test -count=1 -timeout 20m -v -run '^TestE2EImages$$' -ldflags "$$(hack/ldflags.sh upstream)" ./test/e2e/

# kubeadm's kube-controller-manager, kube-scheduler and etcd images, from our
# builds of them, for a real `kubeadm init` (the apiserver's is `make image`).
control-plane-images: $(addprefix $(BIN)/,kube-apiserver-upstream kube-controller-manager kube-scheduler etcd nodeimages) ## kubeadm's kube-apiserver (upstream's), kube-controller-manager, kube-scheduler and etcd images, from our builds, for a real kubeadm init (make image makes Turnstile's).
	$(BIN)/nodeimages -out $(NODE_IMAGES_DIR) -bin $(BIN) \
		-control-plane -kubernetes-version $$($(GO) list -m -f '{{.Version}}' k8s.io/kubernetes)

# >>> upgrade: a real `kubeadm upgrade apply` from the newest older line to
# main's (docs/kubeadm.md). The older line's kubeadm, kubelet and images
# make the cluster; main's kubeadm upgrades it and main's kubelet replaces
# the old one.
## UPGRADE_FROM: The older line `make test-upgrade` and `make test-ha-kubeadm` upgrade from.
UPGRADE_FROM ?= $(firstword $(OLDER_LINES))
UPGRADE_FROM_OUT = _output/lines/$(UPGRADE_FROM)
# What the upgrade tests start from and go to: the older line's kubeadm,
# kubelet, kube-proxy, images (and local-up and kubectl, for make run's
# state across lines), and main's.
.PHONY: upgrade-from
UPGRADE_FROM_CHECK = [[ "$(LINE)" == "$(MAIN_LINE)" && -n "$(UPGRADE_FROM)" ]] || { echo "$(MAKECMDGOALS): upgrades from an older line (lines/supported: '$(OLDER_LINES)') to main's ($(MAIN_LINE)); LINE=$(LINE)" >&2; exit 2; }
upgrade-from: build $(addprefix $(BIN)/,$(LOCAL_TOOLS) kubeadm local-up) node-deps control-plane-images image
	$(UPGRADE_FROM_CHECK)
	$(MAKE) --no-print-directory LINE=$(UPGRADE_FROM) image control-plane-images $(addprefix $(UPGRADE_FROM_OUT)/bin/,kubeadm kubelet kube-proxy local-up kubectl)
UPGRADE_ENV = TURNSTILE_BIN_DIR=$(CURDIR)/$(BIN) TURNSTILE_NODE_IMAGES=$(CURDIR)/$(NODE_IMAGES_DIR) \
	TURNSTILE_APISERVER_IMAGE=$$(ls -t $(CURDIR)/$(OUT)/images/kube-apiserver-*.tar | head -1) \
	TURNSTILE_UPGRADE_FROM_VERSION=$$(hack/line.sh version $(UPGRADE_FROM)) \
	TURNSTILE_UPGRADE_FROM_BIN=$(CURDIR)/$(UPGRADE_FROM_OUT)/bin \
	TURNSTILE_UPGRADE_FROM_IMAGES=$(CURDIR)/$(UPGRADE_FROM_OUT)/images/node \
	TURNSTILE_UPGRADE_FROM_APISERVER_IMAGE=$$(ls -t $(CURDIR)/$(UPGRADE_FROM_OUT)/images/kube-apiserver-*.tar | head -1)

test-upgrade: upgrade-from ## kubeadm upgrade apply for real, as root: Turnstile with PodSecurityPolicy, and vanilla, from the older line (<upgrade-from>) to Turnstile <main>; and make run's state across the two.
	if [[ $$(id -u) -ne 0 ]]; then echo "test-upgrade: needs root: the node creates network namespaces, a bridge, cgroups and mounts" >&2; exit 1; fi
	$(UPGRADE_ENV) $(GO) test -count=1 -timeout 40m -v -run '^Test(KubeadmUpgradeForReal|LocalUpAcrossLines)$$' -ldflags "$$(hack/ldflags.sh upstream)" ./test/e2e/

# docs/tasks/kubeadm-ha.md, every block as written on its machine: the
# balancer and three control-plane nodes, made by the page's kubeadm
# commands, then its undo.
test-ha-page: build $(addprefix $(BIN)/,kubectl kubeadm) node-deps control-plane-images image ## docs/tasks/kubeadm-ha.md run as written, as root: haproxy and three kubeadm control-plane nodes with PodSecurityPolicy, each block on its machine, then the page's undo (TestTaskKubeadmHA).
	if [[ $$(id -u) -ne 0 ]]; then echo "test-ha-page: needs root: the nodes create network namespaces, a bridge, cgroups and mounts" >&2; exit 1; fi
	hack/install-package.sh haproxy haproxy
	TURNSTILE_HA_PAGE=1 TURNSTILE_BIN_DIR=$(CURDIR)/$(BIN) TURNSTILE_NODE_IMAGES=$(CURDIR)/$(NODE_IMAGES_DIR) \
	TURNSTILE_APISERVER_IMAGE=$$(ls -t $(CURDIR)/$(OUT)/images/kube-apiserver-*.tar | head -1) \
		$(GO) test -count=1 -timeout 30m -v -run '^TestTaskKubeadmHA$$' -ldflags "$$(hack/ldflags.sh upstream)" ./test/e2e/

# The production shape (docs/kubeadm.md#high-availability), air-gapped:
# three kubeadm control-plane nodes and a worker behind Debian's haproxy,
# on containerd 2, installed from the older line's release bundle and
# upgraded one node at a time with main's, under load, with faults and a
# failed upgrade, then day two; the report in _output/ha-kubeadm. Both
# releases are made for this machine alone and signed with a key of the
# run's own, as test-release does.
HA_KUBEADM_DIR = $(OUT)/ha-kubeadm
## HA_MISSING_IMAGE: An image of the older line's air-gap bundle that `make test-ha-kubeadm` leaves out of it, to see the run refuse the bundle, naming the image.
HA_MISSING_IMAGE ?=
test-ha-kubeadm: build $(addprefix $(BIN)/,kubectl kubeadm etcdutl cosign) node-deps control-plane-images containerd ## Three kubeadm control-plane nodes and a worker behind haproxy, as root, air-gapped: installed from <upgrade-from>'s release bundle, faults, a rolling upgrade with main's bundle with a failed step, every node's certificates renewed, etcd restored from a snapshot, the way back to upstream's apiserver and forward, under load, nothing pulled; HA_MISSING_IMAGE= plants a missing image; report in _output/ha-kubeadm (docs/results/ha-kubeadm.json is a copy of a run's report.json).
	if [[ $$(id -u) -ne 0 ]]; then echo "test-ha-kubeadm: needs root: the nodes create network namespaces, a bridge, cgroups and mounts" >&2; exit 1; fi
	$(UPGRADE_FROM_CHECK)
	$(MAKE) --no-print-directory LINE=$(UPGRADE_FROM) $(addprefix $(UPGRADE_FROM_OUT)/bin/,kubeadm kubelet kube-proxy)
	hack/install-package.sh haproxy haproxy
	rm -rf $(HA_KUBEADM_DIR)/key && mkdir -p $(HA_KUBEADM_DIR)/key
	cd $(HA_KUBEADM_DIR)/key && COSIGN_PASSWORD=test-ha-kubeadm $(CURDIR)/$(BIN)/cosign generate-key-pair >/dev/null
	COSIGN_PASSWORD=test-ha-kubeadm $(MAKE) --no-print-directory release ALLOW_DIRTY=1 PLATFORMS="$(TEST_PLATFORMS)" KUBECTL_PSP_PLATFORMS= \
		RELEASE_LINES=$(UPGRADE_FROM) RELEASE_DIR=$(HA_KUBEADM_DIR)/release RELEASE_SIGNING_KEY=$(CURDIR)/$(HA_KUBEADM_DIR)/key/cosign.key
	TURNSTILE_BIN_DIR=$(CURDIR)/$(BIN) TURNSTILE_NODE_IMAGES=$(CURDIR)/$(NODE_IMAGES_DIR) \
		TURNSTILE_UPGRADE_FROM_VERSION=$$(hack/line.sh version $(UPGRADE_FROM)) TURNSTILE_UPGRADE_FROM_BIN=$(CURDIR)/$(UPGRADE_FROM_OUT)/bin \
		TURNSTILE_HA_KUBEADM_FROM_RELEASE=$(CURDIR)/$(HA_KUBEADM_DIR)/release/lines/$(UPGRADE_FROM) TURNSTILE_HA_KUBEADM_TO_RELEASE=$(CURDIR)/$(HA_KUBEADM_DIR)/release \
		TURNSTILE_HA_KUBEADM_PUBLIC_KEY=$(CURDIR)/$(HA_KUBEADM_DIR)/key/cosign.pub TURNSTILE_HA_KUBEADM_MISSING_IMAGE=$(HA_MISSING_IMAGE) \
		TURNSTILE_HA_KUBEADM=1 TURNSTILE_CONTAINERD=$(CURDIR)/$(CONTAINERD_DIR) TURNSTILE_HA_KUBEADM_REPORT=$(CURDIR)/$(HA_KUBEADM_DIR)/report.md \
		$(GO) test -count=1 -timeout 75m -v -run '^TestHAKubeadm$$' -ldflags "$$(hack/ldflags.sh upstream)" ./test/e2e/
	@echo "test-ha-kubeadm: $$(head -1 $(HA_KUBEADM_DIR)/report.md) The report: $(HA_KUBEADM_DIR)/report.md and report.json" >&2
# <<< upgrade

# etcdutl, with which make test-ha-kubeadm restores every etcd member from a
# snapshot as etcd's recovery guide does, from test/etcdutl's module so that
# the apiserver's module graph stays upstream's; its etcd is go.mod's (make
# verify checks that they agree).
$(BIN)/etcdutl: FORCE
	$(base_goflags) $(GO) build -C test/etcdutl -trimpath -o $(CURDIR)/$@ go.etcd.io/etcd/etcdutl/v3

# What test-ha runs: three kubeadm nodes, each an etcd member and an apiserver.
HA_TOOLS := etcd kube-apiserver-upstream kubeadm

# make test runs test-ha with HA_FLAGS=-short: one fault of each kind (etcd's
# leader and an apiserver killed, an apiserver stopped), not all of them.
## HA_FLAGS: More go test flags for `make test-ha` (`make test` gives -short).
HA_FLAGS ?=
test-ha: build $(addprefix $(BIN)/,$(HA_TOOLS)) ## HA control plane (3 etcd, 2 Turnstile + 1 upstream apiserver) under every fault, as root; figures in _output/ha/report.md.
	if [[ $$(id -u) -ne 0 ]]; then echo "test-ha: needs root: it creates network namespaces, a bridge and a tmpfs" >&2; exit 1; fi
	hack/install-package.sh ip iproute2
	hack/install-package.sh nft nftables
	TURNSTILE_HA=1 TURNSTILE_BIN_DIR=$(CURDIR)/$(BIN) TURNSTILE_HA_REPORT=$(CURDIR)/$(OUT)/ha/report.md \
		$(GO) test -count=1 -timeout 30m -v $(HA_FLAGS) -run '^TestHA(KilledRunLeavesNothing)?$$' ./test/ha/
	$(call tier_done,test-ha)

test-mutation: build $(addprefix $(BIN)/,$(E2E_TOOLS)) ## Each plugin's e2e tests, run with that plugin off: all must fail (slow; PLUGINS=A,B for some).
	hack/e2e-mutation.sh $(subst $(comma), ,$(PLUGINS))

# The binaries whose flags the docs may name: verify-docs asks each its -h.
DOC_BINARIES := kube-apiserver local-up conformance bench image release nodeimages
verify: $(addprefix $(BIN)/,$(DOC_BINARIES)) vulncheck ## gofmt, go vet, go.mod as pin-kubernetes.sh writes it, generated code up to date, an e2e coverage row for every plugin, no binary or file over 2 MiB in git; the docs' links, anchors, make targets, flags and facts; every example through --validate-only; make vulncheck.
	hack/verify.sh
	$(GO) run ./cmd/verify-docs -bin $(BIN)
	$(GO) run ./cmd/verify-examples -bin $(BIN)
	$(call tier_done,verify)

update-docs: ## Write docs/reference/components.md from the go.mod files and build/oci, docs/reference/make.md from this Makefile, and the evidence tables generated from docs/results (make verify checks all three; make bump runs this).
	$(GO) run ./cmd/verify-docs -write

clean: ## Remove _output.
	rm -rf _output

FORCE:
