#!/usr/bin/env bash
# Copyright 2026 The Turnstile Authors.
# SPDX-License-Identifier: Apache-2.0
# make canary VERSION=v1.Y.Z[-beta.N]: tries main's bump to the next minor's
# release (or pre-release) in a scratch clone of the committed tree, and
# writes what breaks to _output/canary/<version>.md, without touching this
# tree's pins. Not part of make test: it compiles a Kubernetes of its own.
#
# When the release's go.mod needs a newer Go than this machine's, the
# canary runs with GOTOOLCHAIN=go1.27.3 (the Go 1.27 release the
# Go module proxy serves; CANARY_TOOLCHAIN overrides it). Its gate is
# BUMP_GATE=unit: go vet of the whole tree, then the unit tests, which hold
# the drift tests (upstream's plugin order, Run's digest) and the
# PodSecurityPolicy decision cases; CANARY_GATE=compile stops after the
# build, CANARY_GATE=full runs the e2e tier too.
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
have=$(go env GOVERSION)
have=${have#go}
toolchain=
if [[ $(printf '%s\n%s\n' "$need" "$have" | sort -V | tail -1) != "$have" ]]; then
	toolchain=${CANARY_TOOLCHAIN:-go1.27.3}
	echo "canary: $version needs Go $need, this machine has $have: using GOTOOLCHAIN=$toolchain" >&2
fi

echo "canary: cloning the committed tree ($(git rev-parse --short HEAD)) into $scratch/tree" >&2
git clone -q --no-local "$root" "$scratch/tree"
cd "$scratch/tree"
status=0
GOTOOLCHAIN=${toolchain:-${GOTOOLCHAIN:-}} BUMP_GATE=${CANARY_GATE:-unit} BUMP_NO_COMMIT=1 KEEP=1 \
	hack/bump.sh "$line" "$version" || status=$?
report=_output/bump/$version.md
if [[ -f $report ]]; then
	{
		echo "<!-- make canary: main $main at $(git -C "$root" rev-parse --short HEAD), Go ${toolchain:-$have} -->"
		cat "$report"
		echo
		echo "## What the bump changed"
		echo
		echo '```'
		git status --short
		echo '```'
	} > "$out/$version.md"
	echo "canary: wrote $out/$version.md" >&2
else
	echo "canary: the bump stopped before its report (exit $status); see above" >&2
	exit 1
fi
[[ $status -eq 0 ]] && echo "canary: $version passes the gate" >&2 || echo "canary: $version does not pass; what breaks is in the report" >&2
