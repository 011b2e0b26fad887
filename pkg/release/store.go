package release

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/renderstore"
)

// The render store steps of the flow: resolvePinnedRender (stageRender step 7), persistRender
// (stageSync step 2), recordHistory and runGC (stageSync steps 8 and 9) and the deletion of the
// Release prefix (finalize step 6). See concepts.md "Render storage" and "Pin and history".

// releaseName is the render store's name of a Release.
func releaseName(rel *v1alpha1.Release) types.NamespacedName {
	return types.NamespacedName{Namespace: rel.Namespace, Name: rel.Name}
}

// resolvePinnedRender applies spec.pin. A pin naming the fresh render applies it as is. Any other
// render comes from the render store and replaces the objects; without a store, or when the store
// does not hold the render, the reconcile stops with Pinned. A store that cannot be read stops it
// with StoreUnavailable and an error, so the attempt is retried with backoff.
func (c *Controller) resolvePinnedRender(ctx context.Context, st *reconcileState) (reconcileOutcome, bool, error) {
	pin := st.rel.Spec.Pin
	if pin == nil {
		return reconcileOutcome{}, false, nil
	}
	if pin.RenderRef == st.renderRef {
		st.pin = &v1alpha1.PinStatus{RenderRef: pin.RenderRef, Applied: true, Message: "the pinned render is the current source render"}
		return reconcileOutcome{}, false, nil
	}
	notApplied := func(reason, msg string, err error) (reconcileOutcome, bool, error) {
		st.pin = &v1alpha1.PinStatus{RenderRef: pin.RenderRef, Message: msg}
		return st.outcome(reason, msg, true), true, err
	}
	store := c.config.Store
	if store == nil {
		return notApplied(v1alpha1.ReasonPinned, fmt.Sprintf(
			"pinned render %s differs from the source render and no render store is configured (--render-store)", pin.RenderRef), nil)
	}
	stored, err := store.GetRender(ctx, releaseName(st.rel), pin.RenderRef)
	if errors.Is(err, renderstore.ErrNotFound) {
		return notApplied(v1alpha1.ReasonPinned, fmt.Sprintf(
			"pinned render %s is not in the render store %s", pin.RenderRef, store.Location()), nil)
	}
	if err != nil {
		return notApplied(v1alpha1.ReasonStoreUnavailable, fmt.Sprintf("reading the pinned render: %v", err), err)
	}
	klog.FromContext(ctx).V(2).Info("Applying the pinned render instead of the source render",
		"pinned", pin.RenderRef, "source", st.renderRef)
	st.pin = &v1alpha1.PinStatus{RenderRef: pin.RenderRef, Applied: true,
		Message: "applied the stored render; the source renders " + shortRef(st.renderRef)}
	st.setRender(stored.Objects, stored.RenderRef, stored.Revision)
	return reconcileOutcome{}, false, nil
}

// persistRender writes the render to the render store before anything is applied, so every render
// that reaches a cluster can be pinned later. Without a store it does nothing. A failed write stops
// the sync with StoreUnavailable and an error: nothing is applied and the attempt backs off.
func (c *Controller) persistRender(ctx context.Context, st *reconcileState) (*reconcileOutcome, error) {
	store := c.config.Store
	if store == nil || st.alreadyApplied() {
		return nil, nil
	}
	err := store.PutRender(ctx, releaseName(st.rel), &renderstore.Render{
		RenderRef: st.renderRef, Revision: st.revision, Objects: st.rendered,
	})
	if err == nil {
		return nil, nil
	}
	out := c.syncOutcome(st, v1alpha1.ReasonStoreUnavailable, fmt.Sprintf("persisting the render: %v", err), true)
	return &out, fmt.Errorf("persisting render %s: %w", st.renderRef, err)
}

// recordHistory appends the applied render to the history log unless it is the newest entry
// already: history grows by one per newly applied render, not per reconcile. Errors are logged.
func (c *Controller) recordHistory(ctx context.Context, st *reconcileState) {
	store := c.config.Store
	if store == nil || st.alreadyApplied() {
		return
	}
	logger := klog.FromContext(ctx)
	name := releaseName(st.rel)
	history, err := store.History(ctx, name)
	if err != nil {
		logger.Error(err, "Reading the render history")
		return
	}
	if n := len(history); n > 0 && history[n-1].RenderRef == st.renderRef {
		return
	}
	e, err := store.AppendHistory(ctx, name, renderstore.Entry{
		RenderRef: st.renderRef, Revision: st.revision, Generation: st.rel.Generation, Time: st.now.Time,
	})
	if err != nil {
		logger.Error(err, "Recording the render in the history")
		return
	}
	logger.V(2).Info("Recorded render in the history", "number", e.Number)
}

// runGC removes history entries beyond the resolved retention and the renders no kept entry refers
// to, never the renders of lastSuccessful, lastAttempted, the pin or lastHealthy. Errors are logged.
func (c *Controller) runGC(ctx context.Context, st *reconcileState) {
	protected := protectedRenders(st)
	if !c.gcDue(st, protected) {
		return
	}
	keep := map[string]bool{}
	for _, ref := range protected {
		keep[ref] = true
	}
	store := c.config.Store
	if store == nil {
		// Without a history, the hooks of the protected renders are the ones kept.
		c.cleanupHooks(ctx, st, keep)
		return
	}
	logger := klog.FromContext(ctx)
	name := releaseName(st.rel)
	history, err := store.History(ctx, name)
	if err != nil {
		logger.Error(err, "Render GC: reading the history")
		return
	}
	stored, err := store.ListRenders(ctx, name)
	if err != nil {
		logger.Error(err, "Render GC: listing the stored renders")
		return
	}
	plan := renderstore.PlanGC(history, stored, retention(c.resolvedRetentionStatus(st.rel)), protected, st.now.Time)
	// The history is trimmed first, so it never names a render that is already gone.
	if plan.TrimHistory {
		if err := store.ReplaceHistory(ctx, name, plan.History); err != nil {
			logger.Error(err, "Render GC: trimming the history")
			return
		}
	}
	for _, ref := range plan.DeleteRenders {
		if err := store.DeleteRender(ctx, name, ref); err != nil {
			logger.Error(err, "Render GC: deleting a render", "deleted", ref)
		}
	}
	for _, e := range plan.History {
		keep[e.RenderRef] = true
	}
	c.cleanupHooks(ctx, st, keep)
	if plan.TrimHistory || len(plan.DeleteRenders) > 0 {
		logger.V(2).Info("Render GC", "historyKept", len(plan.History), "historyRemoved", len(history)-len(plan.History),
			"rendersDeleted", len(plan.DeleteRenders))
	}
}

// gcRecheck is how often a steady-state Release runs the GC again with nothing changed, so
// retention.maxAge trims entries that aged out while no new render came.
const gcRecheck = time.Hour

// gcMark is what the last GC of a Release ran with.
type gcMark struct {
	key string
	at  time.Time
}

// gcDue reports whether runGC has work to do: after a new render, and in steady state only when what
// GC depends on changed since its last run in this process (a render left the protected set, say
// lastHealthy moved on, or the retention changed) or gcRecheck passed. A steady-state reconcile
// otherwise neither reads nor writes the store.
func (c *Controller) gcDue(st *reconcileState, protected []string) bool {
	refs := slices.Compact(slices.Sorted(slices.Values(protected)))
	key := strings.Join(refs, ",") + "|" + fmt.Sprint(retention(c.resolvedRetentionStatus(st.rel)))
	if prev, ok := c.gcMarks.Load(st.rel.UID); ok && st.alreadyApplied() {
		m := prev.(gcMark)
		if m.key == key && st.now.Time.Sub(m.at) < gcRecheck {
			return false
		}
	}
	c.gcMarks.Store(st.rel.UID, gcMark{key: key, at: st.now.Time})
	return true
}

// alreadyApplied reports whether the render is the one lastSuccessful names: it is stored and in
// the history since it was applied, so a steady-state reconcile neither writes nor reads the store.
func (st *reconcileState) alreadyApplied() bool {
	last := st.rel.Status.LastSuccessful
	return last != nil && last.RenderRef == st.renderRef && st.forceSyncRequestedAt == nil
}

// protectedRenders are the renders GC keeps whatever the retention: the one just applied (the next
// lastSuccessful and lastAttempted), the current lastSuccessful, lastAttempted and lastHealthy, and
// the pin.
func protectedRenders(st *reconcileState) []string {
	refs := []string{st.renderRef}
	s := st.rel.Status
	if s.LastSuccessful != nil {
		refs = append(refs, s.LastSuccessful.RenderRef)
	}
	if s.LastAttempted != nil {
		refs = append(refs, s.LastAttempted.RenderRef)
	}
	if s.LastHealthy != nil {
		refs = append(refs, s.LastHealthy.RenderRef)
	}
	if st.rel.Spec.Pin != nil {
		refs = append(refs, st.rel.Spec.Pin.RenderRef)
	}
	return refs
}

// retention converts the resolved retention policy for PlanGC.
func retention(p *v1alpha1.RetentionPolicy) renderstore.Retention {
	var r renderstore.Retention
	if p == nil {
		return r
	}
	if p.MaxHistory != nil {
		r.MaxHistory = int(*p.MaxHistory)
	}
	if p.MaxAge != nil {
		r.MaxAge = p.MaxAge.Duration
	}
	return r
}

// deleteStoredRenders deletes the Release prefix from the render store (finalize step 6). An error
// keeps the finalizer, so the deletion is retried and no renders are left behind.
func (c *Controller) deleteStoredRenders(ctx context.Context, rel *v1alpha1.Release) error {
	store := c.config.Store
	if store == nil {
		return nil
	}
	if err := store.DeleteRelease(ctx, releaseName(rel)); err != nil {
		return fmt.Errorf("deleting the stored renders of the release: %w", err)
	}
	return nil
}
