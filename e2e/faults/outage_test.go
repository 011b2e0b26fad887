package faults

import (
	"context"
	"testing"
	"time"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

const (
	// midWave is how many objects of a round must be on the target before a fault is injected:
	// inside the second of the five waves.
	midWave = 60
	// etcdDownFor is how long the etcd scenario keeps the target's etcd stopped.
	etcdDownFor = 30 * time.Second
)

// outageReasons are the reasons a Release may show while its target cannot be reached: the
// Cluster probe noticed (ClusterNotReady) or an apply failed first (ApplyFailed).
var outageReasons = []string{convoyv1alpha1.ReasonClusterNotReady, convoyv1alpha1.ReasonApplyFailed}

// TestTargetAPIServerStoppedMidWave stops the fault target's API server while the controller
// applies the second wave of a new render: the Release must show ClusterNotReady or ApplyFailed
// meanwhile, and after the restart the render converges and the previous one is pruned.
func TestTargetAPIServerStoppedMidWave(t *testing.T) {
	tl := newTally(t, "target API server stopped mid-wave, restarted")
	ns := env.NewNamespace(t)
	r := startRelease(t, tl, env.Fault, ns, framework.TargetFault, "apidown", perWave)
	rr := recordReasons(ns, r.name)
	defer rr.close()

	w := r.next()
	seen := r.waitSeen(w, midWave)
	w.Stop()
	if err := env.Fault.Stop(); err != nil {
		t.Fatalf("stop the fault API server: %v", err)
	}
	tl.injected()
	stopped := time.Now()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			if err := env.Fault.Start(); err != nil {
				t.Errorf("restart the fault API server after the test: %v", err)
			}
		}
	})
	reason := waitReason(t, rr, reasonTimeout, outageReasons...)
	after := rr.firstSeen(reason).Sub(stopped).Round(time.Second)
	if err := env.Fault.Start(); err != nil {
		t.Fatalf("restart the fault API server: %v", err)
	}
	restarted = true
	r.converge()
	tl.setOutcome("stopped after %d of %d objects; %s shown %s after the stop (reasons %v); converged", seen, renderSize, reason, after, rr.close())
}

// TestTargetEtcdStopped stops the etcd of the solo target (its own, so nothing else is affected)
// for 30 s while the controller applies a new render; its API server keeps running. The Release
// must show ClusterNotReady or ApplyFailed before the render converges (the request in flight hangs
// until its 30 s timeout, so the reason may come as etcd returns), and after etcd returns
// the render converges with nothing lost.
func TestTargetEtcdStopped(t *testing.T) {
	tl := newTally(t, "target etcd stopped 30s mid-wave")
	target, etcd := env.BareTargets[soloTarget], env.TargetEtcds[soloTarget]
	if target == nil || etcd == nil {
		t.Fatalf("the run has no target %q with an etcd of its own", soloTarget)
	}
	ns := env.NewNamespace(t)
	r := startRelease(t, tl, target, ns, soloTarget, "etcddown", perWave)
	rr := recordReasons(ns, r.name)
	defer rr.close()

	w := r.next()
	seen := r.waitSeen(w, midWave)
	w.Stop()
	if err := etcd.Stop(); err != nil {
		t.Fatalf("stop the etcd of %s: %v", soloTarget, err)
	}
	tl.injected()
	stopped := time.Now()
	restarted := false
	restart := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		restarted = true
		return etcd.Start(ctx)
	}
	t.Cleanup(func() {
		if !restarted {
			if err := restart(); err != nil {
				t.Errorf("restart the etcd of %s after the test: %v", soloTarget, err)
			}
		}
	})
	time.Sleep(etcdDownFor)
	if err := restart(); err != nil {
		t.Fatalf("restart the etcd of %s: %v", soloTarget, err)
	}
	// The Cluster probe reads /readyz, which fails without etcd, but the reconcile in flight waits
	// for its hanging request's timeout (30 s) before it can report: the reason may show as etcd
	// comes back. It must show before the render converges.
	reason := waitReason(t, rr, reasonTimeout, outageReasons...)
	after := rr.firstSeen(reason).Sub(stopped).Round(time.Second)
	r.converge()
	tl.setOutcome("stopped after %d of %d objects; %s shown %s after the stop (reasons %v); converged", seen, renderSize, reason, after, rr.close())
}
