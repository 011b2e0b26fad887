package framework

import (
	"context"
	"fmt"
	"os"
	"time"
)

// Run is the body of an e2e package's TestMain: it brings up the package's environment with start
// (bounded by timeout) and stores it in *env, runs tests (m.Run, with whatever the package does
// around it), keeps the work directory and logs when tests returns non-zero, stops the
// environment and returns the code for os.Exit. A failed start is reported under pkg and returns 1.
func Run(pkg string, timeout time.Duration, env **Env, start func(context.Context) (*Env, error), tests func() int) int {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	e, err := start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", pkg, err)
		return 1
	}
	*env = e
	code := tests()
	if code != 0 {
		e.MarkFailed()
	}
	e.Stop()
	return code
}
