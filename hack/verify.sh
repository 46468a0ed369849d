#!/usr/bin/env bash
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

# The modules of their own, for the node images' third-party binaries,
# containerd 2, upstream's e2e.test, and kwok and the scale plot. build/containerd and
# test/conformance have no code of ours (tool lines, blank imports):
# vetting them would compile all of containerd or every e2e package.
for mod in build/coredns build/containerd test/images test/conformance test/scale; do
	if [[ $mod != build/containerd && $mod != test/conformance ]]; then
		go vet -C "$mod" ./... || { echo "verify: go vet failed in $mod" >&2; fail=1; }
	fi
	(cd "$mod" && go mod tidy -diff >/dev/null) || { echo "verify: $mod/go.mod is not tidy (run go mod tidy in $mod)" >&2; fail=1; }
done

# go.mod must be exactly what pin-kubernetes.sh writes for the pinned version.
kube=$(awk '$1 == "k8s.io/kubernetes" { print $2 }' go.mod)
saved=$(mktemp -d)
trap 'rm -rf "$saved"' EXIT
mkdir -p "$saved/test/images" "$saved/test/conformance" "$saved/test/scale"
cp go.mod go.sum "$saved/"
cp test/images/go.mod test/images/go.sum "$saved/test/images/"
cp test/conformance/go.mod test/conformance/go.sum "$saved/test/conformance/"
cp test/scale/go.mod test/scale/go.sum "$saved/test/scale/"
hack/pin-kubernetes.sh "$kube" >/dev/null
for f in go.mod go.sum test/images/go.mod test/images/go.sum test/conformance/go.mod test/conformance/go.sum test/scale/go.mod test/scale/go.sum; do
	if ! cmp -s "$saved/$f" "$f"; then
		[[ $f != *.mod ]] || diff -u "$saved/$f" "$f" >&2 || true
		echo "verify: $f is not what 'hack/pin-kubernetes.sh $kube' writes (run it and commit the result)" >&2
		cp "$saved/$f" "$f"
		fail=1
	fi
done

# Generated code (deepcopy, conversion, defaults, OpenAPI, protobuf) matches its sources.
hack/verify-codegen.sh || fail=1

# Every registered admission plugin has a row in test/e2e/README.md naming its tests.
go run ./hack/verify-e2e-coverage || fail=1

# No build output in git: no executable binary, no file over 2 MiB.
go run ./hack/verify-tracked-files || fail=1

for script in hack/*.sh .ci/run; do
	bash -n "$script" || { echo "verify: $script has a syntax error" >&2; fail=1; }
done

[[ $fail -eq 0 ]] && echo "verify: ok"
exit "$fail"
