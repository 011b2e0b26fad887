// Package manifests checks the install manifests of manifests/ against a real kube-apiserver:
// the kustomization is built with kustomize's krusty and every object is sent with server-side
// apply and dryRun=All, so the API server validates and defaults it without storing it. Only
// etcd and the management API server run (framework.StartManagementOnly). `make
// manifests-check` runs this package.
package manifests

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kumodo/convoy/e2e/framework"
)

// env is the API server every test of the run shares.
var env *framework.Env

// startTimeout bounds bringing up etcd and one API server on a busy 2-core machine.
const startTimeout = 2 * time.Minute

func TestMain(m *testing.M) {
	// `go test ./e2e/...` runs this package beside the e2e suite: never share its work dir.
	var opts framework.Options
	if dir := os.Getenv("CONVOY_E2E_WORKDIR"); dir != "" {
		opts.WorkDir = filepath.Join(dir, "manifests")
	}
	start := func(ctx context.Context) (*framework.Env, error) { return framework.StartManagementOnly(ctx, opts) }
	os.Exit(framework.Run("e2e/manifests", startTimeout, &env, start, m.Run))
}
