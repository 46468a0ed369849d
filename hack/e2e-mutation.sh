#!/usr/bin/env bash
# Copyright 2026 The Turnstile Authors.
# SPDX-License-Identifier: Apache-2.0
# Shows that the e2e suite can fail for each admission plugin: for every row
# of the coverage table in test/e2e/README.md, it runs the tests the row
# names with that plugin switched off in every apiserver the tests start
# (TURNSTILE_E2E_WITHOUT_PLUGIN), and expects them to fail. A plugin whose
# tests still pass is reported, and the script exits non-zero.
#
# Usage: hack/e2e-mutation.sh [plugin ...]    (default: every row)
# Needs the binaries of `make test-e2e`; `make test-mutation` builds them.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$PWD/_output/bin
out=_output/mutation
mkdir -p "$out"

go test -c -o "$out/e2e.test" -ldflags "$(hack/ldflags.sh upstream)" ./test/e2e

# "Name<TAB>ref ref ..." for each row of the "## Admission controllers" table.
rows=$(awk -F'|' '
	/^## / { in_table = ($0 == "## Admission controllers"); next }
	in_table && /^\| / && !/^\| controller / && !/^\|---/ {
		name = $2; gsub(/[ `]/, "", name)
		refs = ""; cell = $(NF-1)
		while (match(cell, /`Test[^`]*`/)) { refs = refs " " substr(cell, RSTART+1, RLENGTH-2); cell = substr(cell, RSTART+RLENGTH) }
		print name "\t" refs
	}' test/e2e/README.md)

# pattern turns TestA/sub/x into ^TestA$/^sub$/^x$ for -test.run.
pattern() { sed -E 's#[^/]+#^&$#g' <<<"$1"; }

survivors=()
while IFS=$'\t' read -r plugin refs; do
	if [[ $# -gt 0 ]] && ! printf '%s\n' "$@" | grep -qx "$plugin"; then
		continue
	fi
	red=""
	for ref in $refs; do
		log="$out/$plugin.$(tr '/' '_' <<<"$ref").log"
		start=$SECONDS
		if (cd test/e2e && TURNSTILE_BIN_DIR=$bin TURNSTILE_E2E_WITHOUT_PLUGIN=$plugin \
			"../../$out/e2e.test" -test.run "$(pattern "$ref")" -test.count 1 -test.timeout 15m) >"$log" 2>&1; then
			echo "  $plugin: $ref still passes ($((SECONDS - start))s)"
		else
			red=$ref
			echo "$plugin: red ($ref failed in $((SECONDS - start))s; $log)"
			break
		fi
	done
	if [[ -z $red ]]; then
		survivors+=("$plugin")
		echo "$plugin: STILL GREEN without the plugin"
	fi
done <<<"$rows"

if [[ ${#survivors[@]} -gt 0 ]]; then
	echo "mutation: the tests of ${survivors[*]} pass with the plugin off" >&2
	exit 1
fi
echo "mutation: every plugin's tests fail when it is off"
