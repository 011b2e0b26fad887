#!/usr/bin/env bash
# Regenerates everything derived from apis/: deepcopy, the clientset with apply configurations,
# listers and informers (k8s.io/code-generator's kube_codegen.sh) into generated/, and the CRD YAML
# (controller-gen) into manifests/crds/. The generators are pinned in hack/tools/go.mod.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
module=github.com/kumodo/convoy
export GOBIN="$root/bin/codegen"
mkdir -p "$GOBIN"

codegen_root=$(cd "$root/hack/tools" && go mod download k8s.io/code-generator && go list -m -f "{{.Dir}}" k8s.io/code-generator)
# shellcheck source=/dev/null
source "$codegen_root/kube_codegen.sh"

kube::codegen::gen_helpers \
  --boilerplate "$root/hack/boilerplate.go.txt" \
  "$root/apis"

rm -rf "$root/generated"
kube::codegen::gen_client \
  --with-watch \
  --with-applyconfig \
  --output-dir "$root/generated" \
  --output-pkg "$module/generated" \
  --boilerplate "$root/hack/boilerplate.go.txt" \
  "$root/apis"

(cd "$root/hack/tools" && go build -o "$GOBIN/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen)
rm -rf "$root/manifests/crds"
(cd "$root" && "$GOBIN/controller-gen" crd paths=./apis/... output:crd:artifacts:config=manifests/crds)
