#!/usr/bin/env bash
# Builds convoy's binaries into bin/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p bin
for cmd in cmd/*/; do
  name=$(basename "$cmd")
  go build -o "bin/$name" "./$cmd"
done
