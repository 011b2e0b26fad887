// Package faults injects faults into a running convoy end to end: the controller killed with
// SIGKILL at random points of a 5-wave sync, a target's API server and a target's etcd stopped
// mid-wave, the render store and the management API server taken away, and a slow link to a
// target. Each scenario must end converged with nothing lost and no orphan, and must show the
// right reason on the Release while the fault lasts. The scenarios run one after another: each
// breaks something shared.
package faults

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kumodo/convoy/e2e/framework"
)

// Targets of the run besides bare and fault: soloTarget stores its cluster in an etcd of its own,
// which the etcd scenario stops.
const (
	soloTarget = "solo"
	// startTimeout bounds bringing up two etcds, four API servers, versitygw and the controller
	// on a busy 2-core machine.
	startTimeout = 5 * time.Minute
)

// env is the environment every scenario of the run shares.
var env *framework.Env

func TestMain(m *testing.M) {
	// The controller runs with its render store on the versitygw S3 server, so the store scenario
	// can take it away by stopping the server.
	if err := os.Setenv("CONVOY_E2E_RENDER_STORE", framework.StoreS3); err != nil {
		fmt.Fprintf(os.Stderr, "e2e/faults: %v\n", err)
		os.Exit(1)
	}
	opts := framework.Options{
		Targets:        []string{framework.TargetBare, framework.TargetFault},
		OwnEtcdTargets: []string{soloTarget},
		// Each round applies and prunes 200 objects: the default target QPS would make the
		// limiter, not the fault, the pace of the 50 SIGKILL rounds, and the harness's 2 s health
		// interval would re-assess every inventory all the time on a 2-core machine.
		Controllers: []framework.ControllerOptions{{Args: []string{"--target-qps=500", "--target-burst=1000", "--health-interval=30s"}}},
	}
	start := func(ctx context.Context) (*framework.Env, error) { return framework.StartWith(ctx, opts) }
	os.Exit(framework.Run("e2e/faults", startTimeout, &env, start, func() int {
		code := m.Run()
		fmt.Print(report.table())
		return code
	}))
}
