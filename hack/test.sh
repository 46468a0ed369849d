#!/usr/bin/env bash
# make test: every tier in one make, which stops at the first that fails,
# then a table of how long each took, so that the budget (docs/testing.md)
# can be read off every run, CI's included. Each tier writes its end time
# to TIER_LOG (the Makefile's tier_done); a tier's time includes the builds
# it was the first to need, less what hack/precompile.sh compiled for it in
# the background. The tiers that need root (network namespaces,
# a bridge, cgroups) run only as root, and say so otherwise.
set -uo pipefail
make=${MAKE:-make}
tiers=(verify test-unit test-e2e test-line)
if [[ $(id -u) -eq 0 ]]; then
	tiers+=(test-ha test-node test-conformance)
else
	echo "test: SKIPPED make test-ha, test-node and test-conformance: they need root (network namespaces, a bridge, cgroups); run them as root" >&2
fi

log=$(mktemp)
precompile_log=$(mktemp)
pre= watcher=
stop_precompile() {
	[[ -z $watcher ]] || kill "$watcher" 2>/dev/null
	[[ -z $pre ]] || kill -- -"$pre" 2>/dev/null
	wait 2>/dev/null
	pre= watcher=
}
trap 'stop_precompile; rm -f "$log" "$precompile_log"' EXIT
start=$(date +%s)
# The later tiers' packages compile in the background, niced, while the first
# tiers run (hack/precompile.sh); it is stopped when make test-line ends,
# before the tiers whose timings are held to bounds.
nice -n 19 setsid hack/precompile.sh >"$precompile_log" 2>&1 &
pre=$!
(while kill -0 "$pre" 2>/dev/null && ! grep -q '^test-line ' "$log"; do sleep 2; done
	kill -- -"$pre" 2>/dev/null) &
watcher=$!
"$make" --no-print-directory "${tiers[@]}" HA_FLAGS=-short TIER_LOG="$log"
status=$?
end=$(date +%s)
stop_precompile

{
	echo
	echo "test: how long each tier took (s)"
	echo "| tier                   | took   |"
	echo "|------------------------|-------:|"
	previous=$start
	done=0
	while read -r tier at; do
		printf '| make %-17s | %6d |\n' "$tier" $((at - previous))
		previous=$at
		done=$((done + 1))
	done <"$log"
	if ((status != 0)); then
		printf '| make %-17s | %6d |\n' "${tiers[done]:-?} (failed)" $((end - previous))
	fi
	printf '| %-22s | %6d |\n' "total" $((end - start))
	echo
	echo "test: what hack/precompile.sh compiled ahead, in the background:"
	if [[ -s $precompile_log ]]; then sed 's/^/  /' "$precompile_log"; else echo "  nothing finished"; fi
} >&2
exit $status
