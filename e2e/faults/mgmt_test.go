package faults

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// mgmtDownFor is how long the management API server stays stopped.
const mgmtDownFor = 5 * time.Second

// TestManagementAPIServerRestarted stops the management API server while the controller applies
// a new render and starts it again: the controller must stay up, its informers re-list, the
// interrupted render converges, and a change made after the restart converges too.
func TestManagementAPIServerRestarted(t *testing.T) {
	tl := newTally(t, "management API server stopped mid-wave, restarted")
	ns := env.NewNamespace(t)
	r := startRelease(t, tl, env.Bare, ns, "bare", "mgmtdown", perWave)

	w := r.next()
	seen := r.waitSeen(w, midWave)
	w.Stop()
	if err := env.Mgmt.Stop(); err != nil {
		t.Fatalf("stop the management API server: %v", err)
	}
	tl.injected()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			if err := env.Mgmt.Start(); err != nil {
				t.Errorf("restart the management API server after the test: %v", err)
			}
		}
	})
	time.Sleep(mgmtDownFor)
	if err := env.Mgmt.Start(); err != nil {
		t.Fatalf("restart the management API server: %v", err)
	}
	restarted = true
	// The controller kept running through the outage: it was never restarted by the test.
	if err := healthz(); err != nil {
		t.Fatalf("controller after the management API server came back: %v\n%s", err, env.Controller.LogTail(30))
	}
	rr := recordReasons(ns, r.name)
	defer rr.close()
	r.converge()
	// A change made after the restart reaches the target through the re-listed informers.
	w = r.next()
	w.Stop()
	r.converge()
	tl.setOutcome("stopped %s after %d of %d objects; controller stayed up; reasons after the restart %v; interrupted and later renders converged",
		mgmtDownFor, seen, renderSize, rr.close())
}

// healthz asks the controller's /healthz.
func healthz() error {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(env.Controller.HealthURL() + "/healthz")
	if err != nil {
		return fmt.Errorf("GET /healthz: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /healthz: %s", resp.Status)
	}
	return nil
}
