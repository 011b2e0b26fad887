#!/usr/bin/env bash
# Runs the unit tests (pure logic and fake clients) and the e2e tests (real API servers started by
# e2e/framework from the binaries in bin/). Usage: hack/test.sh [unit|e2e] (default: both).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
what=${1:-all}
if [ "$what" = all ] || [ "$what" = unit ]; then
  go test -count=1 ./apis/... ./pkg/... ./cmd/... ./hack/demo/...
fi
if [ "$what" = all ] || [ "$what" = e2e ]; then
  # One e2e package at a time: each starts its own API servers and controllers, and the sharding
  # suite measures lease failover, which a neighbour's load would distort.
  rc=0
  for pkg in $(go list ./e2e/...); do
    go test -count=1 -timeout 40m "$pkg" ${E2E_ARGS:-} || rc=1
  done
  exit $rc
fi
