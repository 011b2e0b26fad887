#!/usr/bin/env bash
# Checks the main module for known vulnerabilities with govulncheck, offline. The only network
# this project has is the Go module proxy, which cannot reach vuln.go.dev, so the database is built
# locally: the golang.org/x/vulndb module carries every Go advisory as OSV JSON in data/osv, and its
# own cmd/indexdb writes them in the layout govulncheck reads with -db file://. Fails when the code
# calls a vulnerable function.
#
#   GOVULNCHECK_VERSION  golang.org/x/vuln release govulncheck is installed from (pinned).
#   INDEXDB_VERSION      golang.org/x/vulndb version cmd/indexdb is installed from (pinned).
#   VULNDB_VERSION       golang.org/x/vulndb version the advisories come from. Default latest, so
#                        new advisories count without a change here; set a pseudo-version to
#                        repeat an earlier check.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
GOVULNCHECK_VERSION=${GOVULNCHECK_VERSION:-v1.9.0}
INDEXDB_VERSION=${INDEXDB_VERSION:-v0.0.0-20261105234957-e22db6528018}
VULNDB_VERSION=${VULNDB_VERSION:-latest}
bin=$root/bin
mkdir -p "$bin"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# install NAME PACKAGE VERSION builds a tool into bin/ unless that version, built by this Go, is
# already there: govulncheck type-checks the standard library of the Go that runs it, which only a
# govulncheck built by that Go release can read.
install() {
  local name=$1 pkg=$2 version=$3 stamp="$bin/.$1.version" built
  built="$version $(go env GOVERSION)"
  if [ -x "$bin/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$built" ]; then
    return
  fi
  echo "installing $pkg@$version into bin/"
  GOBIN=$bin go install "$pkg@$version"
  echo "$built" >"$stamp"
}
install govulncheck golang.org/x/vuln/cmd/govulncheck "$GOVULNCHECK_VERSION"
install indexdb golang.org/x/vulndb/cmd/indexdb "$INDEXDB_VERSION"

# Download the advisories outside the main module, so its go.mod and go.sum stay as they are.
info=$(cd "$tmp" && go mod download -json "golang.org/x/vulndb@$VULNDB_VERSION")
field() { sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}$/\1/p" <<<"$info"; }
version=$(field Version)
osv=$(field Dir)/data/osv
if [ -z "$version" ] || [ ! -d "$osv" ]; then
  echo "golang.org/x/vulndb@$VULNDB_VERSION holds no data/osv:" >&2
  echo "$info" >&2
  exit 1
fi

# Index them once per version; an older database is removed.
db=$bin/vulndb/$version
if [ ! -f "$db/index/db.json" ]; then
  rm -rf "$bin/vulndb"
  mkdir -p "$bin/vulndb"
  "$bin/indexdb" -vulns "$osv" -out "$tmp/db"
  mv "$tmp/db" "$db"
fi

echo "govulncheck $GOVULNCHECK_VERSION, vulnerability data golang.org/x/vulndb@$version ($(find "$db/ID" -name '*.json' | wc -l) advisories)"
"$bin/govulncheck" -db "file://$db" ./...
