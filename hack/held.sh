#!/usr/bin/env bash
# Copyright 2026 The Turnstile Authors.
# SPDX-License-Identifier: Apache-2.0
# hack/held.sh 1.Y [list]: the held pairs for the next minor 1.Y
# (lines/README.md): files written before 1.Y shipped, with the build
# constraint k8s_next_1.Y (the new minor's file) or !k8s_next_1.Y (the
# current one's). With "list", prints them; otherwise rewrites their
# constraints to the lines' scheme, as when main moves to 1.Y: k8s_next_1.Y
# becomes !k8s_before_1.Y and its negation k8s_before_1.Y, so that main
# builds the new file and the line main leaves the old. make bump and make
# canary run it.
set -euo pipefail
cd "$(dirname "$0")/.."
line=${1:-}
[[ $line =~ ^1\.[0-9]+$ ]] || { echo "usage: hack/held.sh 1.Y [list]" >&2; exit 2; }
tag=k8s_next_${line}
mapfile -t files < <(git grep --untracked -lE "^//go:build !?${tag//./\\.}\$" -- '*.go' || true)
if [[ ${2:-} == list ]]; then
	printf '%s\n' "${files[@]}" | sed '/^$/d'
	exit 0
fi
for f in "${files[@]}"; do
	sed -i -E "s|^//go:build ${tag//./\\.}\$|//go:build !k8s_before_${line}|; s|^//go:build !${tag//./\\.}\$|//go:build k8s_before_${line}|" "$f"
done
echo "held: ${#files[@]} files of the held pairs for $line take the lines' constraints" >&2
