// Package e2e tests convoy end to end: the built controller against real API servers
// started by the framework package once per run.
package e2e

import (
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
	os.Exit(framework.Run("e2e", startTimeout, &env, framework.Start, m.Run))
}
