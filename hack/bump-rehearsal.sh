#!/usr/bin/env bash
# Copyright 2026 The Turnstile Authors.
# SPDX-License-Identifier: Apache-2.0
# make test-bump: make bump's passing path, rehearsed before upstream ships
# the release it will be used for. It makes the next patch of an older line
# (LINE=, default the newest older line) out of the one the line pins: the
# same sources of k8s.io/kubernetes and of every staging module, re-versioned
# (v1.Y.Z+1, v0.Y.Z+1) and served by a module proxy from a local directory,
# ahead of the real proxy for everything else. Then, in a clone of this
# repository, it runs `make bump LINE=1.Y VERSION=v1.Y.Z+1` and checks that
# the gate ran and passed, that the bump was committed with every pin and
# every doc's version moved, and that the report lists what changed.
#
# The rehearsal leaves this repository as it found it: the bump happens in
# the clone, the re-versioned modules live in a module cache of the
# rehearsal's own (the real one also serves as a local proxy, so nothing
# already downloaded is fetched again), and both are removed at the end. The
# build cache is shared: its entries are keyed by content, and the
# re-versioned modules' paths differ from any release's. The report is kept
# in _output/bump-rehearsal/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

line=${LINE:-$(grep -v '^#' lines/supported | head -1)}
grep -qx "$line" lines/supported || { echo "bump-rehearsal: LINE=$line is not an older line (lines/supported)" >&2; exit 2; }
old=$(hack/line.sh version "$line")
[[ $old =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "bump-rehearsal: line $line pins $old, not a v1.Y.Z release" >&2; exit 2; }
minor=${BASH_REMATCH[1]} patch=${BASH_REMATCH[2]}

work=$(mktemp -d "${TMPDIR:-/tmp}/bump-rehearsal.XXXXXX")
cleanup() { chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
real_cache=$(go env GOMODCACHE)

# The rehearsal's version: the first patch after the line's that the module
# proxy does not serve (when it serves one, that is a real bump to make).
new=
for ((p = patch + 1; p <= patch + 20; p++)); do
	if ! (cd "$work" && go mod download -json "k8s.io/kubernetes@v1.$minor.$p" >/dev/null 2>&1); then
		new=v1.$minor.$p
		break
	fi
	echo "bump-rehearsal: the proxy serves k8s.io/kubernetes@v1.$minor.$p: run make bump LINE=$line VERSION=v1.$minor.$p for real" >&2
done
[[ -n $new ]] || { echo "bump-rehearsal: found no patch of $line the proxy lacks" >&2; exit 1; }
old_staging=v0.$minor.$patch new_staging=v0.${new#v1.}
echo "bump-rehearsal: line $line: $old re-versioned as $new, served from $work/proxy" >&2

# reversion MODULE FROM TO: the module's FROM source and go.mod, as TO, in
# the local proxy's layout (<module>/@v/<version>.{info,mod,zip}, list).
proxy=$work/proxy
reversion() {
	local module=$1 from=$2 to=$3 info dir mod
	# A staging module the proxy does not serve (sample-controller, say) is
	# in no module graph of ours: nothing to re-version.
	if ! info=$(cd "$work" && go mod download -json "$module@$from" 2>&1); then
		echo "bump-rehearsal: $module@$from is not served by the module proxy; not re-versioned" >&2
		return 0
	fi
	dir=$(echo "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	mod=$(echo "$info" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
	[[ -d $dir && -f $mod ]] || { echo "bump-rehearsal: no source of $module@$from in the module cache" >&2; exit 1; }
	mkdir -p "$proxy/$module/@v"
	cp "$mod" "$proxy/$module/@v/$to.mod"
	printf '{"Version":"%s","Time":"%s"}\n' "$to" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$proxy/$module/@v/$to.info"
	echo "$to" >> "$proxy/$module/@v/list"
	python3 - "$dir" "$module@$to" "$proxy/$module/@v/$to.zip" <<'EOF'
import os, sys, zipfile
src, prefix, out = sys.argv[1:]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for base, dirs, files in os.walk(src):
        dirs.sort()
        for f in sorted(files):
            path = os.path.join(base, f)
            z.write(path, prefix + "/" + os.path.relpath(path, src))
EOF
}
upstream_mod=$(cd "$work" && go mod download -json "k8s.io/kubernetes@$old" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
mapfile -t staging < <(awk '$2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }' "$upstream_mod" | sort -u)
reversion k8s.io/kubernetes "$old" "$new"
for m in "${staging[@]}"; do reversion "$m" "$old_staging" "$new_staging"; done
echo "bump-rehearsal: k8s.io/kubernetes and $(($(ls "$proxy/k8s.io" | wc -l) - 1)) of ${#staging[@]} staging modules re-versioned" >&2

# The clone, and what its docs say before the bump.
git clone -q "$root" "$work/repo"
head_before=$(git rev-parse HEAD) status_before=$(git status --porcelain)
cd "$work/repo"
mapfile -t docs_with_old < <(git grep -l -E "\\b(${old//./\\.}|${old_staging//./\\.})\\b" -- '*.md')
[[ ${#docs_with_old[@]} -gt 0 ]] || { echo "bump-rehearsal: no doc names $old, so the rehearsal could not show the docs move" >&2; exit 1; }

export GOMODCACHE=$work/modcache
export GOPROXY="file://$proxy,file://$real_cache/cache/download,https://proxy.golang.org"
# The re-versioned modules are in no checksum database; go.sum records them.
export GONOSUMDB=k8s.io GOFLAGS="${GOFLAGS:-} -modcacherw"
start=$(date +%s)
set +e
make --no-print-directory bump LINE="$line" VERSION="$new" 2>&1 | tee "$work/bump.log" | sed 's/^/bump-rehearsal: | /' >&2
status=${PIPESTATUS[0]}
set -e
took=$(($(date +%s) - start))
mkdir -p "$root/_output/bump-rehearsal"
report=_output/bump/$new.md
[[ ! -f $report ]] || cp "$report" "$root/_output/bump-rehearsal/$new.md"
cp "$work/bump.log" "$root/_output/bump-rehearsal/bump.log"

# What must hold.
fail=0
problem() { echo "bump-rehearsal: FAIL: $*" >&2; fail=1; }
[[ $status -eq 0 ]] || problem "make bump exited $status"
grep -q 'bump: the gate passed; committed' "$work/bump.log" || problem "make bump did not say it committed"
subject=$(git log -1 --format=%s)
[[ $subject == "bump: line $line from $old to $new"* ]] || problem "the last commit is \"$subject\", not the bump's"
[[ $(hack/line.sh version "$line") == "$new" ]] || problem "hack/line.sh version $line says $(hack/line.sh version "$line"), not $new"
# The modules pinned to the release (lines/modules); CoreDNS's is kubeadm's.
for f in $(hack/line.sh modules "$line" | awk '$2 == "kubernetes" { print "lines/'"$line"'/" $1 "/go.mod" }' | sed 's|/\./|/|'); do
	grep -q "k8s.io/api => k8s.io/api $new_staging" "$f" || problem "$f does not replace k8s.io/api with $new_staging"
	# The replaces decide which staging modules build; a require may keep
	# the version a dependency asks for.
	! grep -q "=> k8s.io/[a-z-]* $old_staging\\b" "$f" || problem "$f still replaces a staging module with $old_staging"
done
grep -qE "^\s*k8s\.io/kubernetes $new\b" "lines/$line/go.mod" || problem "lines/$line/go.mod does not require k8s.io/kubernetes $new"
left=$(git grep -n -E "\\b(${old//./\\.}|${old_staging//./\\.})\\b" -- '*.md' || true)
[[ -z $left ]] || problem "docs still name $old: $left"
for d in "${docs_with_old[@]}"; do
	grep -q -E "\\b(${new//./\\.}|${new_staging//./\\.})\\b" "$d" || problem "$d named $old and does not name $new"
	git show --stat --format= HEAD -- "$d" | grep -q . || problem "$d is not in the bump's commit"
done
[[ -z $(git status --porcelain --untracked-files=no) ]] || problem "the bump left uncommitted changes: $(git status --porcelain --untracked-files=no)"
if [[ -f $report ]]; then
	grep -q '^\*\*Gate passed.\*\*' "$report" || problem "$report does not say the gate passed"
	grep -q '^- test-line: passed' "$report" || problem "$report does not list the gate's test-line as passed"
	grep -q "^Unchanged: [0-9]* plugins" "$report" || problem "$report does not compare upstream's plugin order"
	grep -q "k8s.io/kubernetes $new and its staging modules at $new_staging" "$report" || problem "$report does not list the pins"
	grep -q '^Flags removed' "$report" || problem "$report does not compare kube-apiserver's flags"
else
	problem "make bump wrote no report ($report)"
fi
cd "$root"
[[ $(git rev-parse HEAD) == "$head_before" && $(git status --porcelain) == "$status_before" ]] ||
	problem "this repository changed during the rehearsal"

if [[ $fail -ne 0 ]]; then
	echo "bump-rehearsal: FAILED after ${took}s; make bump's log and report are in _output/bump-rehearsal/" >&2
	exit 1
fi
echo "bump-rehearsal: PASS in ${took}s: make bump LINE=$line VERSION=$new ran the gate (test-line), committed \"$subject\" with the pins and ${#docs_with_old[@]} docs moved; its report is _output/bump-rehearsal/$new.md"
