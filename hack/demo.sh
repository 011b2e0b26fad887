#!/usr/bin/env bash
# Runs the demo (hack/demo): a management and a target cluster on 127.0.0.1 with convoy, and the
# sample Release applied with kubectl. Needs `make build test-bins` first (make demo does both).
# On a terminal it stays up until Ctrl-C; otherwise it stops after showing the result.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p bin
go build -o bin/convoy-demo ./hack/demo
# exec: the demo gets the terminal's signals and stdin directly, and stops its children itself.
exec bin/convoy-demo "$@"
