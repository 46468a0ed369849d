#!/usr/bin/env bash
# Copyright 2026 The Turnstile Authors.
# SPDX-License-Identifier: Apache-2.0
# hack/module-dir.sh MODULE: the directory of MODULE at the version the
# current directory's go.mod (or GOFLAGS' -modfile, a line's) pins,
# downloaded first: `go list -m -f {{.Dir}}` prints nothing for a module not
# yet in the module cache, as on a clean machine, and the recipes that read
# upstream's files (pause.c, agnhost's VERSION, kubeadm's constants) would
# then read from /.
set -euo pipefail
go=${GO:-go}
module=${1:?usage: hack/module-dir.sh MODULE}
"$go" mod download "$module"
dir=$("$go" list -m -f '{{.Dir}}' "$module")
[[ -n $dir && -d $dir ]] || { echo "hack/module-dir.sh: $module has no directory in the module cache after go mod download" >&2; exit 1; }
echo "$dir"
