#!/usr/bin/env bash
# Fails when anything generated is stale, when gofmt, go vet or go mod tidy would change anything, or
# when govulncheck finds a known vulnerability the code reaches.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fail=0

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -a apis generated manifests "$tmp/"
hack/update-codegen.sh >/dev/null
for d in apis generated manifests/crds; do
  if ! diff -r "$tmp/$d" "$d" >/dev/null; then
    echo "generated files in $d are stale: run make generate" >&2
    diff -r "$tmp/$d" "$d" | head -20 >&2 || true
    fail=1
  fi
done

unformatted=$(gofmt -l $(git ls-files -co --exclude-standard -- '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  fail=1
fi
go vet ./... || fail=1
for mod in . hack/tools hack/tools/kube hack/tools/etcd hack/tools/kwok; do
  (cd "$mod" && go mod tidy -diff >/dev/null) || { echo "go mod tidy would change $mod" >&2; fail=1; }
done
hack/govulncheck.sh || fail=1
exit $fail
