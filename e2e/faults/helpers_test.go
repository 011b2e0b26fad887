package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

// Shape of the scenarios' renders: waves × perWave ConfigMaps (fewer per wave through the slow
// link), all renamed per round.
const (
	waves      = 5
	perWave    = 40
	renderSize = waves * perWave
	roundLabel = "convoy-e2e/round"
)

// Timeouts and polls of the scenarios: generous, since the machine is shared; no test asserts a
// duration.
const (
	convergeTimeout = 3 * time.Minute
	reasonTimeout   = 2 * time.Minute
	poll            = 500 * time.Millisecond
	// syncInterval is the Releases' interval. The controller watches the source ConfigMaps, so
	// it need not be short; a short one would keep re-checking 200 objects and slow every round.
	syncInterval = 30 * time.Second
)

// ctx is the context of the tests' API calls.
var ctx = context.Background()

// objName is the name of object i of wave w in round's render.
func objName(round, w, i int) string { return fmt.Sprintf("r%d-w%d-%02d", round, w, i) }

// renderOf is round's render of perWave objects per wave, as the data of the source ConfigMap:
// one file per wave.
func renderOf(round, perWave int) map[string]string {
	data := map[string]string{}
	for w := range waves {
		var ds []string
		for i := range perWave {
			ds = append(ds, framework.Doc(map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{
					"name":        objName(round, w, i),
					"labels":      map[string]any{roundLabel: strconv.Itoa(round)},
					"annotations": map[string]any{convoyv1alpha1.SyncWaveAnnotation: strconv.Itoa(w)},
				},
				"data": map[string]any{"round": strconv.Itoa(round), "wave": strconv.Itoa(w)},
			}))
		}
		data[fmt.Sprintf("wave-%d.yaml", w)] = strings.Join(ds, "---\n")
	}
	return data
}

// namesOf is the set of objects of round's render of perWave objects per wave in namespace ns.
func namesOf(ns string, round, perWave int) map[framework.ObjRef]bool {
	out := map[framework.ObjRef]bool{}
	for w := range waves {
		for i := range perWave {
			out[framework.ConfigMapRef(ns, objName(round, w, i))] = true
		}
	}
	return out
}

// appliedReason returns the reason of the Applied condition when it is for the current
// generation, else "".
func appliedReason(r *convoyv1alpha1.Release) string {
	c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionApplied)
	if c == nil || c.ObservedGeneration != r.Generation {
		return ""
	}
	return c.Reason
}

// measure is what one check of a Release against its target found.
type measure struct {
	// applied counts the render's objects on the target; lost those missing there.
	applied, lost int
	// orphans counts owned objects on the target missing from the inventory or, after the
	// render converged, not in the render (left behind, never pruned).
	orphans int
	// problem says what is not converged yet, "" when everything agrees.
	problem string
}

// measureRelease compares the target and the inventory with the render want.
func measureRelease(target *framework.APIServer, ns, name string, want map[framework.ObjRef]bool) (measure, error) {
	owned, err := framework.OwnedConfigMaps(target, ns, name)
	if err != nil {
		return measure{}, err
	}
	inv, _, err := env.Inventory(ns, name)
	if err != nil {
		return measure{}, err
	}
	var m measure
	for o := range want {
		if owned[o] {
			m.applied++
		}
	}
	m.lost = len(want) - m.applied
	for o := range owned {
		if !inv[o] || !want[o] {
			m.orphans++
		}
	}
	var problems []string
	for _, d := range []struct {
		what string
		a, b map[framework.ObjRef]bool
	}{
		{"objects of the render missing on the target", want, owned},
		{"owned objects on the target not in the render (not pruned)", owned, want},
		{"owned objects on the target not in the inventory", owned, inv},
		{"objects of the render missing from the inventory", want, inv},
		{"inventory entries not in the render", inv, want},
	} {
		if n, s := framework.SetDiff(d.a, d.b); n > 0 {
			problems = append(problems, fmt.Sprintf("%d %s: %s", n, d.what, s))
		}
	}
	m.problem = strings.Join(problems, "; ")
	return m, nil
}

// orphansNow counts the owned objects on target that are not in the Release's inventory: what a
// fault at this moment would leave behind for good.
func orphansNow(target *framework.APIServer, ns, name string) (int, string, error) {
	owned, err := framework.OwnedConfigMaps(target, ns, name)
	if err != nil {
		return 0, "", err
	}
	inv, _, err := env.Inventory(ns, name)
	if err != nil {
		return 0, "", err
	}
	n, s := framework.SetDiff(owned, inv)
	return n, fmt.Sprintf("%d owned on the target, %d inventory entries; not inventoried: %s", len(owned), len(inv), s), nil
}

// releaseRun drives one Release through rounds of renders on one target and tallies what each
// round's convergence measured.
type releaseRun struct {
	t       *testing.T
	target  *framework.APIServer
	ns      string
	name    string
	source  string
	perWave int
	round   int
	prevRef string
	tally   *tally
}

// startRelease creates the source of round 1 and a Release of it applied to cluster (its target
// is target), and waits until round 1 converged. Its renders have perWave objects per wave.
func startRelease(t *testing.T, tl *tally, target *framework.APIServer, ns, cluster, name string, perWave int, opts ...framework.ReleaseOption) *releaseRun {
	t.Helper()
	r := &releaseRun{t: t, target: target, ns: ns, name: name, source: name + "-manifests", perWave: perWave, round: 1, tally: tl}
	env.CreateSource(t, ns, r.source, renderOf(1, perWave))
	defaults := []framework.ReleaseOption{framework.WithInterval(syncInterval), framework.WithBackoff(time.Second, 2*time.Second)}
	env.CreateConfigMapRelease(t, ns, name, cluster, r.source, append(defaults, opts...)...)
	r.converge()
	return r
}

// next moves to the next round: it opens a watch of the new round's objects on the target, then
// puts the new render into the source. The caller stops the watch.
func (r *releaseRun) next() watch.Interface {
	r.t.Helper()
	r.round++
	w, err := r.target.Kube.CoreV1().ConfigMaps(r.ns).Watch(ctx, metav1.ListOptions{LabelSelector: roundLabel + "=" + strconv.Itoa(r.round)})
	if err != nil {
		r.t.Fatalf("round %d: watch ConfigMaps on %s: %v", r.round, r.target.Name, err)
	}
	r.setSource(renderOf(r.round, r.perWave))
	return w
}

// setSource replaces the data of the source ConfigMap, retrying while mgmt is unreachable.
func (r *releaseRun) setSource(data map[string]string) {
	r.t.Helper()
	cms := env.Mgmt.Kube.CoreV1().ConfigMaps(r.ns)
	var last error
	for deadline := time.Now().Add(reasonTimeout); time.Now().Before(deadline); time.Sleep(poll) {
		cm, err := cms.Get(ctx, r.source, metav1.GetOptions{})
		if err == nil {
			cm.Data = data
			if _, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err == nil {
				return
			}
		}
		last = err
	}
	r.t.Fatalf("round %d: update source ConfigMap %s/%s: %v", r.round, r.ns, r.source, last)
}

// converge waits until the Release applied the current round's render, its inventory and the
// target hold exactly that render, and the previous round's objects are pruned. It adds the
// round's measure to the tally, and fails the test with it on timeout.
func (r *releaseRun) converge() {
	r.t.Helper()
	want := namesOf(r.ns, r.round, r.perWave)
	deadline := time.Now().Add(convergeTimeout)
	for {
		// The Release is cheap to read; the target's 200-400 objects are listed only once the
		// Release says the render is applied, so polling does not slow the sync it waits for.
		var m measure
		status := ""
		rel, err := env.GetRelease(r.ns, r.name)
		if err == nil {
			ref := framework.LastSuccessfulRef(rel)
			switch {
			case appliedReason(rel) != convoyv1alpha1.ReasonApplied:
				status = "not Applied: " + framework.DescribeApplied(rel)
			case ref == "" || ref == r.prevRef:
				status = fmt.Sprintf("lastSuccessful.renderRef is still %q", ref)
			}
			if status == "" || time.Now().After(deadline) {
				m, err = measureRelease(r.target, r.ns, r.name, want)
			}
			if err == nil && status == "" && m.problem == "" {
				r.prevRef = ref
				r.tally.addRound(m)
				return
			}
		}
		if time.Now().After(deadline) {
			r.tally.addRound(m)
			r.t.Fatalf("round %d: not converged after %s: err %v; %s; %s", r.round, convergeTimeout, err, status, m.problem)
		}
		time.Sleep(poll)
	}
}

// waitSeen reads the watch until at least n objects were added, and returns how many; it fails
// the test when all of the render appeared first or the watch ends.
func (r *releaseRun) waitSeen(w watch.Interface, n int) int {
	r.t.Helper()
	seen := map[string]bool{}
	timeout := time.After(convergeTimeout)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				r.t.Fatalf("round %d: watch closed after %d objects", r.round, len(seen))
			}
			cm, isCM := ev.Object.(*corev1.ConfigMap)
			if !isCM || ev.Type != watch.Added {
				continue
			}
			seen[cm.Name] = true
			if len(seen) >= n {
				return len(seen)
			}
		case <-timeout:
			r.t.Fatalf("round %d: only %d of %d objects appeared within %s", r.round, len(seen), n, convergeTimeout)
		}
	}
}

// countRound counts the objects of round on the target, owned or not.
func (r *releaseRun) countRound(round int) (int, error) {
	list, err := r.target.Kube.CoreV1().ConfigMaps(r.ns).List(ctx, metav1.ListOptions{LabelSelector: roundLabel + "=" + strconv.Itoa(round)})
	if err != nil {
		return 0, fmt.Errorf("list ConfigMaps of round %d on %s: %w", round, r.target.Name, err)
	}
	return len(list.Items), nil
}

// reasonRecorder polls a Release's Applied reason in the background and keeps every reason it
// saw, in order of first sighting; mgmt being unreachable is not a reason.
type reasonRecorder struct {
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	seen  []string
	first map[string]time.Time
}

// recordReasons starts a reasonRecorder of Release ns/name.
func recordReasons(ns, name string) *reasonRecorder {
	rr := &reasonRecorder{stop: make(chan struct{}), done: make(chan struct{}), first: map[string]time.Time{}}
	go func() {
		defer close(rr.done)
		for {
			if rel, err := env.GetRelease(ns, name); err == nil {
				if reason := appliedReason(rel); reason != "" {
					rr.mu.Lock()
					if !contains(rr.seen, reason) {
						rr.seen = append(rr.seen, reason)
						rr.first[reason] = time.Now()
					}
					rr.mu.Unlock()
				}
			}
			select {
			case <-rr.stop:
				return
			case <-time.After(poll):
			}
		}
	}()
	return rr
}

// reasons returns the reasons seen so far.
func (rr *reasonRecorder) reasons() []string {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return append([]string(nil), rr.seen...)
}

// firstSeen returns when reason was first seen (zero if never).
func (rr *reasonRecorder) firstSeen(reason string) time.Time {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.first[reason]
}

// saw reports the first of want that was seen, or "".
func (rr *reasonRecorder) saw(want ...string) string {
	for _, s := range rr.reasons() {
		if contains(want, s) {
			return s
		}
	}
	return ""
}

// close stops the recorder and returns every reason seen.
func (rr *reasonRecorder) close() []string {
	select {
	case <-rr.stop:
	default:
		close(rr.stop)
	}
	<-rr.done
	return rr.reasons()
}

// waitReason waits until the recorder saw one of want, and returns it; it fails the test after
// timeout.
func waitReason(t *testing.T, rr *reasonRecorder, timeout time.Duration, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if s := rr.saw(want...); s != "" {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("none of the reasons %v shown within %s; seen %v", want, timeout, rr.reasons())
		}
		time.Sleep(poll)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
