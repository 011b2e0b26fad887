package faults

import (
	"net/url"
	"testing"
	"time"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

const (
	// slowLatency is what the proxy adds to every chunk the controller sends to the target.
	slowLatency = 200 * time.Millisecond
	// slowCluster is the Cluster whose kubeconfig points at the proxy in front of bare.
	slowCluster = "slow"
	// slowRounds is how many renders go through the proxy: the first creates a render, the
	// second creates another and prunes the first.
	slowRounds = 2
	// slowPerWave is the objects per wave of the renders through the proxy: 5 × 8. Every object
	// costs the controller several round trips, so 200 would take minutes at this latency.
	slowPerWave = 8
)

// TestSlowTargetAPI puts a proxy adding 200 ms to every request between the controller and the
// bare target (a Cluster whose kubeconfig Secret points at the proxy): 5-wave renders must still
// converge with a complete inventory, and no failure reason may show.
func TestSlowTargetAPI(t *testing.T) {
	tl := newTally(t, "slow target API (+200ms per request via proxy)")
	u, err := url.Parse(env.Bare.URL)
	if err != nil {
		t.Fatalf("parse the URL of bare: %v", err)
	}
	proxy, err := framework.StartLatencyProxy(u.Host, slowLatency)
	if err != nil {
		t.Fatal(err)
	}
	// Registered before NewNamespace, so it closes after the namespace's Releases are finalized.
	t.Cleanup(func() {
		if err := proxy.Close(); err != nil {
			t.Errorf("close the proxy: %v", err)
		}
	})
	ns := env.NewNamespace(t)
	kubeconfig, err := env.Bare.KubeconfigVia(proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.RegisterClusterKubeconfig(ctx, ns, slowCluster, kubeconfig); err != nil {
		t.Fatal(err)
	}
	rr := recordReasons(ns, "slow")
	defer rr.close()
	r := startRelease(t, tl, env.Bare, ns, slowCluster, "slow", slowPerWave)
	tl.injected()
	for r.round < slowRounds {
		w := r.next()
		w.Stop()
		r.converge()
		tl.injected()
	}
	if proxy.Chunks() == 0 {
		t.Fatalf("no request went through the proxy: the Cluster %s did not use it", slowCluster)
	}
	reasons := rr.close()
	for _, reason := range reasons {
		if reason != convoyv1alpha1.ReasonApplied {
			t.Errorf("reason %s shown through the slow link (all seen: %v): latency alone must not fail a sync", reason, reasons)
		}
	}
	tl.setOutcome("%d chunks over %d connections delayed %s each; reasons %v; converged", proxy.Chunks(), proxy.Connections(), slowLatency, reasons)
}
