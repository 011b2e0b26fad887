package release

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	listers "github.com/kumodo/convoy/generated/listers/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/render"
	"github.com/kumodo/convoy/pkg/renderstore"
)

// storeController is a Controller with only what the store steps use.
func storeController(t *testing.T, store renderstore.Store, maxHistory int32) *Controller {
	t.Helper()
	return &Controller{
		clusters: listers.NewClusterLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})),
		config:   Config{Store: store, Retention: v1alpha1.RetentionPolicy{MaxHistory: &maxHistory}},
	}
}

// fileStore opens a render store in a temporary directory.
func fileStore(t *testing.T) renderstore.Store {
	t.Helper()
	s, err := renderstore.Open("file://" + t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// brokenStore is a file store whose directory is a regular file: every call fails.
func brokenStore(t *testing.T) renderstore.Store {
	t.Helper()
	p := filepath.Join(t.TempDir(), "renders")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := renderstore.Open("file://" + p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// objectsOf returns a render of one ConfigMap with the given data value, and its reference.
func objectsOf(t *testing.T, value string) ([]*unstructured.Unstructured, string) {
	t.Helper()
	objs := []*unstructured.Unstructured{{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cfg", "namespace": "shop"},
		"data":     map[string]any{"value": value},
	}}}
	ref, err := render.RenderRef(objs)
	if err != nil {
		t.Fatal(err)
	}
	return objs, ref
}

func storeRelease(pin string) *v1alpha1.Release {
	rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", Generation: 4}}
	if pin != "" {
		rel.Spec.Pin = &v1alpha1.Pin{RenderRef: pin}
	}
	return rel
}

func TestResolvePinnedRender(t *testing.T) {
	ctx := context.Background()
	oldObjs, oldRef := objectsOf(t, "old")
	newObjs, newRef := objectsOf(t, "new")
	withOld := fileStore(t)
	if err := withOld.PutRender(ctx, releaseName(storeRelease("")), &renderstore.Render{RenderRef: oldRef, Revision: "v1", Objects: oldObjs}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		store      renderstore.Store
		pin        string
		wantStop   bool
		wantErr    bool
		wantReason string
		wantRef    string
		wantPin    *v1alpha1.PinStatus
	}{
		{name: "no pin", store: withOld, wantRef: newRef},
		{name: "pin is the source render", store: nil, pin: newRef, wantRef: newRef,
			wantPin: &v1alpha1.PinStatus{RenderRef: newRef, Applied: true}},
		{name: "no store", store: nil, pin: oldRef, wantStop: true, wantReason: v1alpha1.ReasonPinned,
			wantPin: &v1alpha1.PinStatus{RenderRef: oldRef}},
		{name: "render not stored", store: fileStore(t), pin: oldRef, wantStop: true, wantReason: v1alpha1.ReasonPinned,
			wantPin: &v1alpha1.PinStatus{RenderRef: oldRef}},
		{name: "store down", store: brokenStore(t), pin: oldRef, wantStop: true, wantErr: true,
			wantReason: v1alpha1.ReasonStoreUnavailable, wantPin: &v1alpha1.PinStatus{RenderRef: oldRef}},
		{name: "stored render replaces the source", store: withOld, pin: oldRef, wantRef: oldRef,
			wantPin: &v1alpha1.PinStatus{RenderRef: oldRef, Applied: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := storeController(t, tt.store, 10)
			st := &reconcileState{rel: storeRelease(tt.pin), objects: newObjs, renderRef: newRef, revision: "v2"}
			out, stop, err := c.resolvePinnedRender(ctx, st)
			if stop != tt.wantStop || (err != nil) != tt.wantErr || out.reason != tt.wantReason {
				t.Fatalf("resolvePinnedRender = %q stop=%v err=%v; want %q stop=%v err=%v", out.reason, stop, err, tt.wantReason, tt.wantStop, tt.wantErr)
			}
			if tt.wantStop {
				if st.pin == nil || st.pin.Applied || st.pin.RenderRef != tt.pin || st.pin.Message == "" {
					t.Fatalf("pin status %+v, want not applied with a message", st.pin)
				}
				return
			}
			if st.renderRef != tt.wantRef {
				t.Fatalf("renderRef %s, want %s", st.renderRef, tt.wantRef)
			}
			if (st.pin == nil) != (tt.wantPin == nil) || st.pin != nil && (st.pin.Applied != tt.wantPin.Applied || st.pin.RenderRef != tt.wantPin.RenderRef) {
				t.Fatalf("pin status %+v, want %+v", st.pin, tt.wantPin)
			}
			if tt.wantRef == oldRef {
				if st.revision != "v1" || st.objects[0].Object["data"].(map[string]any)["value"] != "old" {
					t.Fatalf("objects %v revision %q, want the stored render", st.objects, st.revision)
				}
			}
		})
	}
}

func TestPersistRender(t *testing.T) {
	ctx := context.Background()
	objs, ref := objectsOf(t, "a")
	syncAt := metav1.NewTime(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC))
	for _, tt := range []struct {
		name    string
		store   renderstore.Store
		wantOut bool
	}{
		{"no store", nil, false},
		{"stored", fileStore(t), false},
		{"store down", brokenStore(t), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := storeController(t, tt.store, 10)
			st := &reconcileState{rel: storeRelease(""), syncRequestedAt: &syncAt}
			st.setRender(objs, ref, "")
			out, err := c.persistRender(ctx, st)
			if (out != nil) != tt.wantOut || (err != nil) != tt.wantOut {
				t.Fatalf("persistRender = %+v, %v", out, err)
			}
			if out != nil && (out.reason != v1alpha1.ReasonStoreUnavailable || !out.failure || out.renderRef != ref) {
				t.Fatalf("outcome %+v, want a StoreUnavailable failure of %s", out, ref)
			}
			if tt.store != nil && !tt.wantOut {
				if _, err := tt.store.GetRender(ctx, releaseName(st.rel), ref); err != nil {
					t.Fatalf("render not stored: %v", err)
				}
			}
		})
	}
}

func TestRecordHistoryOncePerRender(t *testing.T) {
	ctx := context.Background()
	s := fileStore(t)
	c := storeController(t, s, 10)
	_, a := objectsOf(t, "a")
	_, b := objectsOf(t, "b")
	now := metav1.NewTime(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC))
	// Reconciles of a, a, a, b, b, a (a rollback): three entries.
	for _, ref := range []string{a, a, a, b, b, a} {
		c.recordHistory(ctx, &reconcileState{rel: storeRelease(""), renderRef: ref, revision: "r", now: now})
	}
	h, err := s.History(ctx, releaseName(storeRelease("")))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range h {
		got = append(got, e.RenderRef)
		if e.Generation != 4 || e.Revision != "r" || !e.Time.Equal(now.Time) {
			t.Fatalf("entry %+v lacks generation, revision or time", e)
		}
	}
	if strings.Join(got, ",") != strings.Join([]string{a, b, a}, ",") {
		t.Fatalf("history %v, want a, b, a", got)
	}
	// A store that is down is only logged.
	storeController(t, brokenStore(t), 10).recordHistory(ctx, &reconcileState{rel: storeRelease(""), renderRef: a})
}

func TestRunGC(t *testing.T) {
	ctx := context.Background()
	s := fileStore(t)
	c := storeController(t, s, 2)
	name := releaseName(storeRelease(""))
	now := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	var refs []string
	for i, v := range []string{"r0", "r1", "r2", "r3", "r4", "r5", "orphan"} {
		objs, ref := objectsOf(t, v)
		refs = append(refs, ref)
		if err := s.PutRender(ctx, name, &renderstore.Render{RenderRef: ref, Objects: objs}); err != nil {
			t.Fatal(err)
		}
		if v != "orphan" {
			if _, err := s.AppendHistory(ctx, name, renderstore.Entry{RenderRef: ref, Time: now.Add(time.Duration(i) * time.Minute)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// r5 was just applied; r0 is pinned elsewhere in time (lastHealthy), r1 is the pin.
	rel := storeRelease(refs[1])
	rel.Status.LastHealthy = &v1alpha1.HealthyRecord{RenderRef: refs[0]}
	rel.Status.LastSuccessful = &v1alpha1.RenderRecord{RenderRef: refs[4]}
	rel.Status.LastAttempted = &v1alpha1.AttemptRecord{RenderRef: refs[4]}
	c.runGC(ctx, &reconcileState{rel: rel, renderRef: refs[5], now: metav1.NewTime(now.Add(time.Hour))})

	h, err := s.History(ctx, name)
	if err != nil || len(h) != 2 || h[0].RenderRef != refs[4] || h[1].RenderRef != refs[5] {
		t.Fatalf("history after GC = %+v, %v; want the newest 2 entries", h, err)
	}
	stored, err := s.ListRenders(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{refs[0]: true, refs[1]: true, refs[4]: true, refs[5]: true}
	if len(stored) != len(want) {
		t.Fatalf("stored renders %d, want maxHistory (2) plus the protected lastHealthy and pin: %v", len(stored), stored)
	}
	for _, r := range stored {
		if !want[r] {
			t.Fatalf("render %s survived GC", r)
		}
	}

	// Steady state on r5: once lastHealthy moves on and the pin goes, the next reconcile of the same
	// render collects what they protected; a further one with nothing changed skips the GC.
	rel.Spec.Pin = nil
	rel.Status.LastHealthy = &v1alpha1.HealthyRecord{RenderRef: refs[5]}
	rel.Status.LastSuccessful = &v1alpha1.RenderRecord{RenderRef: refs[5]}
	rel.Status.LastAttempted = &v1alpha1.AttemptRecord{RenderRef: refs[5]}
	steady := &reconcileState{rel: rel, renderRef: refs[5], now: metav1.NewTime(now.Add(2 * time.Hour))}
	c.runGC(ctx, steady)
	if stored, err := s.ListRenders(ctx, name); err != nil || len(stored) != 2 {
		t.Fatalf("stored renders after lastHealthy moved on = %v, %v; want r4 and r5", stored, err)
	}
	if c.gcDue(steady, protectedRenders(steady)) {
		t.Fatal("steady state with nothing changed runs the GC again")
	}
	steady.now = metav1.NewTime(steady.now.Add(gcRecheck))
	if !c.gcDue(steady, protectedRenders(steady)) {
		t.Fatal("steady state skips the GC after gcRecheck")
	}
	// A store that is down is only logged.
	storeController(t, brokenStore(t), 2).runGC(ctx, &reconcileState{rel: rel, renderRef: refs[5]})
}

func TestDeleteStoredRenders(t *testing.T) {
	ctx := context.Background()
	s := fileStore(t)
	objs, ref := objectsOf(t, "a")
	rel := storeRelease("")
	if err := s.PutRender(ctx, releaseName(rel), &renderstore.Render{RenderRef: ref, Objects: objs}); err != nil {
		t.Fatal(err)
	}
	if err := storeController(t, s, 10).deleteStoredRenders(ctx, rel); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetRender(ctx, releaseName(rel), ref); !errors.Is(err, renderstore.ErrNotFound) {
		t.Fatalf("render after deletion: %v", err)
	}
	if err := storeController(t, nil, 10).deleteStoredRenders(ctx, rel); err != nil {
		t.Fatalf("without a store: %v", err)
	}
	if err := storeController(t, brokenStore(t), 10).deleteStoredRenders(ctx, rel); err == nil {
		t.Fatal("a store that is down must keep the finalizer")
	}
}
