#!/usr/bin/env bash
# Copyright 2026 The Turnstile Authors.
# SPDX-License-Identifier: Apache-2.0
# What the go command needs to build one supported Kubernetes line
# (lines/README.md). Main's line is the tree's own go.mod files; an older
# line 1.Y is lines/1.Y/, used through -modfile, plus the build tags
# k8s_before_1.N for every minor N after 1.Y up to main's, as Go's release
# tags work (pkg/lineapi). A preview of the next minor (lines/preview) is
# lines/1.N/ built from that minor's newest pre-release, with the tag
# k8s_next_1.N that selects the held pairs' new files; it is not supported,
# and neither make test nor make verify builds it.
#
#   hack/line.sh main                 main's minor, from go.mod (1.37)
#   hack/line.sh list                 every supported minor, main's first
#   hack/line.sh preview              the preview's minor, if there is one
#   hack/line.sh version 1.Y          the line's k8s.io/kubernetes version
#   hack/line.sh goflags 1.Y [DIR]    -modfile=... -tags=... for the module in DIR
#                                     (default .); nothing for main's line
#   hack/line.sh tags 1.Y             the build tags alone
#   hack/line.sh modules 1.Y          the modules the line pins, "DIR PIN" a
#                                     line (lines/modules)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

kube_version() { awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v1\./ { print $2; exit }' "$1"; }

main_minor() {
	local v
	v=$(kube_version "$root/go.mod")
	[[ $v =~ ^v1\.([0-9]+)\. ]] || { echo "line: go.mod has no k8s.io/kubernetes v1.Y.Z requirement" >&2; exit 1; }
	echo "1.${BASH_REMATCH[1]}"
}

# check MINOR: fails with a clear message unless MINOR is a supported line.
check() {
	local minor=$1
	[[ $minor =~ ^1\.[0-9]+$ ]] || { echo "line: '$minor' is not a minor version like 1.36" >&2; exit 2; }
	[[ $minor == "$(main_minor)" ]] && return
	grep -qx "$minor" "$root/lines/supported" "$root/lines/preview" ||
		{ echo "line: $minor is not supported: main is $(main_minor), lines/supported lists $(grep -v '^#' "$root/lines/supported" | xargs), lines/preview $(grep -v '^#' "$root/lines/preview" | xargs)" >&2; exit 2; }
	[[ -f $root/lines/$minor/go.mod ]] || { echo "line: lines/$minor/go.mod is missing (hack/pin-kubernetes.sh -line $minor v$minor.Z makes it)" >&2; exit 2; }
}

tags() {
	local minor=${1#1.} main n out=()
	main=$(main_minor)
	if ((minor > ${main#1.})); then
		echo "k8s_next_$1"
		return
	fi
	for ((n = minor + 1; n <= ${main#1.}; n++)); do out+=("k8s_before_1.$n"); done
	(IFS=,; echo "${out[*]}")
}

cmd=${1:-}
case $cmd in
main) main_minor ;;
list) main_minor; grep -v '^#' "$root/lines/supported" ;;
preview) grep -v '^#' "$root/lines/preview" || true ;;
version)
	check "${2:?usage: hack/line.sh version 1.Y}"
	if [[ $2 == "$(main_minor)" ]]; then kube_version "$root/go.mod"; else kube_version "$root/lines/$2/go.mod"; fi ;;
tags)
	check "${2:?usage: hack/line.sh tags 1.Y}"
	tags "$2" ;;
modules)
	# Not check: hack/pin-kubernetes.sh -line writes a new line's go.mod files.
	[[ ${2:?usage: hack/line.sh modules 1.Y} =~ ^1\.[0-9]+$ ]] || { echo "line: '$2' is not a minor version like 1.36" >&2; exit 2; }
	awk -v main="$([[ $2 == "$(main_minor)" ]] && echo 1)" '!/^#/ && (main || $3 != "main") { print $1, $2 }' "$root/lines/modules" ;;
goflags)
	check "${2:?usage: hack/line.sh goflags 1.Y [DIR]}"
	[[ $2 != "$(main_minor)" ]] || exit 0
	dir=${3:-.}
	modfile=$root/lines/$2/$dir/go.mod
	modfile=${modfile//\/.\//\/}
	[[ -f $modfile ]] || { echo "line: $modfile is missing: line $2 does not build the module in $dir" >&2; exit 2; }
	echo "-modfile=$modfile -tags=$(tags "$2")" ;;
*) echo "usage: hack/line.sh main|list|preview|version 1.Y|goflags 1.Y [DIR]|tags 1.Y|modules 1.Y" >&2; exit 2 ;;
esac
