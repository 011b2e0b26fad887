// Package badinput feeds convoy a corpus of bad input and tenant-isolation violations, end to end:
// each must give a clear reason and message on the Release and an Event, must not crash the
// controller, and must delete nothing that an earlier good render applied.
package badinput

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kumodo/convoy/e2e/framework"
)

// Limits of the controller of this run: fetches time out quickly, so a source that never ends
// fails within the test, and an unpacked chart may hold 16 MiB, so a tar bomb stays small.
const (
	fetchTimeout     = 15 * time.Second
	maxUnpackedBytes = 16 << 20
	// startTimeout bounds bringing up etcd, three API servers, the live components and the
	// controller on a busy 2-core machine.
	startTimeout = 5 * time.Minute
	// defaultParallel is the number of parallel tests when -test.parallel is not given: the
	// cases mostly wait for the controller.
	defaultParallel = 6
)

// env is the environment every test of the run shares.
var env *framework.Env

// controllerPID is the controller's process id after the start; checkController compares it.
var controllerPID int

func TestMain(m *testing.M) {
	flag.Parse()
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		_ = flag.Set("test.parallel", strconv.Itoa(defaultParallel))
	}
	opts := framework.Options{
		Targets: []string{framework.TargetLive, framework.TargetBare},
		Controllers: []framework.ControllerOptions{{Args: []string{
			"--source-fetch-timeout=" + fetchTimeout.String(),
			"--source-max-unpacked-bytes=" + strconv.Itoa(maxUnpackedBytes),
		}}},
	}
	start := func(ctx context.Context) (*framework.Env, error) { return framework.StartWith(ctx, opts) }
	os.Exit(framework.Run("e2e/badinput", startTimeout, &env, start, func() int {
		var err error
		if controllerPID, err = findControllerPID(env.Controller); err != nil {
			fmt.Fprintf(os.Stderr, "e2e/badinput: %v\n", err)
			return 1
		}
		code := m.Run()
		printResults()
		if code == 0 {
			if problem := controllerProblem(); problem != "" {
				fmt.Fprintf(os.Stderr, "e2e/badinput: after the run: %s\n", problem)
				code = 1
			}
		}
		return code
	}))
}

// printResults prints the table of the bad inputs tried and the reason and message each gave.
func printResults() {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if len(results) == 0 {
		return
	}
	sort.Slice(results, func(i, j int) bool { return results[i].name < results[j].name })
	fmt.Println("bad input | reason | message")
	for _, r := range results {
		fmt.Printf("%s | %s | %s\n", r.name, r.reason, strings.ReplaceAll(r.message, "\n", " "))
	}
}
