#!/usr/bin/env bash
# Copyright 2026 The Turnstile Authors.
# SPDX-License-Identifier: Apache-2.0
# Prints the -ldflags that stamp a binary's version, the way upstream's
# release build does, on both component-base and client-go.
#   hack/ldflags.sh turnstile   v1.37.2+turnstile.N  (our kube-apiserver)
#   hack/ldflags.sh upstream    v1.37.2              (vanilla baseline and tools)
# The version is the k8s.io/kubernetes of the module graph the go command
# sees: an older line's when GOFLAGS names its go.mod (make LINE=1.Y).
# N is TURNSTILE_RELEASE (default 1): our release count on one upstream version.
# A build with Go's FIPS 140-3 module (GOFIPS140 set and not off, as make
# release FIPS=1 sets it) appends .fips: v1.37.2+turnstile.N.fips, so that
# --version, /version and the image tag say which module the binary has.
# The build date is the last commit's, so rebuilding the same commit is
# reproducible and does not relink; SOURCE_DATE_EPOCH overrides it.
set -euo pipefail
cd "$(dirname "$0")/.."

flavour=${1:?usage: hack/ldflags.sh turnstile|upstream}
kube=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
[[ $kube =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+(-(alpha|beta|rc)\.[0-9]+)?$ ]] || { echo "ldflags: k8s.io/kubernetes version '$kube' is not vX.Y.Z" >&2; exit 1; }
major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]}
release=${TURNSTILE_RELEASE:-1}
fips=
[[ -z ${GOFIPS140:-} || $GOFIPS140 == off ]] || fips=.fips
[[ $release =~ ^[1-9][0-9]*$ ]] || { echo "ldflags: TURNSTILE_RELEASE '$release' is not a positive integer" >&2; exit 1; }

case $flavour in
turnstile) version="${kube}+turnstile.${release}${fips}" ;;
upstream) version=$kube ;;
*) echo "ldflags: unknown flavour '$flavour' (want turnstile or upstream)" >&2; exit 2 ;;
esac

commit=$(git rev-parse --verify -q HEAD 2>/dev/null || echo unknown)
tree=clean
[[ -z $(git status --porcelain --untracked-files=no 2>/dev/null) ]] || tree=dirty
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
date=$(date -u -d "@${epoch}" +%Y-%m-%dT%H:%M:%SZ)

flags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	flags+=" -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor} -X ${pkg}.gitVersion=${version}"
	flags+=" -X ${pkg}.gitCommit=${commit} -X ${pkg}.gitTreeState=${tree} -X ${pkg}.buildDate=${date}"
done
echo "$flags"
