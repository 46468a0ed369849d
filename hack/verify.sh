#!/usr/bin/env bash
# Copyright 2026 The Turnstile Authors.
# SPDX-License-Identifier: Apache-2.0
# The checks behind `make verify`. Each failure says what to run to fix it.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0

unformatted=$(git ls-files --cached --others --exclude-standard -- '*.go' | xargs -r gofmt -l)
if [[ -n $unformatted ]]; then
	echo "verify: gofmt would change these files (run gofmt -w):" >&2
	echo "$unformatted" | sed 's/^/  /' >&2
	fail=1
fi

go vet ./... || { echo "verify: go vet failed" >&2; fail=1; }

# Every module of its own (each go.mod but the root's, the older lines' and
# test data's), tidy and vetted, so that a new module is checked without
# being listed here. Two kinds are left out, by name:
# - no code of ours (tool lines, blank imports): vetting them would compile
#   all of containerd or every e2e package; they are only tidied;
# - make test-release's to check: cmd/publish (cosign) and test/registry,
#   whose graphs are 4 GB of downloads on a cold cache.
no_vet=" build/containerd test/conformance test/etcdutl test/krew "
release_only=" cmd/publish test/registry "
for mod in $(git ls-files '*go.mod' | grep -v -e '^go.mod$' -e '^lines/' -e '/testdata/' | xargs -n1 dirname); do
	[[ $release_only != *" $mod "* ]] || continue
	if [[ $no_vet != *" $mod "* ]]; then
		go vet -C "$mod" ./... || { echo "verify: go vet failed in $mod" >&2; fail=1; }
	fi
	(cd "$mod" && go mod tidy -diff >/dev/null) || { echo "verify: $mod/go.mod is not tidy (run go mod tidy in $mod)" >&2; fail=1; }
done

# Every line's go.mod files must be exactly what pin-kubernetes.sh writes
# for its pinned version: main's in the tree, an older line's in lines/1.Y/.
saved=$(mktemp -d)
trap 'rm -rf "$saved"' EXIT
for line in $(hack/line.sh list); do
	prefix=lines/$line/
	pin=(hack/pin-kubernetes.sh -line "$line" "$(hack/line.sh version "$line")")
	if [[ $line == "$(hack/line.sh main)" ]]; then
		prefix=
		pin=(hack/pin-kubernetes.sh "$(hack/line.sh version "$line")")
	fi
	files=()
	while read -r dir kind; do
		[[ $kind != coredns ]] || continue
		f=$prefix$dir/go.mod
		f=${f//\/.\//\/}
		f=${f#./}
		files+=("$f" "${f%.mod}.sum")
	done < <(hack/line.sh modules "$line")
	for f in "${files[@]}"; do mkdir -p "$saved/$(dirname "$f")" && cp "$f" "$saved/$f"; done
	"${pin[@]}" >/dev/null
	for f in "${files[@]}"; do
		if ! cmp -s "$saved/$f" "$f"; then
			[[ $f != *.mod ]] || diff -u "$saved/$f" "$f" >&2 || true
			echo "verify: $f is not what '${pin[*]}' writes (run it and commit the result)" >&2
			cp "$saved/$f" "$f"
			fail=1
		fi
	done
done

# Each older line compiles the tree (test/e2e aside: it exercises main's
# APIs; lines/README.md) and its modules that pin-kubernetes.sh does not pin
# (CoreDNS's, lines/modules) are tidy.
for line in $(grep -v '^#' lines/supported); do
	flags=$(hack/line.sh goflags "$line")
	# shellcheck disable=SC2046
	GOFLAGS="${GOFLAGS:-} $flags" go vet $(GOFLAGS="${GOFLAGS:-} $flags" go list ./... | grep -v /test/e2e) ||
		{ echo "verify: go vet failed on line $line" >&2; fail=1; }
	while read -r dir kind; do
		[[ $kind == coredns ]] || continue
		mod_flags=$(hack/line.sh goflags "$line" "$dir")
		(cd "$dir" && GOFLAGS="${GOFLAGS:-} $mod_flags" go mod tidy -diff >/dev/null) ||
			{ echo "verify: lines/$line/$dir/go.mod is not tidy (run GOFLAGS=-modfile=\$PWD/lines/$line/$dir/go.mod go mod tidy in $dir)" >&2; fail=1; }
	done < <(hack/line.sh modules "$line")
done

# Generated code (deepcopy, conversion, defaults, OpenAPI, protobuf) matches its sources.
hack/verify-codegen.sh || fail=1

etcd=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
etcdutl=$(go list -C test/etcdutl -m -f '{{.Version}}' go.etcd.io/etcd/etcdutl/v3)
[[ $etcd == "$etcdutl" ]] ||
	{ echo "verify: test/etcdutl builds etcdutl $etcdutl, go.mod etcd $etcd (run go get -tool go.etcd.io/etcd/etcdutl/v3@$etcd in test/etcdutl)" >&2; fail=1; }

# Every registered admission plugin has a row in test/e2e/README.md naming its tests.
go run ./cmd/verify-e2e-coverage || fail=1

# Every file of a line pair (NAME_k8s1.N.go, NAME_before_k8s1.N.go) is named
# in lines/README.md's table of where the lines differ.
for f in $(git ls-files '*_k8s1.*.go' '*_before_k8s1.*.go'); do
	stem=${f%%_k8s1.*}
	stem=${stem%_before}
	grep -qF "\`${stem}_" lines/README.md ||
		{ echo "verify: $f is a line pair's file that lines/README.md's table does not name (add its row: the upstream change, the files)" >&2; fail=1; }
done

# No build output in git: no executable binary, no file over 2 MiB.
go run ./cmd/verify-tracked-files || fail=1

# Every source file carries the license header (LICENSE, NOTICE).
go run ./cmd/verify-boilerplate || fail=1

for script in hack/*.sh .ci/run; do
	bash -n "$script" || { echo "verify: $script has a syntax error" >&2; fail=1; }
done

[[ $fail -eq 0 ]] && echo "verify: ok"
exit "$fail"
