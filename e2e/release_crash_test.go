package e2e

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

// Shape of the crash test's render: waves × objects per wave ConfigMaps.
const (
	crashWaves       = 5
	crashPerWave     = 40
	crashObjects     = crashWaves * crashPerWave
	crashRoundLabel  = "convoy-e2e/round"
	crashRecoverWait = 4 * time.Minute
)

// crashKillAfter is, per round, how many objects of the new render must exist on the target
// before the controller is killed: in the first wave, mid-render, and in a late wave.
var crashKillAfter = []int{1, 90, 170}

// crashRender is round's render: every name changes per round, so each round creates 200
// objects and prunes the previous 200.
func crashRender(round int) map[string]string {
	data := map[string]string{}
	for w := range crashWaves {
		var ds []string
		for i := range crashPerWave {
			ds = append(ds, framework.Doc(map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{
					"name":        fmt.Sprintf("r%d-w%d-%02d", round, w, i),
					"labels":      map[string]any{crashRoundLabel: strconv.Itoa(round)},
					"annotations": map[string]any{convoyv1alpha1.SyncWaveAnnotation: strconv.Itoa(w)},
				},
				"data": map[string]any{"round": strconv.Itoa(round), "wave": strconv.Itoa(w)},
			}))
		}
		data[fmt.Sprintf("wave-%d.yaml", w)] = framework.Docs(ds...)
	}
	return data
}

// crashNames is the set of ConfigMaps of round's render.
func crashNames(ns string, round int) map[framework.ObjRef]bool {
	out := map[framework.ObjRef]bool{}
	for w := range crashWaves {
		for i := range crashPerWave {
			out[framework.ConfigMapRef(ns, fmt.Sprintf("r%d-w%d-%02d", round, w, i))] = true
		}
	}
	return out
}

// TestCrashSafety: the controller is killed (SIGKILL) while it applies a 5-wave render; every
// object it managed to apply must already be in the ReleaseInventory, so none can be
// orphaned; after a restart the render completes and the previous one is pruned. Three
// rounds, each killing at a different point. Not parallel: it kills the shared controller.
func TestCrashSafety(t *testing.T) {
	ns := env.NewNamespace(t)
	const name = "crash"
	prevRef := ""
	for round := 1; round <= len(crashKillAfter); round++ {
		w, err := env.Bare.Kube.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{LabelSelector: crashRoundLabel + "=" + strconv.Itoa(round)})
		if err != nil {
			t.Fatalf("round %d: watch ConfigMaps on bare: %v", round, err)
		}
		if round == 1 {
			env.CreateSource(t, ns, "crash-manifests", crashRender(round))
			env.CreateConfigMapRelease(t, ns, name, "bare", "crash-manifests", framework.WithInterval(2*time.Second))
		} else {
			env.UpdateSource(t, ns, "crash-manifests", crashRender(round))
		}
		seen := killMidApply(t, w, round, crashKillAfter[round-1])
		w.Stop()
		// Requests the controller sent just before dying may still be completing.
		time.Sleep(500 * time.Millisecond)
		checkInventoryCoversTarget(t, ns, name, fmt.Sprintf("round %d, killed after %d objects appeared", round, seen))

		if err := env.Controller.Restart(); err != nil {
			t.Fatalf("round %d: restart the controller: %v", round, err)
		}
		want := crashNames(ns, round)
		r := env.WaitApplied(t, ns, name, convoyv1alpha1.ReasonApplied, crashRecoverWait, renderChanged(prevRef))
		prevRef = framework.LastSuccessfulRef(r)
		framework.Eventually(t, crashRecoverWait, func() (bool, string) {
			owned, err := framework.OwnedConfigMaps(env.Bare, ns, name)
			if err != nil {
				return false, err.Error()
			}
			inv, _, err := env.Inventory(ns, name)
			if err != nil {
				return false, err.Error()
			}
			if n, s := framework.SetDiff(want, owned); n > 0 {
				return false, fmt.Sprintf("round %d: %d objects of the render missing on the target: %s", round, n, s)
			}
			if n, s := framework.SetDiff(owned, want); n > 0 {
				return false, fmt.Sprintf("round %d: %d owned objects not in the render (not pruned): %s", round, n, s)
			}
			if n, s := framework.SetDiff(want, inv); n > 0 {
				return false, fmt.Sprintf("round %d: %d objects missing from the inventory: %s", round, n, s)
			}
			if n, s := framework.SetDiff(inv, want); n > 0 {
				return false, fmt.Sprintf("round %d: inventory lists %d objects not in the render: %s", round, n, s)
			}
			return true, ""
		})
	}
}

// killMidApply kills the controller as soon as at least after (but not all) objects of the
// round exist on the target, and returns how many it had seen.
func killMidApply(t *testing.T, w watch.Interface, round, after int) int {
	t.Helper()
	seen := map[string]bool{}
	timeout := time.After(crashRecoverWait)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("round %d: watch closed after %d objects", round, len(seen))
			}
			cm, isCM := ev.Object.(*corev1.ConfigMap)
			if !isCM || ev.Type != watch.Added {
				continue
			}
			seen[cm.Name] = true
			if len(seen) >= crashObjects {
				t.Fatalf("round %d: all %d objects appeared before the controller could be killed", round, crashObjects)
			}
			if len(seen) >= after {
				if err := env.Controller.Kill(); err != nil {
					t.Fatalf("round %d: kill the controller: %v", round, err)
				}
				return len(seen)
			}
		case <-timeout:
			t.Fatalf("round %d: only %d objects appeared within %s", round, len(seen), crashRecoverWait)
		}
	}
}

// checkInventoryCoversTarget asserts that every object on the target owned by the Release is
// listed in its ReleaseInventory.
func checkInventoryCoversTarget(t *testing.T, ns, name, when string) {
	t.Helper()
	owned, err := framework.OwnedConfigMaps(env.Bare, ns, name)
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	inv, found, err := env.Inventory(ns, name)
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	if n, s := framework.SetDiff(owned, inv); n > 0 {
		t.Errorf("%s: %d of %d owned objects on the target are not in the inventory (found=%v, %d entries), so a crash orphaned them: %s",
			when, n, len(owned), found, len(inv), s)
	} else {
		t.Logf("%s: all %d owned objects on the target are in the inventory (%d entries)", when, len(owned), len(inv))
	}
}
