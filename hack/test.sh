#!/usr/bin/env bash
# make test: each tier in turn, stopping at the first that fails, then a
# table of how long each took, so that the budget (docs/testing.md) can be
# read off every run, CI's included. The tiers that need root (network
# namespaces, a bridge, cgroups) run only as root, and say so otherwise.
set -uo pipefail
make=${MAKE:-make}
tiers=(verify test-unit test-e2e test-line)
if [[ $(id -u) -eq 0 ]]; then
	tiers+=(test-ha test-node test-conformance)
else
	echo "test: SKIPPED make test-ha, test-node and test-conformance: they need root (network namespaces, a bridge, cgroups); run them as root" >&2
fi

start=$SECONDS
rows=()
failed=
for tier in "${tiers[@]}"; do
	began=$SECONDS
	args=()
	[[ $tier == test-ha ]] && args=(HA_FLAGS=-short)
	"$make" --no-print-directory "$tier" "${args[@]}" || failed=$tier
	rows+=("$(printf '| make %-17s | %6d |' "$tier" $((SECONDS - began)))")
	[[ -n $failed ]] && break
done

{
	echo
	echo "test: how long each tier took (s)"
	echo "| tier                   | took   |"
	echo "|------------------------|-------:|"
	printf '%s\n' "${rows[@]}"
	printf '| %-22s | %6d |\n' "total" $((SECONDS - start))
	[[ -n $failed ]] && echo "test: FAILED in make $failed"
} >&2
[[ -z $failed ]]
