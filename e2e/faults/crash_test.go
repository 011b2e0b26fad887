package faults

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// Shape of the SIGKILL scenario.
const (
	// crashRounds is how many times the controller is killed mid-sync.
	crashRounds = 50
	// crashPerWave is the size of a wave of this scenario: 5 waves of 20 keep a round's sync a
	// few seconds long, so 50 rounds fit in CI; each object of a wave is its own request still.
	crashPerWave = 20
	crashSize    = waves * crashPerWave
	// crashMaxDelay bounds the random delay of a kill by time, from the source change: a round's
	// sync (100 applied, 100 pruned) takes a few seconds, so kills land before the sync, in its
	// waves and in its prune.
	crashMaxDelay = 6 * time.Second
	// crashSettle lets requests the controller sent just before dying complete.
	crashSettle = 300 * time.Millisecond
	// seedEnv fixes the seed of the kill points, to replay a run.
	seedEnv = "CONVOY_FAULTS_SEED"
)

// TestSIGKILLMidSync kills the controller with SIGKILL at a random point of a 5-wave sync, 50
// rounds, each of which renames every object (100 to create, the previous 100 to prune). A kill
// point is either a count of the round's objects seen on the target through a watch, or a random
// delay after the source changed; the seed is logged and CONVOY_FAULTS_SEED replays it. At the
// kill, every owned object on the target must be in the inventory; after the restart the round's
// render must be applied, inventoried and alone on the target.
func TestSIGKILLMidSync(t *testing.T) {
	tl := newTally(t, fmt.Sprintf("SIGKILL mid-sync (%d waves x %d, random kill point)", waves, crashPerWave))
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(seedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", seedEnv, s, err)
		}
	}
	t.Logf("kill points seeded with %d (%s=%d replays them)", seed, seedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	ns := env.NewNamespace(t)
	r := startRelease(t, tl, env.Bare, ns, "bare", "crash", crashPerWave)
	byCount, byDelay := 0, 0
	for range crashRounds {
		w := r.next()
		var point string
		if rng.IntN(2) == 0 {
			n := 1 + rng.IntN(crashSize-1)
			seen := r.waitSeen(w, n)
			point = "after " + strconv.Itoa(seen) + " objects"
			byCount++
		} else {
			d := time.Duration(rng.Int64N(int64(crashMaxDelay)))
			time.Sleep(d)
			point = "after " + d.Round(time.Millisecond).String()
			byDelay++
		}
		if err := env.Controller.Kill(); err != nil {
			t.Fatalf("round %d: kill the controller: %v", r.round, err)
		}
		tl.injected()
		w.Stop()
		time.Sleep(crashSettle)
		orphans, detail, err := orphansNow(r.target, ns, r.name)
		if err != nil {
			t.Fatalf("round %d: %v", r.round, err)
		}
		tl.addOrphans(orphans)
		if orphans > 0 {
			t.Errorf("round %d, killed %s: %d owned objects on the target are not in the inventory, so the crash orphaned them: %s", r.round, point, orphans, detail)
		}
		if err := env.Controller.Restart(); err != nil {
			t.Fatalf("round %d: restart the controller: %v", r.round, err)
		}
		r.converge()
		t.Logf("round %d: killed %s; at the kill %s; converged", r.round, point, detail)
	}
	tl.setOutcome("converged every round (%d kills by object count, %d by delay; seed %d)", byCount, byDelay, seed)
}
