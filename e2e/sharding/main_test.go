// Package sharding tests dynamic sharding end to end: two controller replicas share four target
// clusters through coordination Leases; one is killed and restarted, and the targets' audit logs
// show that no cluster was ever worked on by both replicas at once.
package sharding

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kumodo/convoy/e2e/framework"
)

// The sharding setup: short leases, so failover takes seconds.
const (
	shardCount     = 4
	leaseDuration  = 6 * time.Second
	renewPeriod    = 2 * time.Second
	leaseNamespace = "kube-system"
	// startTimeout bounds bringing up etcd, five API servers and two controllers.
	startTimeout = 5 * time.Minute
)

// replica is one controller process: its sharding identity and its process name, which begins
// the user agent its target requests carry.
type replica struct {
	id, process string
}

// replicas are the two controllers, in the order of env.Controllers.
var replicas = []replica{{"a", "convoy-replica-a"}, {"b", "convoy-replica-b"}}

// env is the environment of the run.
var env *framework.Env

// targetName is the bare target (and Cluster) pinned to shard i.
func targetName(i int) string { return "shard-" + strconv.Itoa(i) }

func TestMain(m *testing.M) {
	opts := framework.Options{Audit: true}
	for i := range shardCount {
		opts.BareTargets = append(opts.BareTargets, targetName(i))
	}
	for _, r := range replicas {
		opts.Controllers = append(opts.Controllers, framework.ControllerOptions{Name: r.process, Args: []string{
			"--sharding=dynamic",
			"--shards=" + strconv.Itoa(shardCount),
			"--lease-duration=" + leaseDuration.String(),
			"--lease-renew-period=" + renewPeriod.String(),
			"--leader-namespace=" + leaseNamespace,
			"--identity=" + r.id,
		}})
	}
	start := func(ctx context.Context) (*framework.Env, error) { return framework.StartWith(ctx, opts) }
	os.Exit(framework.Run("e2e/sharding", startTimeout, &env, start, m.Run))
}
