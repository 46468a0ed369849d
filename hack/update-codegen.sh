#!/usr/bin/env bash
# Copyright 2026 The Turnstile Authors.
# SPDX-License-Identifier: Apache-2.0
# Regenerates the code generated from pkg/apis/policy (internal) and
# pkg/apis/policy/v1beta1 (the wire version): deepcopy, conversion, defaulters,
# OpenAPI definitions and protobuf (the API's lifecycle is written by hand:
# pkg/apis/policy/v1beta1/lifecycle.go says why); and from the
# +genclient types of pkg/apis/policy/v1beta1 the typed clientset, listers and
# informers under pkg/client.
#
# Every generator is a go.mod tool line at the version the Kubernetes module
# graph pins (code-generator and kube-openapi as k8s.io/kubernetes pins them), so
# they are built at exactly that version. go-to-protobuf also needs protoc
# (Debian: apt-get install -y protobuf-compiler) and runs protoc-gen-gogo,
# goimports and gofmt from PATH; we build the first two from go.mod too.
#
# hack/verify-codegen.sh runs this script on a copy of the tree and fails when
# the result differs from what is committed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# The generators are those of the oldest supported line (lines/supported):
# client-go, apimachinery and the rest compile code generated for an older
# release (they keep the interfaces it uses), not code generated for a newer
# one (client-gen v0.37 writes discovery.DiscoveryInterfaces, which v0.36
# lacks). So one generated tree serves every line. They are built from that
# line's module graph and run in main's, where they load our packages.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
oldest=$(grep -v '^#' lines/supported | tail -1)
line_flags=()
[[ -z $oldest ]] || read -ra line_flags <<< "$(hack/line.sh goflags "$oldest")"
echo "update-codegen: building the generators${oldest:+ of line $oldest}" >&2
go build "${line_flags[@]}" -o "$work/bin/" \
	k8s.io/code-generator/cmd/{deepcopy-gen,defaulter-gen,conversion-gen,go-to-protobuf,go-to-protobuf/protoc-gen-gogo,client-gen,lister-gen,informer-gen} \
	k8s.io/kube-openapi/cmd/openapi-gen golang.org/x/tools/cmd/goimports
tool() { local name=$1; shift; "$work/bin/$name" "$@"; }

module=github.com/turnstile-k8s/turnstile
internal=$module/pkg/apis/policy
external=$module/pkg/apis/policy/v1beta1
header=hack/boilerplate.go.txt
openapi_dir=pkg/generated/openapi
client_dir=pkg/client

# protoc is the one generator input that is not Go: install Debian's package
# when it is missing.
hack/install-package.sh protoc protobuf-compiler

# Start from nothing, so that output for a type or package that is gone does
# not linger. The generators do not need their old output to run.
# The restored plugins' configuration kinds (pkg/admission/pluginconfig
# registers them; their deep copies are generated like the API's).
mapfile -t plugin_configs < <(find plugin -path '*/apis/v1alpha1' -type d | sort)

find pkg/apis/policy "$openapi_dir" "${plugin_configs[@]}" \( -name 'zz_generated.*.go' -o -name 'generated.pb.go' -o -name 'generated.proto' \) -delete 2>/dev/null || true

echo "update-codegen: deepcopy" >&2
tool deepcopy-gen --go-header-file "$header" --output-file zz_generated.deepcopy.go \
	"$internal" "$external" "${plugin_configs[@]/#/$module/}"

echo "update-codegen: defaulters" >&2
tool defaulter-gen --go-header-file "$header" --output-file zz_generated.defaults.go \
	--extra-peer-dirs k8s.io/api/core/v1 \
	"$external"

echo "update-codegen: conversion" >&2
tool conversion-gen --go-header-file "$header" --output-file zz_generated.conversion.go \
	--extra-peer-dirs k8s.io/kubernetes/pkg/apis/core,k8s.io/kubernetes/pkg/apis/core/v1,k8s.io/apimachinery/pkg/apis/meta/v1,k8s.io/apimachinery/pkg/conversion,k8s.io/apimachinery/pkg/runtime \
	"$external"

echo "update-codegen: openapi" >&2
tool openapi-gen --go-header-file "$header" \
	--output-dir "$openapi_dir" --output-pkg "$module/$openapi_dir" \
	--output-file zz_generated.openapi.go \
	--output-model-name-file zz_generated.model_name.go \
	--report-filename hack/api-rules-violations.list \
	"$external"
perl -pi -e 's{"k8s\.io/([A-Za-z0-9_./-]+)\.([A-Za-z0-9_]+)"}{my ($p, $t) = ($1, $2); $p =~ tr{/}{.}; "\"io.k8s.$p.$t\""}ge' \
	"$openapi_dir/zz_generated.openapi.go"

# go-to-protobuf expects a GOPATH-shaped tree (<output-dir>/<import path>) for
# our package and for the .proto files it imports.
echo "update-codegen: protobuf" >&2
mkdir -p "$work/src/github.com/turnstile-k8s" "$work/src/k8s.io" "$work/src/github.com/gogo"
ln -s "$root" "$work/src/$module"
ln -s "$(hack/module-dir.sh k8s.io/apimachinery)" "$work/src/k8s.io/apimachinery"
ln -s "$(hack/module-dir.sh k8s.io/api)" "$work/src/k8s.io/api"
ln -s "$(hack/module-dir.sh github.com/gogo/protobuf)" "$work/src/github.com/gogo/protobuf"
proto_include=()
for d in /usr/include /usr/local/include; do
	[[ -f $d/google/protobuf/descriptor.proto ]] && proto_include=(--proto-import "$d") && break
done
PATH="$work/bin:$PATH" tool go-to-protobuf --go-header-file "$header" \
	--output-dir "$work/src" "${proto_include[@]}" \
	--packages "$external" \
	--apimachinery-packages '-k8s.io/apimachinery/pkg/util/intstr,-k8s.io/apimachinery/pkg/api/resource,-k8s.io/apimachinery/pkg/runtime/schema,-k8s.io/apimachinery/pkg/runtime,-k8s.io/apimachinery/pkg/apis/meta/v1,-k8s.io/api/core/v1'

# The clientset, listers and informers for policy/v1beta1. The group is
# "policy", as upstream's; the clientset is our own
# (pkg/client/clientset/versioned), so PolicyV1beta1() there only has
# PodSecurityPolicies(), and its scheme registers our v1beta1 types. The
# types have protobuf code, so the client prefers protobuf over JSON.
# Hand-written files under pkg/client (doc.go, tests) are kept: only the
# files a generator wrote are deleted first.
echo "update-codegen: clientset, listers, informers" >&2
for gen in client-gen lister-gen informer-gen; do
	[[ -d $client_dir ]] || break
	{ grep -rlZ --include='*.go' "^// Code generated by $gen. DO NOT EDIT.\$" "$client_dir" || true; } | xargs -0r rm -f
done
tool client-gen --go-header-file "$header" \
	--output-dir "$client_dir/clientset" --output-pkg "$module/$client_dir/clientset" \
	--clientset-name versioned \
	--input-base "$module/pkg/apis" --input policy/v1beta1 \
	--prefers-protobuf
tool lister-gen --go-header-file "$header" \
	--output-dir "$client_dir/listers" --output-pkg "$module/$client_dir/listers" \
	"$external"
tool informer-gen --go-header-file "$header" \
	--output-dir "$client_dir/informers" --output-pkg "$module/$client_dir/informers" \
	--versioned-clientset-package "$module/$client_dir/clientset/versioned" \
	--listers-package "$module/$client_dir/listers" \
	"$external"
# Directories the generators no longer write into.
find "$client_dir" -mindepth 1 -type d -empty -delete

echo "update-codegen: done" >&2
