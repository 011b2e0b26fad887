#!/usr/bin/env bash
# Runs every fuzz target for FUZZTIME (default 30s) each, one after another, and fails when any
# finds a failing input. A failing input is written to the package's testdata/fuzz/<target>/, where
# plain `go test` replays it. The committed seed corpora run in every `go test` anyway.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
FUZZTIME=${FUZZTIME:-30s}

# package target
targets=(
  "./pkg/render FuzzRenderManifests"
  "./pkg/render FuzzApplyMutations"
  "./pkg/render FuzzRenderRef"
  "./pkg/renderstore FuzzHistory"
  "./pkg/desired FuzzValueLayers"
  "./pkg/release FuzzPendingRequest"
)

# A target added to pkg/ but not listed above would never run.
listed=$(printf '%s\n' "${targets[@]}" | awk '{print $2}' | sort)
found=$(grep -rhoE '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' --include='*_test.go' pkg | sed -E 's/^func ([A-Za-z0-9_]+).*/\1/' | sort)
if [ "$listed" != "$found" ]; then
  echo "hack/fuzz.sh lists other fuzz targets than pkg/ holds:" >&2
  diff <(echo "$listed") <(echo "$found") >&2 || true
  exit 1
fi

failed=()
for t in "${targets[@]}"; do
  read -r pkg target <<<"$t"
  echo "== $target ($pkg) for $FUZZTIME"
  # -fuzz takes one package and one target; -run '^$' skips the package's other tests.
  if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg"; then
    failed+=("$target ($pkg)")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing found failing inputs (see testdata/fuzz/ of the package):" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "all ${#targets[@]} fuzz targets ran $FUZZTIME each without a failure"
