package faults

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
)

// storeHold is how long, after StoreUnavailable showed, the scenario checks that nothing of the
// new render reaches the target: several retries of the Release's 1-2 s backoff.
const storeHold = 6 * time.Second

// TestRenderStoreUnavailable stops the versitygw S3 server the controller keeps its renders in,
// then changes the source: the Release must show StoreUnavailable and apply nothing of the new
// render (the previous one stays whole); once the store is back, the new render converges.
func TestRenderStoreUnavailable(t *testing.T) {
	tl := newTally(t, "render store (S3) stopped, new render")
	if got, want := env.Controller.RenderStoreURL(), env.S3StoreURL(); got != want {
		t.Fatalf("the controller's render store is %q, want the S3 server %q", got, want)
	}
	ns := env.NewNamespace(t)
	r := startRelease(t, tl, env.Bare, ns, "bare", "storedown", perWave)
	rr := recordReasons(ns, r.name)
	defer rr.close()

	if err := env.S3.Stop(); err != nil {
		t.Fatalf("stop versitygw: %v", err)
	}
	tl.injected()
	restarted := false
	restart := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		restarted = true
		return env.S3.Start(ctx)
	}
	t.Cleanup(func() {
		if !restarted {
			if err := restart(); err != nil {
				t.Errorf("restart versitygw after the test: %v", err)
			}
		}
	})
	w := r.next()
	defer w.Stop()
	waitReason(t, rr, reasonTimeout, convoyv1alpha1.ReasonStoreUnavailable)
	// Nothing of the new render may appear while the store is away, and the old one stays.
	for deadline := time.Now().Add(storeHold); time.Now().Before(deadline); time.Sleep(poll) {
		if n := drainAdded(w); n > 0 {
			t.Fatalf("round %d: %d objects of the new render applied while the render store was down", r.round, n)
		}
	}
	if n, err := r.countRound(r.round); err != nil || n != 0 {
		t.Fatalf("round %d: %d objects of the new render on the target while the store was down (err %v)", r.round, n, err)
	}
	old, err := measureRelease(r.target, r.ns, r.name, namesOf(r.ns, r.round-1, r.perWave))
	if err != nil {
		t.Fatal(err)
	}
	if old.lost > 0 || old.problem != "" {
		t.Fatalf("the previous render is no longer whole while the store was down: %d lost; %s", old.lost, old.problem)
	}
	if err := restart(); err != nil {
		t.Fatalf("restart versitygw: %v", err)
	}
	r.converge()
	tl.setOutcome("StoreUnavailable shown, 0 objects of the new render applied meanwhile (reasons %v); converged", rr.close())
}

// drainAdded reads the pending events of w without blocking and counts the ConfigMaps added.
func drainAdded(w watch.Interface) int {
	n := 0
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return n
			}
			if _, isCM := ev.Object.(*corev1.ConfigMap); isCM && ev.Type == watch.Added {
				n++
			}
		default:
			return n
		}
	}
}
