#!/usr/bin/env bash
# Copyright 2026 The Turnstile Authors.
# SPDX-License-Identifier: Apache-2.0
# make test starts this in the background, at the lowest CPU priority, when
# its first tier starts: it compiles into the build cache the packages the
# later tiers need (each older line's, the nodes', the conformance suite's),
# with `go list -export`, which compiles exactly what `go build` and
# `go test` would and links and writes nothing. On a cold cache the earlier
# tiers leave a core idle for much of their time (links, downloads, tests
# running); this puts that time to use, and a later tier finds its packages
# compiled. Whatever it has not reached, the tier compiles as it always
# does. On a warm cache it stops after its first step (see below).
#
# It stops before the tiers whose timings are measured against bounds (make
# test-ha's outages): hack/test.sh kills it when make test-line ends.
set -uo pipefail
cd "$(dirname "$0")/.."
# hack/test.sh starts this in a session of its own (setsid), which the
# kernel's autogroup scheduling gives an equal share of the CPU whatever its
# processes' nice value: the group's own nice is what makes it yield.
echo 19 > /proc/self/autogroup 2>/dev/null || true

# step DIR DESCRIPTION GO-ARGS...: one go list -export in the module in
# DIR; a failure is the tier's to report, so it is noted and the next step
# runs.
step() {
	local dir=$1 what=$2
	shift 2
	local start=$SECONDS
	if (cd "$dir" && go list -e -deps -export "$@" >/dev/null 2>&1); then
		echo "precompile: $what: $((SECONDS - start)) s"
	else
		echo "precompile: $what: go list failed after $((SECONDS - start)) s (its tier will say why)"
	fi
}

# What the last tier needs first: it has the most time to finish.
start=$SECONDS
step test/conformance "conformance: e2e.test, ginkgo" -test k8s.io/kubernetes/test/e2e github.com/onsi/ginkgo/v2/ginkgo
# The first step tells a warm cache from a cold one: on a warm cache it
# found everything compiled within seconds, and the steps below would only
# hash the line's sources (most of a minute for an older line) beside the
# tiers that hash them again; that cost make test's warm run more than it
# could save.
if ((SECONDS - start < 30)); then
	echo "precompile: the build cache is warm (the first step took $((SECONDS - start)) s); the rest is left to the tiers"
	exit 0
fi
for line in $(grep -v '^#' lines/supported); do
	flags=$(hack/line.sh goflags "$line") || continue
	GOFLAGS="${GOFLAGS:-} $flags" step . "line $line: packages and tests, etcd, upstream's kube-apiserver, kube-controller-manager, kubectl" \
		-test ./... go.etcd.io/etcd/server/v3 k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl
done
step . "nodes: kubelet, kube-proxy" k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy
step test/images "node images: agnhost" k8s.io/kubernetes/test/images/agnhost
step build/coredns "node images: CoreDNS" .
