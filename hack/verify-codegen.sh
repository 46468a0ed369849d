#!/usr/bin/env bash
# Copyright 2026 The Turnstile Authors.
# SPDX-License-Identifier: Apache-2.0
# Fails when the generated code (see hack/update-codegen.sh) is not what the
# generators produce from the current sources. It regenerates into a copy of
# the working tree, so the tree itself is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# What update-codegen.sh writes, and what it reads them from.
generated=(pkg/apis pkg/generated pkg/client plugin hack/api-rules-violations.list)

copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
# Tracked and untracked-but-not-ignored files, as they are on disk now.
git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done |
	tar --null -T - -cf - | tar -xf - -C "$copy"

if ! "$copy/hack/update-codegen.sh" >"$copy/.codegen.log" 2>&1; then
	cat "$copy/.codegen.log" >&2
	echo "verify-codegen: hack/update-codegen.sh failed on a copy of the tree" >&2
	exit 1
fi

fail=0
for p in "${generated[@]}"; do
	if [[ -e $root/$p || -e $copy/$p ]] && ! diff -ruN "$root/$p" "$copy/$p" >"$copy/.codegen.diff"; then
		head -n 60 "$copy/.codegen.diff" | sed "s|$copy/||g; s|$root/||g" >&2
		fail=1
	fi
done
if [[ $fail -ne 0 ]]; then
	echo "verify-codegen: generated code is out of date (run hack/update-codegen.sh and commit the result)" >&2
	exit 1
fi
echo "verify-codegen: ok"
