#!/usr/bin/env bash
# Builds the control-plane binaries the e2e harness runs (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kwok), the kubectl the demo runs and the helm CLI the
# benchmark runs (hack/bench) from the Go module proxy into bin/, and writes bin/kwok-stages.yaml
# (kwok's fast stages plus hack/tools/kwok/convoy-e2e-stages.yaml). Without arguments it builds all
# but helm.
# Usage: hack/build-test-bins.sh [etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|kwok|kwok-stages|versitygw|helm]...
# A binary is rebuilt only when its tools module changed (stamp file); the Go build cache
# makes a rebuild cheap anyway.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/bin"
mkdir -p "$bin"
kv=v1.37.2
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $p.gitVersion=$kv -X $p.gitMajor=1 -X $p.gitMinor=37 -X $p.gitTreeState=clean"
done

# build DIR PKG NAME [LDFLAGS]: build PKG from the tools module DIR into bin/NAME unless up to date.
build() {
  local dir=$1 pkg=$2 name=$3 flags=${4:-"-s -w"}
  local stamp="$bin/.$name.stamp" sum
  sum=$(cat "$root/hack/tools/$dir/go.mod" "$root/hack/tools/$dir/go.sum" | sha256sum | cut -c1-16)
  if [ -x "$bin/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$sum" ]; then return; fi
  echo ">> building $name" >&2
  (cd "$root/hack/tools/$dir" && go build -trimpath -ldflags "$flags" -o "$bin/$name" "$pkg")
  echo "$sum" > "$stamp"
}

# kwok_stages writes bin/kwok-stages.yaml: kwok has no built-in stages, so concatenate the
# ones we need from the kwok module in the cache (never copied into this repository) and the
# harness's own stages (bad pods stay unready, failing Jobs fail).
kwok_stages() {
  local dir out="$bin/kwok-stages.yaml" tmp f first=1
  dir=$(cd "$root/hack/tools/kwok" && go mod download sigs.k8s.io/kwok && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  tmp=$(mktemp "$bin/.kwok-stages.XXXXXX")
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    [ $first = 1 ] || echo "---" >> "$tmp"
    first=0
    cat "$dir/kustomize/stage/$f" >> "$tmp"
  done
  echo "---" >> "$tmp"
  cat "$root/hack/tools/kwok/convoy-e2e-stages.yaml" >> "$tmp"
  chmod 644 "$tmp"
  mv "$tmp" "$out"
}

# helm's version, stamped into the binary as its own release build does: the tools module's
# helm.sh/helm/v3, which is the one convoy's go.mod uses.
helm_ldflags() {
  local v
  v=$(cd "$root/hack/tools/helm" && go list -m -f '{{.Version}}' helm.sh/helm/v3)
  echo "-s -w -X helm.sh/helm/v3/internal/version.version=$v -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
}

# helm only on request (make bench): no test runs it, and a cold build of it takes 3 minutes.
want=${*:-etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok versitygw}
for b in $want; do
  case $b in
    etcd) build etcd . etcd ;;
    kube-apiserver|kube-controller-manager|kube-scheduler|kubectl) build kube "k8s.io/kubernetes/cmd/$b" "$b" "$ldflags" ;;
    kwok) build kwok sigs.k8s.io/kwok/cmd/kwok kwok; kwok_stages ;;
    kwok-stages) kwok_stages ;;
    versitygw) build versitygw github.com/versity/versitygw/cmd/versitygw versitygw ;;
    helm) build helm helm.sh/helm/v3/cmd/helm helm "$(helm_ldflags)" ;;
    *) echo "unknown binary $b" >&2; exit 1 ;;
  esac
done
