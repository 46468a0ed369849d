#!/usr/bin/env bash
# Copyright 2026 The Turnstile Authors.
# SPDX-License-Identifier: Apache-2.0
# make bump LINE=1.Y VERSION=v1.Y.Z: moves one Kubernetes line (lines/README.md)
# to an upstream release, everywhere, and keeps the move only if the gate
# passes.
#
#   LINE=main's minor,  VERSION=v1.<main>.Z     main to a new patch release
#   LINE=an older line, VERSION=v1.<line>.Z     that line to a new patch release
#   LINE=main's minor+1, VERSION=v1.<main+1>.Z  main to the next minor; the
#                                               minor it leaves becomes an
#                                               older line (lines/<old>/)
#
# It pins k8s.io/kubernetes and the staging modules (hack/pin-kubernetes.sh),
# moves CoreDNS to the version that release's kubeadm deploys and etcd up to
# the one it pins (never down), and the line's version in every doc (make verify refuses a
# doc that names a version no line pins);
# then runs the gate: the line's unit tests (PodSecurityPolicy's v1.24
# decision cases among them), the cost guard (make test-cost: allocations
# and etcd requests per pod create against upstream's) and, on main, the
# e2e tier and, as root, the conformance tier; an older line's tier is make
# test-line. It writes
# _output/bump/<version>.md: upstream's admission plugins and their order,
# kube-apiserver's flags and feature gates, and the [Conformance] spec count,
# each before and after; what our code failed to compile against; which
# checks failed.
#
# The tree must be clean. A bump that passes is committed; one that fails
# restores every file it changed (KEEP=1 leaves them, to fix and commit by
# hand). A line already at VERSION changes nothing. BUMP_GATE=compile only
# vets and builds; BUMP_NO_COMMIT=1
# leaves a passing bump uncommitted. BUMP_GATE=unit runs vet, the build and
# the unit tests only (make canary's default).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

usage() { echo "usage: make bump LINE=1.Y VERSION=v1.Y.Z" >&2; exit 2; }
line=${1:-}
version=${2:-}
[[ -n $line && -n $version ]] || usage
[[ $version =~ ^v1\.([0-9]+)\.([0-9]+)(-(alpha|beta|rc)\.[0-9]+)?$ ]] ||
	{ echo "bump: VERSION '$version' is not v1.Y.Z (or v1.Y.Z-beta.N)" >&2; usage; }
vminor="1.${BASH_REMATCH[1]}"
[[ $vminor == "$line" ]] || { echo "bump: $version is not a release of line $line" >&2; exit 2; }

main=$(hack/line.sh main)
mode=
if [[ $line == "$main" ]]; then
	mode=main-patch
elif [[ ${line#1.} -eq $((${main#1.} + 1)) ]]; then
	mode=main-minor
elif grep -qx "$line" lines/supported; then
	mode=line-patch
else
	echo "bump: line $line is neither main's ($main), the next minor, nor in lines/supported ($(grep -v '^#' lines/supported | xargs))" >&2
	exit 2
fi

if [[ -n $(git status --porcelain --untracked-files=no) && -z ${BUMP_ALLOW_DIRTY:-} ]]; then
	echo "bump: the tree has uncommitted changes; commit or stash them first, so that the bump is a commit of its own" >&2
	exit 2
fi

out=_output/bump
mkdir -p "$out"
report=$root/$out/$version.md
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The release must exist before anything changes.
if ! info=$(cd "$work" && go mod download -json "k8s.io/kubernetes@$version" 2>&1); then
	echo "bump: the Go module proxy does not serve k8s.io/kubernetes@$version:" >&2
	echo "$info" | sed -n 's/^[[:space:]]*"Error": "\(.*\)",*$/  \1/p' >&2
	echo "bump: nothing changed" >&2
	exit 1
fi
new_dir=$(echo "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')

# Where the line's go.mod files are, and its version now.
# gomods LINE [PREFIX]: the go.mod file of each module of LINE
# (lines/modules), under PREFIX (lines/1.Y/ for an older line's).
gomods() {
	local dir f
	while read -r dir _; do
		f=${2:-}$dir/go.mod
		f=${f//\/.\//\/}
		echo "${f#./}"
	done < <(hack/line.sh modules "$1")
}
if [[ $mode == line-patch ]]; then
	old=$(hack/line.sh version "$line")
	mapfile -t gomods < <(gomods "$line" "lines/$line/")
	line_flags=$(hack/line.sh goflags "$line")
else
	old=$(hack/line.sh version "$main")
	mapfile -t gomods < <(gomods "$main")
	line_flags=
fi
if [[ $old == "$version" ]]; then
	echo "bump: line $line is at $version already; nothing changed"
	exit 0
fi
old_dir=$(cd "$work" && go mod download -json "k8s.io/kubernetes@$old" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
echo "bump: line $line ($mode) from $old to $version" >&2

# What upstream has, read from its source.
plugins() { # the recommended admission plugin order
	awk '/^var AllOrderedPlugins = /{on=1; next} on && /^}/{exit} on && /PluginName,/{ sub(/.*\/\/ */, ""); sub(/[;,. ].*/, ""); print }' "$1/pkg/kubeapiserver/options/plugins.go"
}
conformance_count() {
	grep -c '^- testname:' "$1/test/conformance/testdata/conformance.yaml" || true
}
kubeadm_const() {
	sed -n "s/^\t$2 = \"\(.*\)\"\$/\1/p" "$1/cmd/kubeadm/app/constants/constants.go"
}
# Every file the bump may change, saved so that a failed gate can restore it:
# the docs among them, since a patch bump moves the version in every doc
# (make verify refuses one that names a version no line pins).
mapfile -t docs < <(git ls-files '*.md')
# Held pairs (lines/README.md): files written for the next minor before it
# shipped, whose constraints a move of main to it rewrites.
held=()
[[ $mode != main-minor ]] || mapfile -t held < <(hack/held.sh "$line" list)
touched=("${gomods[@]}" "${gomods[@]/%.mod/.sum}" test/etcdutl/go.mod test/etcdutl/go.sum lines/supported lines/preview lines/README.md test/conformance/e2e.go "${docs[@]}" "${held[@]}")
# A preview of the minor main moves to is removed (restore puts it back).
if [[ $mode == main-minor && -d lines/$line ]]; then
	while IFS= read -r f; do touched+=("$f"); done < <(git ls-files "lines/$line")
fi
for f in "${touched[@]}"; do
	[[ -f $f ]] || continue
	mkdir -p "$work/saved/$(dirname "$f")"
	cp "$f" "$work/saved/$f"
done
restore() {
	for f in "${touched[@]}"; do
		if [[ -f $work/saved/$f ]]; then cp "$work/saved/$f" "$f"; else rm -f "$f"; fi
	done
	[[ $mode != main-minor ]] || rm -rf "lines/$main"
}

# 1. The pins, and the held pairs' constraints: k8s_next_1.Y (the next
# minor's file) becomes the line scheme's !k8s_before_1.Y, and its
# counterpart the old line's k8s_before_1.Y.
[[ $mode != main-minor ]] || hack/held.sh "$line"
# The preview of the minor main moves to (lines/preview) is main now.
if [[ $mode == main-minor ]] && grep -qx "$line" lines/preview; then
	rm -rf "lines/$line"
	sed -i "/^${line//./\\.}\$/d" lines/preview
fi
if [[ $mode == main-minor ]]; then
	# The minor main leaves stays supported as an older line, from the
	# go.mod files it has now of the modules an older line has (those of
	# any minor but main's: $line, the next).
	mkdir -p "lines/$main"
	while read -r d _; do
		mkdir -p "lines/$main/$d"
		cp "$d/go.mod" "$d/go.sum" "lines/$main/$d/"
	done < <(hack/line.sh modules "$line")
	{ grep '^#' lines/supported; echo "$main"; grep -v '^#' lines/supported; } > lines/supported.tmp && mv lines/supported.tmp lines/supported
fi
pin_log=$work/pin.log
if [[ $mode == line-patch ]]; then
	pin=(hack/pin-kubernetes.sh -line "$line" "$version")
else
	pin=(hack/pin-kubernetes.sh "$version")
fi
failed=()
errors=$work/compile.txt
: > "$errors"
coredns_want=$(kubeadm_const "$new_dir" CoreDNSVersion)
etcd_want=$(kubeadm_const "$new_dir" DefaultEtcdVersion)
etcd_want=v${etcd_want%-*}
# A pin that fails (a module of the release the proxy does not serve, say)
# skips to the report, which names what is missing.
if ! "${pin[@]}" > "$pin_log" 2>&1; then
	grep -v '^go: downloading' "$pin_log" | tail -20 >&2
	echo "bump: ${pin[*]} failed" >&2
	failed=(pin)
fi

if [[ ${#failed[@]} -eq 0 ]]; then
# 2. CoreDNS as the release's kubeadm deploys it; etcd as it pins it.
coredns_flags=
[[ $mode != line-patch ]] || coredns_flags=$(hack/line.sh goflags "$line" build/coredns)
(cd build/coredns && GOFLAGS="-trimpath $coredns_flags" go get "github.com/coredns/coredns@$coredns_want" && GOFLAGS="-trimpath $coredns_flags" go mod tidy) > "$work/coredns.log" 2>&1 ||
	{ cat "$work/coredns.log" >&2; restore; echo "bump: CoreDNS $coredns_want (kubeadm's) could not be pinned; nothing changed" >&2; exit 1; }
etcd_have=$(GOFLAGS="-trimpath $line_flags" go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
# Up to kubeadm's etcd, never down: a line may pin a newer patch than its
# release's kubeadm for a security fix (SECURITY.md), which make vulncheck
# in the gate would otherwise refuse (make test-bump found it).
if [[ $etcd_have != "$etcd_want" && $(printf '%s
' "$etcd_have" "$etcd_want" | sort -V | tail -1) == "$etcd_want" ]]; then
	(GOFLAGS="-trimpath $line_flags" go get "go.etcd.io/etcd/server/v3@$etcd_want" && GOFLAGS="-trimpath $line_flags" go mod tidy ${line_flags:+-e}) > "$work/etcd.log" 2>&1 ||
		{ cat "$work/etcd.log" >&2; restore; echo "bump: etcd $etcd_want (kubeadm's) could not be pinned; nothing changed" >&2; exit 1; }
	etcd_pinned=$etcd_want
else
	etcd_pinned=$etcd_have
fi
# make test-ha-kubeadm's etcdutl follows main's etcd (make verify checks it).
if [[ -z $line_flags ]]; then
	(cd test/etcdutl && GOFLAGS=-trimpath go get -tool "go.etcd.io/etcd/etcdutl/v3@$etcd_pinned" && GOFLAGS=-trimpath go mod tidy) > "$work/etcdutl.log" 2>&1 ||
		{ cat "$work/etcdutl.log" >&2; restore; echo "bump: etcdutl $etcd_pinned could not be pinned in test/etcdutl; nothing changed" >&2; exit 1; }
fi

# 3. The version strings that say what is true now. A patch release
# replaces the line's old one everywhere, the staging modules' v0.Y.Z too;
# a new minor leaves the old version to the line it becomes, and moves
# only what the README says of main.
old_staging=v0.${old#v1.} new_staging=v0.${version#v1.}
if [[ $mode == main-minor ]]; then
	sed -i "s/\bv${old#v}\b/$version/g; s/\b${old_staging//./\\.}\b/$new_staging/g" README.md
	sed -i "s/| main | $old |/| main | $version |/" lines/README.md
else
	sed -i "s/\b${old//./\\.}\b/$version/g; s/\b${old_staging//./\\.}\b/$new_staging/g" "${docs[@]}"
fi
[[ $mode == line-patch ]] || sed -i "s|k8s.io/kubernetes $old)|k8s.io/kubernetes $version)|" lines/README.md
# The component versions' page is written from the go.mod files just moved.
go run ./cmd/verify-docs -write
if [[ $mode == main-minor ]]; then
	# $main is an older line now: go.mod names $line main's.
	files=$(gomods "$main" | sed 's/.*/`&`/' | paste -sd, - | sed 's/,/, /g')
	sed -i "/^| main | $version |/a | $main | $old | \`lines/$main/\`: $files |" lines/README.md
fi

# 4. The gate.
gate_line=$line
run() { # run NAME COMMAND...: one check of the gate, its output in the log
	local name=$1; shift
	echo "bump: gate: $name" >&2
	if ! "$@" > "$work/$name.log" 2>&1; then
		failed+=("$name")
		tail -40 "$work/$name.log" >&2
	fi
}
flags=$(hack/line.sh goflags "$gate_line")
run vet env GOFLAGS="-trimpath $flags" go vet ./...
grep -E '^[a-z].*\.go:[0-9]+:[0-9]+: ' "$work/vet.log" | sed 's/^vet: //' | sort -u > "$errors" || true
if [[ ${BUMP_GATE:-full} == compile ]]; then
	run build make --no-print-directory build tools LINE="$gate_line"
elif [[ ${BUMP_GATE:-full} == unit ]]; then
	run build make --no-print-directory build LINE="$gate_line"
	run test-unit env GOFLAGS="-trimpath $flags" go test -count=1 $(GOFLAGS="-trimpath $flags" go list ./... | grep -v /test/e2e)
elif [[ $mode == line-patch ]]; then
	run test-line make --no-print-directory test-line LINE="$line"
	run test-cost make --no-print-directory test-cost LINE="$line"
else
	run test-unit make --no-print-directory test-unit
	run test-e2e make --no-print-directory test-e2e
	run test-cost make --no-print-directory test-cost
	if [[ $(id -u) -eq 0 ]]; then run test-conformance make --no-print-directory test-conformance; fi
fi

fi

# 5. The report.
upstream_help() { # upstream_help NAME GOFLAGS: vanilla kube-apiserver's -h, built with GOFLAGS
	local bin=$work/kube-apiserver-$1
	if (cd "$root" && GOFLAGS="-trimpath $2" go build -o "$bin" k8s.io/kubernetes/cmd/kube-apiserver) 2>/dev/null; then
		"$bin" -h 2>&1 || true
	fi
}
# The release before is built from the go.mod the bump started from.
old_flags="-modfile=$work/saved/${gomods[0]}"
[[ $mode != line-patch ]] || old_flags+=" -tags=$(hack/line.sh tags "$line")"
{
	echo "# Bump of line $line: $old to $version"
	echo
	echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), from $(git rev-parse --short HEAD). Gate: ${BUMP_GATE:-full}."
	echo
	if [[ ${#failed[@]} -eq 0 ]]; then echo "**Gate passed.**"; else echo "**Gate failed:** ${failed[*]}."; fi
	echo
	echo "## Upstream's admission plugins (recommended order)"
	echo
	diff <(plugins "$old_dir") <(plugins "$new_dir") > "$work/plugins.diff" && echo "Unchanged: $(plugins "$new_dir" | wc -l) plugins." || {
		echo "$(plugins "$old_dir" | wc -l) before, $(plugins "$new_dir" | wc -l) after; removed (<) and added (>):"
		echo; echo '```'; grep '^[<>]' "$work/plugins.diff"; echo '```'
	}
	echo
	echo "## [Conformance] specs"
	echo
	echo "$(conformance_count "$old_dir") in $old, $(conformance_count "$new_dir") in $version (test/conformance/testdata/conformance.yaml)."
	echo
	echo "## kube-apiserver flags and feature gates"
	echo
	: > "$work/new-help.txt"
	upstream_help old "$old_flags" > "$work/old-help.txt"
	[[ ${failed[*]} == pin ]] || upstream_help new "$flags" > "$work/new-help.txt"
	if [[ -s $work/old-help.txt && -s $work/new-help.txt ]]; then
		flagnames() { grep -oE '^ +--[a-z0-9-]+' "$1" | tr -d ' ' | sort -u; }
		gates() { grep -oE '^ +[A-Z][A-Za-z0-9]+=true\|false \([A-Z]+' "$1" | sed -E 's/^ +//; s/=true\|false \(/ (/; s/$/)/' | sort -u; }
		echo "Flags removed (<) and added (>):"; echo; echo '```'; diff <(flagnames "$work/old-help.txt") <(flagnames "$work/new-help.txt") | grep '^[<>]' || echo "(none)"; echo '```'
		echo
		echo "Feature gates removed or changed stage (<) and added or changed stage (>); passing a removed gate stops the apiserver:"
		echo; echo '```'; diff <(gates "$work/old-help.txt") <(gates "$work/new-help.txt") | grep '^[<>]' || echo "(none)"; echo '```'
	else
		echo "Not compared: upstream's kube-apiserver of one of the two releases did not build here."
	fi
	echo
	if [[ ${failed[*]} == pin ]]; then
		echo "## What the Go module proxy does not serve"
		echo
		echo "hack/pin-kubernetes.sh could not tidy the modules against $version; these modules, at the versions the release requires, could not be had:"
		echo
		grep -oE '[A-Za-z0-9./_-]+@v[^: ]+: reading [^ ]+: [0-9]{3}' "$pin_log" | sed -E 's/: reading [^ ]+: / (HTTP /; s/$/)/' | sort -u | sed 's/^/- /'
		echo
	fi
	echo "## What our code did not compile against"
	echo
	if [[ ${failed[*]} == pin ]]; then
		echo "Not compiled: the pins failed."
	elif [[ -s $errors ]]; then echo '```'; cat "$errors"; echo '```'; else echo "Nothing: the tree compiles against $version."; fi
	echo
	echo "Each API change the tree absorbs is a file pair named after its release (lines/README.md); today:"
	echo
	git ls-files '*_k8s1.*.go' '*_before_k8s1.*.go' | sed 's/^/- /'
	echo
	if [[ ${failed[*]} == pin ]]; then echo "## What the bump would pin"; else echo "## Pinned"; fi
	echo
	echo "- k8s.io/kubernetes $version and its staging modules at v0.${version#v1.}"
	echo "- CoreDNS $coredns_want (kubeadm's), etcd ${etcd_pinned:-$etcd_want} (kubeadm's: $etcd_want)"
	echo
	echo "## Checks"
	echo
	for log in "$work"/*.log; do
		name=$(basename "$log" .log)
		case $name in coredns | etcd) continue ;; esac
		if [[ " ${failed[*]} " == *" $name "* ]]; then echo "- $name: failed"; else echo "- $name: passed"; fi
	done
} > "$report"
echo "bump: wrote $report" >&2

if [[ ${#failed[@]} -gt 0 ]]; then
	if [[ -n ${KEEP:-} ]]; then
		echo "bump: the gate failed (${failed[*]}); KEEP=1 leaves the changes in the tree" >&2
	else
		restore
		echo "bump: the gate failed (${failed[*]}); every file is as it was (KEEP=1 keeps the changes to work on)" >&2
	fi
	exit 1
fi
if [[ -n ${BUMP_NO_COMMIT:-} ]]; then
	echo "bump: the gate passed; the changes are left uncommitted (BUMP_NO_COMMIT)" >&2
	exit 0
fi
new_line=()
[[ $mode != main-minor ]] || new_line=("lines/$main")
git add -A -- "${touched[@]}" "${new_line[@]}"
git commit -q -m "bump: line $line from $old to $version (make bump; gate passed, $out/$version.md)"
echo "bump: the gate passed; committed $(git rev-parse --short HEAD)" >&2
