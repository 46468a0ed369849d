#!/usr/bin/env bash
# Copyright 2026 The Turnstile Authors.
# SPDX-License-Identifier: Apache-2.0
# make canary VERSION=v1.Y.Z[-beta.N]: main's move to the next minor's
# release (or pre-release), tried in a scratch clone of the committed tree
# as far as the Go module proxy allows, without touching this tree. It
# writes _output/canary/<version>.md: for each gate, passed, failed or
# blocked, and what blocks it. Not part of make test: it compiles a
# Kubernetes of its own (about 20 minutes on 2 cores).
#
# The gates: the pins (hack/pin-kubernetes.sh, tidied with -e so that a
# module the proxy refuses is named, not fatal), with the held pairs for the
# next minor rewritten as make bump rewrites them (hack/held.sh); go vet;
# the builds of our kube-apiserver and kubectl-psp and of upstream's
# kube-apiserver, kubeadm, kube-controller-manager, kube-scheduler, kubectl,
# kubelet, kube-proxy and e2e.test; the unit tests, PodSecurityPolicy's
# v1.24 decision cases and the registry's drift tests named apart; the e2e
# tests that need no node (CANARY_E2E, a regular expression of test names).
# A gate is blocked when its log names a module the proxy refused.
#
# When the release needs a newer Go than this machine's, the canary runs
# with GOTOOLCHAIN=go1.27.3 (CANARY_TOOLCHAIN overrides it).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

version=${1:-}
[[ $version =~ ^v1\.([0-9]+)\.[0-9]+(-(alpha|beta|rc)\.[0-9]+)?$ ]] ||
	{ echo "usage: make canary VERSION=v1.Y.Z[-beta.N] (got '$version')" >&2; exit 2; }
line="1.${BASH_REMATCH[1]}"
main=$(hack/line.sh main)
[[ ${line#1.} -eq $((${main#1.} + 1)) ]] ||
	{ echo "canary: $version is not a release of the next minor after main's $main" >&2; exit 2; }

out=$root/_output/canary
mkdir -p "$out"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
logs=$scratch/logs
mkdir -p "$logs"

# The Go the release asks for: this machine's Go downloads the release's
# go.mod even when it refuses the release for needing a newer Go.
tmp=$scratch/download
mkdir -p "$tmp"
info=$(cd "$tmp" && GOTOOLCHAIN=local go mod download -json "k8s.io/kubernetes@$version" 2>&1) || true
gomod=$(echo "$info" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
if [[ ! -f $gomod ]]; then
	echo "canary: the Go module proxy does not serve k8s.io/kubernetes@$version:" >&2
	echo "$info" | sed -n 's/^[[:space:]]*"Error": "\(.*\)",*$/  \1/p' >&2
	exit 1
fi
need=$(awk '$1 == "go" { print $2; exit }' "$gomod")
have=$(GOTOOLCHAIN=local go env GOVERSION)
have=${have#go}
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
if [[ $(printf '%s\n%s\n' "$need" "$have" | sort -V | tail -1) != "$have" ]]; then
	export GOTOOLCHAIN=${CANARY_TOOLCHAIN:-go1.27.3}
	echo "canary: $version needs Go $need, this machine has $have: GOTOOLCHAIN=$GOTOOLCHAIN" >&2
fi
export GOFLAGS=-trimpath

echo "canary: cloning the committed tree ($(git rev-parse --short HEAD)) into $scratch/tree" >&2
git clone -q --no-local "$root" "$scratch/tree"
cd "$scratch/tree"
bin=$scratch/tree/_output/bin
mkdir -p "$bin"

results=() # "gate|result|detail"
refused=() # modules the proxy refused
record() { results+=("$1|$2|${3:-}"); echo "canary: $1: $2${3:+ ($3)}" >&2; }
# refusals LOG: the modules a log says the proxy refused.
refusals() { grep -oE '[A-Za-z0-9./_-]+@v[^: ]+: reading [^ ]+: 40[34]' "$1" | sed -E 's/: reading .*//' | sort -u || true; }
# gate NAME COMMAND...: runs one gate; blocked if it fails naming a refused module.
gate() {
	local name=$1; shift
	echo "canary: gate $name" >&2
	if "$@" > "$logs/$name.log" 2>&1; then
		record "$name" passed
		return 0
	fi
	local blocking
	blocking=$(refusals "$logs/$name.log" | xargs)
	for m in "${refused[@]}"; do
		grep -qF "${m%@*}" "$logs/$name.log" && blocking+=" $m"
	done
	blocking=$(echo "$blocking" | xargs -n1 | sort -u | xargs)
	if [[ -n $blocking ]]; then
		record "$name" blocked "by $blocking"
	else
		record "$name" failed "$(grep -m3 -E 'error|FAIL|cannot|undefined' "$logs/$name.log" | cut -c1-200 | paste -sd ';' -)"
	fi
	return 1
}

# 1. The pins, with the held pairs for the new minor in place.
hack/held.sh "$line"
if PIN_PARTIAL=1 hack/pin-kubernetes.sh "$version" > "$logs/pins.log" 2>&1; then
	mapfile -t refused < <(refusals "$logs/pins.log")
	if [[ ${#refused[@]} -eq 0 ]]; then record pins passed; else record pins "passed, partly" "the proxy refuses ${refused[*]}"; fi
else
	mapfile -t refused < <(refusals "$logs/pins.log")
	record pins failed "$(tail -3 "$logs/pins.log" | paste -sd ';' -)"
fi

# 2. Builds: ours, then upstream's binaries from the pinned graph.
ldflags_ours=$(hack/ldflags.sh turnstile)
ldflags_upstream=$(hack/ldflags.sh upstream)
gate vet go vet ./... || true
gate build-kube-apiserver go build -ldflags "$ldflags_ours" -o "$bin/kube-apiserver" ./cmd/kube-apiserver || true
gate build-kubectl-psp go build -o "$bin/kubectl-psp" ./cmd/kubectl-psp || true
for tool in kube-apiserver kubeadm kube-controller-manager kube-scheduler kubectl kubelet kube-proxy; do
	name=$tool
	[[ $tool != kube-apiserver ]] || name=kube-apiserver-upstream
	gate "build-$name" go build -ldflags "$ldflags_upstream" -o "$bin/$name" "k8s.io/kubernetes/cmd/$tool" || true
done
gate build-etcd go build -o "$bin/etcd" go.etcd.io/etcd/server/v3 || true
gate build-e2e.test go test -C test/conformance -c -ldflags "$ldflags_upstream" -o "$bin/e2e.test" k8s.io/kubernetes/test/e2e || true

# 3. Tests: the unit tests, and apart the ones a bump hinges on.
gate psp-v1.24-cases go test -count=1 ./plugin/pkg/admission/security/podsecuritypolicy/ ./pkg/security/... || true
gate registry-drift go test -count=1 -run 'TestUpstreamDrift|TestRegistryInvariants|TestDefaultOnSetIsUpstreams' ./pkg/admission/ || true
# shellcheck disable=SC2046
gate unit go test -count=1 $(go list ./... | grep -v /test/e2e) || true
e2e=${CANARY_E2E:-^Test(Version|Help.*|UnknownAdmissionPluginIsRejected|CoreObjectsThroughDefaultAdmission|PodSecurityPolicy.*|SecurityContextDenyAndExec|RestoredPluginConfigTypo|PersistentVolumeLabel.*|ValidateOnly.*|AdmissionConfig(EveryPlugin|RejectsMalformedFiles)|KubectlPSP.*)$}
gate e2e env TURNSTILE_BIN_DIR="$bin" go test -count=1 -timeout 30m -parallel 4 -v -run "$e2e" -ldflags "$ldflags_upstream" ./test/e2e/ || true

# 4. The report.
report=$out/$version.md
{
	echo "# Canary: main ($main, $(git -C "$root" rev-parse --short HEAD)) on $version"
	echo
	echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), Go $(go env GOVERSION). \`make canary VERSION=$version\`; the logs were in a scratch directory, removed."
	echo
	if [[ ${#refused[@]} -gt 0 ]]; then
		echo "The Go module proxy refuses: ${refused[*]}."
		echo
	fi
	echo "| gate | result | why |"
	echo "|---|---|---|"
	for r in "${results[@]}"; do
		IFS='|' read -r name result detail <<< "$r"
		echo "| $name | $result | ${detail//|/\\|} |"
	done
	echo
	echo "Held pairs for $line (hack/held.sh): $(git -C "$root" grep -lE "^//go:build !?k8s_next_${line//./\\.}\$" -- '*.go' | xargs)."
	echo
	heading="## Failures"
	for r in "${results[@]}"; do
		IFS='|' read -r name result _ <<< "$r"
		[[ $result == failed ]] || continue
		[[ -z $heading ]] || { echo "$heading"; echo; heading=; }
		echo "### $name"
		echo
		echo '```'
		grep -E '^(---|FAIL|#|[a-z].*\.go:[0-9]+)|error' "$logs/$name.log" | grep -v '^--- PASS' | head -40
		echo '```'
		echo
	done
} > "$report"
echo "canary: wrote $report" >&2
failed=0
for r in "${results[@]}"; do [[ $r != *"|failed|"* ]] || failed=1; done
if [[ $failed -eq 0 ]]; then
	echo "canary: $version passes every gate the proxy allows" >&2
else
	echo "canary: $version fails a gate; see the report" >&2
	exit 1
fi
