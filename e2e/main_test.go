// Package e2e tests convoy end to end: the built controller against real API servers
// started by the framework package once per run.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kumodo/convoy/e2e/framework"
)

// env is the environment every test of the run shares.
var env *framework.Env

// startTimeout bounds bringing up etcd, four API servers, the live components and the
// controller on a busy 2-core machine.
const startTimeout = 5 * time.Minute

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	e, err := framework.Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	env = e
	code := m.Run()
	if code != 0 {
		env.MarkFailed()
	}
	env.Stop()
	os.Exit(code)
}
