package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
	"github.com/kumodo/convoy/pkg/render"
	"github.com/kumodo/convoy/pkg/renderstore"
)

// storeTimeout bounds the waits of the render store tests: GC and history follow a reconcile,
// and recovery from a store outage waits for the (shortened) backoff.
const storeTimeout = 2 * time.Minute

// storeOutage takes a render store down and brings it back.
type storeOutage struct{ down, up func(t *testing.T) }

// TestRenderStoreFile runs the render store scenario with the file backend. Not parallel: it
// may restart the shared controller and it breaks the store for a while.
func TestRenderStoreFile(t *testing.T) {
	dir := strings.TrimPrefix(env.FileStoreURL, "file://")
	runStoreScenario(t, env.FileStoreURL, storeOutage{
		// A regular file where the directory was: every read and write fails, as with a lost volume.
		down: func(t *testing.T) {
			if err := os.Rename(dir, dir+".away"); err != nil && !os.IsNotExist(err) {
				t.Fatalf("move the store directory away: %v", err)
			}
			if err := os.WriteFile(dir, []byte("down"), 0o600); err != nil {
				t.Fatalf("block the store directory: %v", err)
			}
		},
		up: func(t *testing.T) {
			if err := os.Remove(dir); err != nil {
				t.Fatalf("unblock the store directory: %v", err)
			}
			if err := os.Rename(dir+".away", dir); err != nil && !os.IsNotExist(err) {
				t.Fatalf("restore the store directory: %v", err)
			}
		},
	})
}

// TestRenderStoreS3 runs the render store scenario with the S3 backend on versitygw. Not
// parallel: it may restart the shared controller and it stops versitygw for a while.
func TestRenderStoreS3(t *testing.T) {
	runStoreScenario(t, env.S3StoreURL(), storeOutage{
		down: func(t *testing.T) {
			if err := env.S3.Stop(); err != nil {
				t.Fatalf("stop versitygw: %v", err)
			}
		},
		up: func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := env.S3.Start(ctx); err != nil {
				t.Fatalf("restart versitygw: %v", err)
			}
		},
	})
}

// runStoreScenario: history grows by one per new render, not per reconcile; GC keeps exactly
// maxHistory renders (plus protected ones); kubectl convoy history, rollback (pin), status, sync
// and unpin work; a pin to a render that is not stored stops with Pinned; a store outage stops the
// sync with StoreUnavailable and backoff, nothing applied, and it resumes when the store returns;
// deleting the Release removes its prefix.
func runStoreScenario(t *testing.T, storeURL string, outage storeOutage) {
	useRenderStore(t, storeURL)
	for _, kv := range env.S3.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	store, err := renderstore.Open(storeURL)
	if err != nil {
		t.Fatalf("open the render store: %v", err)
	}
	ns := env.NewNamespace(t)
	const name, src = "stored", "stored-src"
	key := types.NamespacedName{Namespace: ns, Name: name}
	data := func(v string) map[string]string {
		return map[string]string{"all.yaml": framework.ConfigMapDoc("settings", map[string]string{"version": v}, nil)}
	}
	env.CreateSource(t, ns, src, data("v1"))
	env.CreateConfigMapRelease(t, ns, name, "bare", src, framework.WithInterval(2*time.Second), framework.WithBackoff(time.Second, 2*time.Second), withMaxHistory(2))
	ref1 := framework.LastSuccessfulRef(env.WaitApplied(t, ns, name, convoyv1alpha1.ReasonApplied, applyTimeout, nil))

	// Several reconciles of one render: one history entry, and its render stored.
	waitHistory(t, store, key, ref1)
	framework.Consistently(t, 3*2*time.Second, func() (bool, string) { return historyIs(store, key, ref1) })
	waitStored(t, store, key, ref1)

	// Two new renders: maxHistory 2 keeps the last two entries and exactly their renders.
	env.UpdateSource(t, ns, src, data("v2"))
	ref2 := framework.LastSuccessfulRef(env.WaitApplied(t, ns, name, convoyv1alpha1.ReasonApplied, applyTimeout, renderChanged(ref1)))
	env.UpdateSource(t, ns, src, data("v3"))
	ref3 := framework.LastSuccessfulRef(env.WaitApplied(t, ns, name, convoyv1alpha1.ReasonApplied, applyTimeout, renderChanged(ref2)))
	waitHistory(t, store, key, ref2, ref3)
	waitStored(t, store, key, ref2, ref3)
	waitTargetVersion(t, ns, "v3")

	plugin := pluginRunner(t, ns, storeURL)
	out := plugin("history", name)
	for _, want := range []string{"NUMBER", render.ShortRef(ref2), render.ShortRef(ref3), "current"} {
		if !strings.Contains(out, want) {
			t.Fatalf("kubectl convoy history lacks %q:\n%s", want, out)
		}
	}

	// Rollback to entry 2 pins ref2: its objects come back, and the pin is reported applied.
	plugin("rollback", name, "2")
	env.WaitApplied(t, ns, name, convoyv1alpha1.ReasonApplied, applyTimeout, func(r *convoyv1alpha1.Release) (bool, string) {
		if framework.LastSuccessfulRef(r) != ref2 || r.Status.Pin == nil || !r.Status.Pin.Applied || r.Status.Pin.RenderRef != ref2 {
			return false, fmt.Sprintf("lastSuccessful %s, pin status %+v; want the pinned %s applied", framework.LastSuccessfulRef(r), r.Status.Pin, ref2)
		}
		return true, ""
	})
	waitTargetVersion(t, ns, "v2")
	waitHistory(t, store, key, ref3, ref2)
	waitStored(t, store, key, ref2, ref3)
	// The drift loop compares the target with the pinned render, read from the store.
	waitInSync(t, ns, name, metav1.ConditionTrue, func(r *convoyv1alpha1.Release) (bool, string) {
		if r.Status.Drift == nil || r.Status.Drift.RenderRef != ref2 {
			return false, "drift not checked against the pinned render " + render.ShortRef(ref2)
		}
		return true, ""
	})
	if out := plugin("status", name); !strings.Contains(out, "pinned") || !strings.Contains(out, "applied") || strings.Contains(out, "\x1b[") {
		t.Fatalf("kubectl convoy status (not a terminal: no colour):\n%s", out)
	}

	// A pin to a render that GC removed: Pinned, and nothing changes on the target.
	patchPin(t, ns, name, ref1)
	env.WaitApplied(t, ns, name, convoyv1alpha1.ReasonPinned, applyTimeout, nil)
	waitTargetVersion(t, ns, "v2")
	// The drift loop cannot know the drift against a render the store lacks.
	waitInSync(t, ns, name, metav1.ConditionUnknown, func(r *convoyv1alpha1.Release) (bool, string) {
		c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync)
		return c.Reason == "RenderNotStored" && strings.Contains(c.Message, render.ShortRef(ref1)), "want reason RenderNotStored naming " + render.ShortRef(ref1)
	})

	// Unpin: back to the source render.
	plugin("unpin", name)
	env.WaitApplied(t, ns, name, convoyv1alpha1.ReasonApplied, applyTimeout, func(r *convoyv1alpha1.Release) (bool, string) {
		if framework.LastSuccessfulRef(r) != ref3 || r.Status.Pin != nil {
			return false, fmt.Sprintf("lastSuccessful %s, pin status %+v; want the source render %s, no pin", framework.LastSuccessfulRef(r), r.Status.Pin, ref3)
		}
		return true, ""
	})
	waitTargetVersion(t, ns, "v3")
	waitHistory(t, store, key, ref2, ref3)
	plugin("sync", name)
	if r, err := env.GetRelease(ns, name); err != nil {
		t.Fatal(err)
	} else if _, err := time.Parse(time.RFC3339, r.Annotations[convoyv1alpha1.SyncRequestedAtAnnotation]); err != nil {
		t.Fatalf("kubectl convoy sync: annotation %q: %v", r.Annotations[convoyv1alpha1.SyncRequestedAtAnnotation], err)
	}

	// Store outage: the new render is not applied, the reason is StoreUnavailable and the
	// attempts back off; once the store is back, the sync resumes.
	outage.down(t)
	restored := false
	t.Cleanup(func() {
		if !restored {
			outage.up(t)
		}
	})
	env.UpdateSource(t, ns, src, data("v4"))
	env.WaitApplied(t, ns, name, convoyv1alpha1.ReasonStoreUnavailable, storeTimeout, func(r *convoyv1alpha1.Release) (bool, string) {
		if a := r.Status.LastAttempted; a == nil || a.Failures < 2 {
			return false, fmt.Sprintf("lastAttempted %+v: want at least 2 consecutive failures", r.Status.LastAttempted)
		}
		return true, ""
	})
	waitTargetVersion(t, ns, "v3")
	outage.up(t)
	restored = true
	ref4 := framework.LastSuccessfulRef(env.WaitApplied(t, ns, name, convoyv1alpha1.ReasonApplied, storeTimeout, renderChanged(ref3)))
	waitTargetVersion(t, ns, "v4")
	waitHistory(t, store, key, ref3, ref4)

	// Deleting the Release removes its prefix from the store.
	deleteRelease(t, ns, name)
	framework.Eventually(t, applyTimeout, func() (bool, string) {
		return framework.NotFound("Release "+name, func() error { _, err := env.GetRelease(ns, name); return err })
	})
	h, err := store.History(ctx, key)
	refs, err2 := store.ListRenders(ctx, key)
	if err != nil || err2 != nil || len(h) != 0 || len(refs) != 0 {
		t.Fatalf("after deletion: history %v (%v), renders %v (%v); want none", h, err, refs, err2)
	}
	if dir, ok := strings.CutPrefix(storeURL, "file://"); ok {
		if _, err := os.Stat(filepath.Join(dir, ns, name)); !os.IsNotExist(err) {
			t.Fatalf("the Release's directory is left in the file store: %v", err)
		}
	}
}

// useRenderStore runs the shared controller with the given store for the test, and restores the
// run's store afterwards.
func useRenderStore(t *testing.T, url string) {
	t.Helper()
	if env.Controller.RenderStoreURL() == url {
		return
	}
	if err := env.Controller.RestartWithRenderStore(url); err != nil {
		t.Fatalf("restart the controller with --render-store=%s: %v", url, err)
	}
	t.Cleanup(func() {
		if err := env.Controller.RestartWithRenderStore(env.RenderStoreURL); err != nil {
			t.Errorf("restore the controller's render store: %v", err)
		}
	})
}

// withMaxHistory sets spec.retention.maxHistory.
func withMaxHistory(n int32) framework.ReleaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.Retention = &convoyv1alpha1.RetentionPolicy{MaxHistory: &n} }
}

// historyIs reports whether the history holds exactly refs, in order.
func historyIs(store renderstore.Store, key types.NamespacedName, refs ...string) (bool, string) {
	h, err := store.History(ctx, key)
	if err != nil {
		return false, fmt.Sprintf("read history: %v", err)
	}
	var got []string
	for _, e := range h {
		got = append(got, render.ShortRef(e.RenderRef))
	}
	var want []string
	for _, r := range refs {
		want = append(want, render.ShortRef(r))
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		return false, fmt.Sprintf("history %v, want %v", got, want)
	}
	return true, ""
}

// waitHistory waits until the history holds exactly refs, in order.
func waitHistory(t *testing.T, store renderstore.Store, key types.NamespacedName, refs ...string) {
	t.Helper()
	framework.Eventually(t, storeTimeout, func() (bool, string) { return historyIs(store, key, refs...) })
}

// waitStored waits until the stored renders are exactly refs.
func waitStored(t *testing.T, store renderstore.Store, key types.NamespacedName, refs ...string) {
	t.Helper()
	framework.Eventually(t, storeTimeout, func() (bool, string) {
		stored, err := store.ListRenders(ctx, key)
		if err != nil {
			return false, fmt.Sprintf("list renders: %v", err)
		}
		want := map[string]bool{}
		for _, r := range refs {
			want[r] = true
		}
		if len(stored) != len(want) {
			return false, fmt.Sprintf("%d stored renders %v, want %d", len(stored), stored, len(want))
		}
		for _, r := range stored {
			if !want[r] {
				return false, fmt.Sprintf("render %s is stored, want only %v", r, refs)
			}
		}
		return true, ""
	})
}

// waitTargetVersion waits until the ConfigMap "settings" on bare holds version v.
func waitTargetVersion(t *testing.T, ns, v string) {
	t.Helper()
	framework.Eventually(t, applyTimeout, func() (bool, string) {
		cm, err := configMapOnTarget(env.Bare, ns, "settings")
		if err != nil {
			return false, fmt.Sprintf("get ConfigMap settings: %v", err)
		}
		if cm.Data["version"] != v {
			return false, fmt.Sprintf("ConfigMap settings has version %q, want %q", cm.Data["version"], v)
		}
		return true, ""
	})
}

// patchPin sets spec.pin.renderRef.
func patchPin(t *testing.T, ns, name, ref string) {
	t.Helper()
	body := []byte(`{"spec":{"pin":{"renderRef":"` + ref + `"}}}`)
	if _, err := env.Convoy().CoreV1alpha1().Releases(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		t.Fatalf("pin %s/%s: %v", ns, name, err)
	}
}

// pluginRunner returns a function running bin/kubectl-convoy against mgmt in ns, reading history
// from the store; it fails the test when the plugin fails.
func pluginRunner(t *testing.T, ns, storeURL string) func(args ...string) string {
	t.Helper()
	bin, err := framework.BinPath("kubectl-convoy")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.Mgmt.Kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig, "-n", ns, "--store", storeURL}, args...)...)
		cmd.Env = append(os.Environ(), env.S3.Env()...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl convoy %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("kubectl convoy %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
}
