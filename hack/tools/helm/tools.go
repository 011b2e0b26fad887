//go:build tools

// Package tools pins the Helm CLI, which the benchmark (hack/bench) runs as the `helm upgrade --install`
// baseline; its version is the helm.sh/helm/v3 of convoy's own go.mod.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
