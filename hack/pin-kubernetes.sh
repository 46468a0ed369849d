#!/usr/bin/env bash
# Pins k8s.io/kubernetes to one release and every k8s.io staging module to the
# matching v0.Y.Z, by reading the replace block of that release's own go.mod.
# Upstream's go.mod replaces each staging module with ./staging/src/...; as a
# dependency those paths do not exist, so we replace them with the published
# tags instead, in our go.mod, test/images/go.mod, test/conformance/go.mod and
# test/scale/go.mod.
# Running it twice with the same version changes nothing.
set -euo pipefail

usage() { echo "usage: hack/pin-kubernetes.sh vX.Y.Z (for example v1.36.3)" >&2; exit 2; }
[[ $# -eq 1 ]] || usage
version=$1
[[ $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "pin-kubernetes: version '$version' is not of the form v1.Y.Z" >&2; usage; }
staging_version="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"

cd "$(dirname "$0")/.."

# Download outside our module so that go.sum is only touched by 'go mod tidy'.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! info=$(cd "$tmp" && go mod download -json "k8s.io/kubernetes@${version}" 2>&1); then
	echo "pin-kubernetes: cannot download k8s.io/kubernetes@${version}:" >&2
	echo "$info" | sed -n 's/^[[:space:]]*"Error": "\(.*\)",*$/  \1/p' >&2
	exit 1
fi
upstream_mod=$(echo "$info" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
[[ -f $upstream_mod ]] || { echo "pin-kubernetes: no go.mod for k8s.io/kubernetes@${version} in the module cache" >&2; exit 1; }

# Staging modules are the left-hand sides of upstream's '=> ./staging/...' replaces.
mapfile -t staging < <(awk '$2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }' "$upstream_mod" | sort -u)
[[ ${#staging[@]} -gt 0 ]] || { echo "pin-kubernetes: no staging replaces found in $upstream_mod" >&2; exit 1; }

# The main module; test/images, a module of its own for upstream's e2e
# image binaries (agnhost); test/conformance, one for upstream's e2e.test;
# and test/scale, one for kwok and the scale benchmark's plot.
# Their test-only dependency graphs stay out of our go.mod but must build
# against the same Kubernetes.
# pin DIR [staging-only]: with staging-only, the module gets the staging
# replaces but no k8s.io/kubernetes requirement (test/scale builds kwok, which
# imports only the staging modules).
pin() {
	local dir=$1 edits=() old mod
	[[ ${2:-} == staging-only ]] || edits+=("-require=k8s.io/kubernetes@${version}")
	# Drop every k8s.io replace we had, so modules upstream removed do not linger.
	while read -r old; do
		edits+=("-dropreplace=$old")
	done < <(cd "$dir" && go mod edit -json | awk -F'"' '/"Old": \{/ { getline; if ($4 ~ /^k8s\.io\//) print $4 }')
	for mod in "${staging[@]}"; do
		edits+=("-replace=${mod}=${mod}@${staging_version}")
	done
	(cd "$dir" && go mod edit "${edits[@]}" && go mod tidy)
}
pin .
pin test/images
pin test/conformance
pin test/scale staging-only
echo "pinned k8s.io/kubernetes ${version} and ${#staging[@]} staging modules at ${staging_version} (go.mod, test/images/go.mod, test/conformance/go.mod; staging only in test/scale/go.mod)"
