package sharding

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// Waits of the test: generous, the machine is shared.
const (
	balanceTimeout = 90 * time.Second
	applyTimeout   = 90 * time.Second
	// releaseInterval keeps every Release reconciled (render, dry run, apply) every 2 s, so its
	// owner works on the target all the time and two owners at once could not go unseen.
	releaseInterval = 2 * time.Second
	// takeoverSlack is added to the bound on the takeover: the test polls every 100 ms and the
	// survivor's Lease writes take a moment on a busy machine.
	takeoverSlack = time.Second
)

// TestDynamicShardingFailover: two replicas share four clusters, two shards each; one is killed
// with SIGKILL and the other takes its shards over within a lease duration plus a renew period,
// and a Release changed after the kill converges; the killed one restarts and gets two shards
// back. The targets' audit logs show that every cluster was worked on by one replica at a time,
// following the shard Leases.
func TestDynamicShardingFailover(t *testing.T) {
	ns := env.NewNamespace(t)
	pinShards(t, ns)
	waitFor(t, balanceTimeout, func() (bool, string) { return balanced([]int{0, 1}, shardCount/2) })
	poller := startLeasePoller(t)
	since := time.Now()
	var history map[int][]string
	defer func() {
		if history == nil {
			poller.finish()
		}
	}()

	for i := range shardCount {
		setSource(t, ns, i, "v1")
		createRelease(t, ns, i, releaseInterval)
	}
	for i := range shardCount {
		waitFor(t, applyTimeout, func() (bool, string) { return converged(ns, i, "v1") })
	}
	// Steady state: a few reconcile intervals with both replicas up.
	time.Sleep(2 * releaseInterval)

	// Kill the holder of shard 0; change shard 0's Release right away.
	hs, err := holders()
	if err != nil {
		t.Fatal(err)
	}
	victim := slices.IndexFunc(replicas, func(r replica) bool { return r.id == hs[0] })
	if victim < 0 {
		t.Fatalf("shard 0 is held by %q, not a replica", hs[0])
	}
	survivor := 1 - victim
	killedAt := time.Now()
	if err := env.Controllers[victim].Kill(); err != nil {
		t.Fatal(err)
	}
	setSource(t, ns, 0, "v2")
	tookOver := waitFor(t, balanceTimeout, func() (bool, string) { return balanced([]int{survivor}, shardCount) })
	convergedAt := waitFor(t, applyTimeout, func() (bool, string) { return converged(ns, 0, "v2") })
	takeover, failover := tookOver.Sub(killedAt), convergedAt.Sub(killedAt)
	t.Logf("failover: replica %s killed; replica %s held all %d shards after %s (lease duration %s, renew period %s); "+
		"the Release changed after the kill converged after %s",
		replicas[victim].id, replicas[survivor].id, shardCount, takeover.Round(time.Millisecond), leaseDuration, renewPeriod,
		failover.Round(time.Millisecond))
	if limit := leaseDuration + renewPeriod + takeoverSlack; takeover > limit {
		t.Errorf("takeover took %s, want at most a lease duration and a renew period (%s)", takeover, limit)
	}

	// Restart the killed replica: the shards rebalance to two each.
	restartedAt := time.Now()
	if err := env.Controllers[victim].Restart(); err != nil {
		t.Fatalf("restart replica %s: %v", replicas[victim].id, err)
	}
	rebalancedAt := waitFor(t, balanceTimeout, func() (bool, string) { return balanced([]int{0, 1}, shardCount/2) })
	t.Logf("rebalance: replica %s restarted (ready after process start); both held %d shards %s after the restart began",
		replicas[victim].id, shardCount/2, rebalancedAt.Sub(restartedAt).Round(time.Millisecond))

	// The restarted replica applies again: change a Release of a shard it got back.
	hs, err = holders()
	if err != nil {
		t.Fatal(err)
	}
	back := -1
	for shard, h := range hs {
		if h == replicas[victim].id {
			back = shard
		}
	}
	if back < 0 {
		t.Fatalf("replica %s holds no shard after rebalancing: %v", replicas[victim].id, hs)
	}
	setSource(t, ns, back, "v3")
	waitFor(t, applyTimeout, func() (bool, string) { return converged(ns, back, "v3") })
	// Keep reconciling for a while, so activity of the replica that gave the shards away would show.
	time.Sleep(2 * releaseInterval)
	history = poller.finish()

	versions := map[int]int{} // render versions each shard's objects went through
	for i := range shardCount {
		versions[i] = 1
	}
	versions[0]++
	versions[back]++
	attributed := false
	for i := range shardCount {
		// The management side: every write about shard i's Release, inventory and Cluster, by
		// replica. The replicas' runs must follow the shard Lease's holders.
		reqs, err := replicaRequests(env.Mgmt, since, aboutShard(ns, i))
		if err != nil {
			t.Fatal(err)
		}
		runs := runsOf(reqs)
		t.Logf("shard %d: Lease holders %v; management requests: %s", i, history[i], describeRuns(runs, nil))
		checkRuns(t, fmt.Sprintf("shard %d, management", i), history[i], runs, hs[i])

		// The target: each object written exactly once per render version, so never twice by
		// two replicas applying the same render.
		target := env.BareTargets[targetName(i)]
		writes, err := writesPerObject(target, since)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: ConfigMap writes %v for %d render versions", target.Name, writes, versions[i])
		for k := range objectsPerRelease {
			obj := fmt.Sprintf("%s/cm-%d", ns, k)
			if writes[obj] != versions[i] {
				t.Errorf("%s: %s written %d times, want once per render version (%d)", target.Name, obj, writes[obj], versions[i])
			}
		}
		// The target's requests by replica, when the target clients send a user agent that
		// names the replica.
		treqs, err := replicaRequests(target, since, anyRequest)
		if err != nil {
			t.Fatal(err)
		}
		if len(treqs) == 0 {
			continue
		}
		attributed = true
		truns := runsOf(treqs)
		t.Logf("%s: requests: %s", target.Name, describeRuns(truns, treqs))
		checkRuns(t, target.Name, history[i], truns, hs[i])
	}
	if !attributed {
		t.Logf("the target clusters' audit logs cannot tell the replicas apart (their clients send no user agent of " +
			"their own); exclusivity is checked on the management side and by the targets' write counts")
	}
}

// checkRuns fails the test when runs of requests do not follow the Lease holders, or when the
// replica that worked last is not the holder now.
func checkRuns(t *testing.T, what string, holders []string, runs []run, holder string) {
	t.Helper()
	if len(runs) == 0 {
		t.Errorf("%s: no request of any replica", what)
		return
	}
	for _, p := range checkExclusive(holders, runs) {
		t.Errorf("%s: %s", what, p)
	}
	if last := runs[len(runs)-1].replica; last != holder {
		t.Errorf("%s: the last requests came from %s, but %s holds the shard", what, last, holder)
	}
}

// TestCheckExclusive: the audit check tells runs that follow the Lease holders from two replicas
// working on one cluster at once.
func TestCheckExclusive(t *testing.T) {
	at := func(s float64) time.Time { return time.Unix(0, 0).Add(time.Duration(s * float64(time.Second))) }
	r := func(replica string, from, to float64) run {
		return run{replica: replica, first: request{received: at(from)}, end: at(to + 0.01), requests: 2}
	}
	tests := []struct {
		name    string
		holders []string
		runs    []run
		ok      bool
	}{
		{"one owner", []string{"a"}, []run{r("a", 0, 10)}, true},
		{"failover and back", []string{"a", "b", "a"}, []run{r("a", 0, 1), r("b", 8, 20), r("a", 25, 30)}, true},
		{"owner idle in a period", []string{"a", "b", "a"}, []run{r("a", 0, 1), r("a", 25, 30)}, true},
		{"a non-holder works", []string{"a"}, []run{r("a", 0, 1), r("b", 2, 3)}, false},
		{"interleaved at handover", []string{"a", "b"}, []run{r("a", 0, 1), r("b", 2, 3), r("a", 3.5, 4), r("b", 5, 6)}, false},
		{"overlapping requests", []string{"a", "b"}, []run{r("a", 0, 2), r("b", 2.005, 3)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems := checkExclusive(tt.holders, tt.runs)
			if (len(problems) == 0) != tt.ok {
				t.Errorf("checkExclusive = %v, want ok=%v", problems, tt.ok)
			}
		})
	}
}

// TestReplicaOf: requests are attributed to replicas by the management client's user agent, or by
// client-go's default one, which begins with the process name.
func TestReplicaOf(t *testing.T) {
	tests := []struct{ userAgent, want string }{
		{"convoy-controller-manager (replica a)", "a"},
		{"convoy-controller-manager (replica b)", "b"},
		{"convoy-replica-b/v0.0.0 (linux/amd64) kubernetes/$Format", "b"},
		{"Go-http-client/2.0", ""},
		{"sharding.test/v0.0.0 (linux/amd64) kubernetes/$Format", ""},
	}
	for _, tt := range tests {
		if got := replicaOf(tt.userAgent); got != tt.want {
			t.Errorf("replicaOf(%q) = %q, want %q", tt.userAgent, got, tt.want)
		}
	}
}
