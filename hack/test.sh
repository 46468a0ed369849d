#!/usr/bin/env bash
# Copyright 2026 The Turnstile Authors.
# SPDX-License-Identifier: Apache-2.0
# make test: every tier, stopping at the first that fails, then a table of
# how long each took, so that the budget (docs/testing.md) can be read off
# every run, CI's included. Each tier writes its end time to TIER_LOG (the
# Makefile's tier_done); a tier's time includes the builds it was the first
# to need, less what hack/precompile.sh compiled for it in the background.
# The tiers that need root (network namespaces, a bridge, cgroups) run only
# as root, and say so otherwise.
#
# As root, the older lines' tier runs beside make test-node and then make
# test-conformance, in a session of its own at the lowest priority: the real
# nodes leave more than half of the CPU idle while pods start and stop, and
# the line's tier is compiling, unit tests and e2e checks that assert nothing
# about time. Every other
# tier runs alone: make test-ha measures outages, and the e2e suite has
# tests about time.
set -uo pipefail
make=${MAKE:-make}
root=false
[[ $(id -u) -eq 0 ]] && root=true
if $root; then
	first=(test-binaries verify test-unit test-e2e test-cost test-ha)
else
	first=(test-binaries verify test-unit test-e2e test-cost test-line)
	echo "test: SKIPPED make test-ha, test-node and test-conformance: they need root (network namespaces, a bridge, cgroups); run them as root" >&2
fi

log=$(mktemp) line_log=$(mktemp) line_out=$(mktemp) precompile_log=$(mktemp)
pre= watcher= line=
stop_precompile() {
	[[ -z $watcher ]] || kill "$watcher" 2>/dev/null
	[[ -z $pre ]] || kill -- -"$pre" 2>/dev/null
	[[ -z $pre$watcher ]] || wait $pre $watcher 2>/dev/null
	pre= watcher=
}
stop_line() {
	[[ -z $line ]] || { kill -- -"$line" 2>/dev/null; wait "$line" 2>/dev/null; }
	line=
}
trap 'stop_precompile; stop_line; rm -f "$log" "$line_log" "$line_out" "$precompile_log"' EXIT
start=$(date +%s)
# The later tiers' packages compile in the background, niced, while the first
# tiers run (hack/precompile.sh); it is stopped when the last tier before
# make test-ha (or, without root, make test-line) ends.
nice -n 19 setsid hack/precompile.sh >"$precompile_log" 2>&1 &
pre=$!
last=${first[-1]}
$root && last=test-e2e
(while kill -0 "$pre" 2>/dev/null && ! grep -q "^$last " "$log"; do sleep 2; done
	kill -- -"$pre" 2>/dev/null) &
watcher=$!
# The binaries first, two links at a time (the Makefile's TEST_BINARIES).
"$make" -j2 --no-print-directory test-binaries TIER_LOG="$log" &&
	"$make" --no-print-directory "${first[@]:1}" HA_FLAGS=-short TIER_LOG="$log"
status=$?
stop_precompile
first_end=$(date +%s)

# Rows of the table after the first make's: "name seconds".
rows=()
if $root && ((status == 0)); then
	echo "test: make test-line runs beside make test-node and make test-conformance, at the lowest priority; its output follows when all have ended" >&2
	line_start=$(date +%s)
	# setsid: a session, and so a scheduling autogroup, of its own, whose
	# nice is what makes it yield to the real nodes' tiers.
	setsid bash -c 'echo 19 > /proc/self/autogroup 2>/dev/null; exec "$@"' line \
		"$make" --no-print-directory test-line TIER_LOG="$line_log" >"$line_out" 2>&1 &
	line=$!
	"$make" --no-print-directory test-node TIER_LOG="$log"
	status=$?
	node_end=$(date +%s)
	rows+=("test-node$( ((status == 0)) || echo ' (failed)') $((node_end - first_end))")
	if ((status == 0)); then
		"$make" --no-print-directory test-conformance TIER_LOG="$log"
		status=$?
		rows+=("test-conformance$( ((status == 0)) || echo ' (failed)') $(($(date +%s) - node_end))")
	fi
	wait "$line"
	line_status=$?
	line=
	waited=$(date +%s)
	echo "test: make test-line, beside make test-node and make test-conformance:" >&2
	cat "$line_out"
	line_end=$(awk '$1 == "test-line" {print $2}' "$line_log")
	if ((line_status == 0)); then
		rows+=("test-line (beside) $((line_end - line_start))")
	else
		rows+=("test-line (failed) $((waited - line_start))")
	fi
	((status != 0)) || status=$line_status
fi
end=$(date +%s)

{
	echo
	echo "test: how long each tier took (s)"
	echo "| tier                           | took   |"
	echo "|--------------------------------|-------:|"
	previous=$start
	done=0
	while read -r tier at && ((done < ${#first[@]})); do
		printf '| make %-25s | %6d |\n' "$tier" $((at - previous))
		previous=$at
		done=$((done + 1))
	done <"$log"
	if ((done < ${#first[@]})); then
		printf '| make %-25s | %6d |\n' "${first[done]} (failed)" $((first_end - previous))
	fi
	for row in "${rows[@]}"; do
		printf '| make %-25s | %6d |\n' "${row% *}" "${row##* }"
	done
	printf '| %-30s | %6d |\n' "total" $((end - start))
	echo
	echo "test: what hack/precompile.sh compiled ahead, in the background:"
	if [[ -s $precompile_log ]]; then sed 's/^/  /' "$precompile_log"; else echo "  nothing finished"; fi
} >&2
exit $status
