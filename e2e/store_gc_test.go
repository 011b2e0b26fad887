package e2e

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
	"github.com/kumodo/convoy/pkg/renderstore"
)

// TestRenderStoreGCKeepsProtected: GC keeps exactly maxHistory history entries plus the renders the
// status refers to, even when such a render has left the history: here the last healthy render,
// after a new render whose pods never become ready.
func TestRenderStoreGCKeepsProtected(t *testing.T) {
	t.Parallel()
	if env.RenderStoreURL == "" {
		t.Skip("the suite runs without a render store (CONVOY_E2E_RENDER_STORE=none)")
	}
	ns := env.NewNamespace(t)
	store, err := renderstore.Open(env.RenderStoreURL)
	if err != nil {
		t.Fatal(err)
	}
	const name, src = "protected", "protected-src"
	key := types.NamespacedName{Namespace: ns, Name: name}
	env.CreateSource(t, ns, src, map[string]string{"app.yaml": deploymentDoc("app", 1)})
	env.CreateConfigMapRelease(t, ns, name, "live", src, framework.WithInterval(2*time.Second), withMaxHistory(1))
	ref1 := framework.LastSuccessfulRef(env.WaitApplied(t, ns, name, convoyv1alpha1.ReasonApplied, applyTimeout, nil))
	framework.Eventually(t, applyTimeout, func() (bool, string) {
		r, err := env.GetRelease(ns, name)
		if err != nil {
			return false, err.Error()
		}
		if r.Status.LastHealthy == nil || r.Status.LastHealthy.RenderRef != ref1 {
			return false, fmt.Sprintf("lastHealthy %+v, want %s", r.Status.LastHealthy, ref1)
		}
		return true, ""
	})

	// A new render that never becomes healthy: lastHealthy stays at ref1 while the history moves on.
	env.UpdateSource(t, ns, src, map[string]string{"app.yaml": badDeploymentDoc("app", 600)})
	ref2 := framework.LastSuccessfulRef(env.WaitApplied(t, ns, name, convoyv1alpha1.ReasonApplied, applyTimeout, renderChanged(ref1)))
	waitHistory(t, store, key, ref2)
	waitStored(t, store, key, ref1, ref2)
	// GC runs after every sync (interval 2 s): it must keep ref1's render the whole time.
	framework.Consistently(t, 8*time.Second, func() (bool, string) {
		if ok, msg := historyIs(store, key, ref2); !ok {
			return false, msg
		}
		stored, err := store.ListRenders(ctx, key)
		if err != nil {
			return false, err.Error()
		}
		if len(stored) != 2 {
			return false, fmt.Sprintf("stored renders %v, want %s (lastHealthy) and %s (current)", stored, ref1, ref2)
		}
		r, err := env.GetRelease(ns, name)
		if err != nil {
			return false, err.Error()
		}
		if r.Status.LastHealthy == nil || r.Status.LastHealthy.RenderRef != ref1 {
			return false, fmt.Sprintf("lastHealthy %+v moved off %s", r.Status.LastHealthy, ref1)
		}
		return true, ""
	})
}
