#!/usr/bin/env bash
# Copyright 2026 The Turnstile Authors.
# SPDX-License-Identifier: Apache-2.0
# Pins k8s.io/kubernetes to one release and every k8s.io staging module to the
# matching v0.Y.Z, by reading the replace block of that release's own go.mod.
# Upstream's go.mod replaces each staging module with ./staging/src/...; as a
# dependency those paths do not exist, so we replace them with the published
# tags instead.
#
#   hack/pin-kubernetes.sh vX.Y.Z              main's line: the go.mod files of the
#                                              modules lines/modules lists
#   hack/pin-kubernetes.sh -line 1.Y v1.Y.Z    an older line (lines/README.md): its
#                                              modules' go.mod files under lines/1.Y/
#   hack/pin-kubernetes.sh -anchor v1.24.Z     test/psp124/go.mod: v1.24's own
#                                              PodSecurityPolicy, which make bench-psp
#                                              measures ours against
#
# Running it twice with the same version changes nothing.
set -euo pipefail

usage() { echo "usage: hack/pin-kubernetes.sh [-line 1.Y | -anchor] vX.Y.Z (for example v1.37.2, -line 1.36 v1.36.5, or -anchor v1.24.17)" >&2; exit 2; }
line= anchor=
if [[ ${1:-} == -anchor ]]; then
	anchor=1
	shift
elif [[ ${1:-} == -line ]]; then
	[[ $# -ge 2 ]] || usage
	line=$2
	shift 2
fi
[[ $# -eq 1 ]] || usage
version=$1
[[ $version =~ ^v1\.([0-9]+)\.([0-9]+)(-(alpha|beta|rc)\.[0-9]+)?$ ]] ||
	{ echo "pin-kubernetes: version '$version' is not of the form v1.Y.Z (or v1.Y.Z-alpha|beta|rc.N)" >&2; usage; }
staging_version="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}${BASH_REMATCH[3]}"
if [[ -n $line && $line != "1.${BASH_REMATCH[1]}" ]]; then
	echo "pin-kubernetes: $version is not a release of line $line" >&2
	exit 2
fi

cd "$(dirname "$0")/.."
root=$PWD
if [[ -n $line ]] && ! grep -qx "$line" lines/supported lines/preview; then
	echo "pin-kubernetes: $line is not in lines/supported or lines/preview; add it there (and make lines/$line/ from main's go.mod files) first" >&2
	exit 2
fi

# Download outside our module so that go.sum is only touched by 'go mod tidy'.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! info=$(cd "$tmp" && go mod download -json "k8s.io/kubernetes@${version}" 2>&1); then
	echo "pin-kubernetes: cannot download k8s.io/kubernetes@${version}:" >&2
	echo "$info" | sed -n 's/^[[:space:]]*"Error": "\(.*\)",*$/  \1/p' >&2
	exit 1
fi
upstream_mod=$(echo "$info" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
upstream_dir=$(echo "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -f $upstream_mod && -d $upstream_dir ]] || { echo "pin-kubernetes: no go.mod or source for k8s.io/kubernetes@${version} in the module cache" >&2; exit 1; }

# Staging modules are the left-hand sides of upstream's '=> ./staging/...' replaces.
mapfile -t staging < <(awk '$2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }' "$upstream_mod" | sort -u)
[[ ${#staging[@]} -gt 0 ]] || { echo "pin-kubernetes: no staging replaces found in $upstream_mod" >&2; exit 1; }

# pin DIR [staging-only]: pins the module in DIR: its own go.mod on main's
# line, lines/<line>/DIR/go.mod (used with -modfile) on an older one. With
# staging-only, the module gets the staging replaces but no
# k8s.io/kubernetes requirement (test/scale builds kwok, which imports only
# the staging modules).
pin() {
	local dir=$1 edits=() old mod modfile tidy_flags=()
	modfile=$root/$dir/go.mod
	if [[ -n $line ]]; then
		modfile=$root/lines/$line/$dir/go.mod
		mkdir -p "$(dirname "$modfile")"
		# A new line starts from main's requirements.
		[[ -f $modfile ]] || cp "$root/$dir/go.mod" "$modfile"
		[[ -f ${modfile%.mod}.sum ]] || cp "$root/$dir/go.sum" "${modfile%.mod}.sum"
		# The tree's newest code also imports what only main's release has
		# (a new API version, say); the line's graph is upstream's release
		# all the same, and building the line proves what it compiles.
		tidy_flags=("-modfile=$modfile")
	fi
	[[ ${2:-} == staging-only ]] || edits+=("-require=k8s.io/kubernetes@${version}")
	# Drop every k8s.io replace we had, so modules upstream removed do not linger.
	while read -r old; do
		edits+=("-dropreplace=$old")
	done < <(go mod edit -json "$modfile" | awk -F'"' '/"Old": \{/ { getline; if ($4 ~ /^k8s\.io\//) print $4 }')
	# On a line, k8s.io/kubernetes is replaced too, so that tidy -e cannot
	# move it to a release that has a package main's code imports.
	[[ -z $line || ${2:-} == staging-only ]] || edits+=("-replace=k8s.io/kubernetes=k8s.io/kubernetes@${version}")
	for mod in "${staging[@]}"; do
		edits+=("-replace=${mod}=${mod}@${staging_version}")
	done
	go mod edit "${edits[@]}" "$modfile"
	# tidy takes every build tag as set, so it also loads the held files of
	# the next minor (hack/held.sh), whose imports may exist only there; and
	# on a line, the tree's main-only imports, named above. tidy -e goes on
	# past them and prints what it could not resolve, kept out of sight
	# here: a package the build really lacks fails make verify's go vet.
	# PIN_PARTIAL=1 (make canary), for a pre-release of which the module
	# proxy serves only part, prints all.
	if [[ -n ${PIN_PARTIAL:-} && -z $line ]]; then
		(cd "$dir" && go mod tidy -e)
	else
		(cd "$dir" && go mod tidy -e ${tidy_flags[@]+"${tidy_flags[@]}"} 2> >(grep -v -e '^go: finding module' -e 'but does not contain package' -e '^	' -e 'imports$' -e 'tested by$' >&2 || true))
	fi
}

# test/conformance/e2e.go imports what upstream's test/e2e/e2e_test.go
# imports (its test sources come and go between releases), so that tidy keeps
# every module e2e.test needs; written from main's release. An older line's
# conformance module is tidied from the same file with -e: the packages its
# release has and main's does not are in module k8s.io/kubernetes, which it
# requires anyway.
write_conformance_imports() {
	local e2e_test="$upstream_dir/test/e2e/e2e_test.go" out=test/conformance/e2e.go imports
	[[ -f $e2e_test ]] || { echo "pin-kubernetes: no $e2e_test in the module cache" >&2; exit 1; }
	imports=$(awk '/^import \(/ { in_imports = 1; next } in_imports && /^\)/ { exit }
		in_imports { for (i = 1; i <= NF; i++) if ($i ~ /^"[^"]+"$/) print $i }' "$e2e_test" |
		grep -E '^"(k8s\.io/kubernetes/|github\.com/|go\.yaml\.in/)' | sort -u | sed 's/^/\t_ /')
	[[ -n $imports ]] || { echo "pin-kubernetes: no imports read from $e2e_test" >&2; exit 1; }
	{
		sed -n '1,/^package conformance$/p' "$out"
		printf '\nimport (\n\t_ "k8s.io/kubernetes/test/e2e"\n%s\n)\n' "$imports"
	} > "$out.tmp"
	mv "$out.tmp" "$out"
	gofmt -w "$out"
}

# The anchor: v1.24's PodSecurityPolicy plugin and RBAC authorizer, in a
# module of their own so that main's graph stays its release's.
if [[ -n $anchor ]]; then
	pin test/psp124
	echo "pinned test/psp124 to k8s.io/kubernetes ${version} and ${#staging[@]} staging modules at ${staging_version}"
	exit 0
fi

# The modules lines/modules lists: the main module; test/images, a module
# of its own for upstream's e2e image binaries (agnhost); test/conformance,
# one for upstream's e2e.test; and test/scale (main's line only), one for
# kwok and the scale benchmark's plot. Their test-only dependency graphs
# stay out of our go.mod but must build against the same Kubernetes.
pinned=() staging_only=()
while read -r dir kind; do
	file=${dir#.}/go.mod
	case $kind in
	kubernetes)
		[[ -n $line || $dir != test/conformance ]] || write_conformance_imports
		pin "$dir"
		pinned+=("${file#/}") ;;
	staging)
		pin "$dir" staging-only
		staging_only+=("${file#/}") ;;
	esac
done < <(hack/line.sh modules "${line:-$(hack/line.sh main)}")
list() { local out=$1; shift; for f in "$@"; do out+=", $f"; done; echo "$out"; }
if [[ -z $line ]]; then
	echo "pinned k8s.io/kubernetes ${version} and ${#staging[@]} staging modules at ${staging_version} ($(list "${pinned[@]}")${staging_only[*]:+; staging only in $(list "${staging_only[@]}")})"
else
	echo "pinned line $line to k8s.io/kubernetes ${version} and ${#staging[@]} staging modules at ${staging_version} (lines/$line: $(list "${pinned[@]}"))"
fi
