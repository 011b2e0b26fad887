#!/usr/bin/env bash
# Builds the kubectl plugin (cmd/kubectl-convoy) and installs it as kubectl-convoy into a directory
# on PATH, so "kubectl convoy ..." finds it. Usage: hack/install-plugin.sh [DIR]
# DIR defaults to $PLUGIN_DIR, then $(go env GOBIN), then $(go env GOPATH)/bin.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dir=${1:-${PLUGIN_DIR:-$(go env GOBIN)}}
if [ -z "$dir" ]; then
  dir="$(go env GOPATH)/bin"
fi
mkdir -p "$dir" bin
go build -o bin/kubectl-convoy ./cmd/kubectl-convoy
install -m 0755 bin/kubectl-convoy "$dir/kubectl-convoy"
echo "installed $dir/kubectl-convoy"
case ":$PATH:" in
  *":$dir:"*) ;;
  *) echo "note: $dir is not on PATH; add it so kubectl finds the plugin" >&2 ;;
esac
