package release

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/clusters"
	"github.com/kumodo/convoy/pkg/deployer"
	"github.com/kumodo/convoy/pkg/hooks"
	"github.com/kumodo/convoy/pkg/rollout"
)

// reconcileOutcome is what one reconcile decided; the status assembly turns it into status fields.
type reconcileOutcome struct {
	// reason and message of the Applied condition.
	reason  string
	message string
	// renderRef and revision of the attempted render ("" when it failed before rendering).
	renderRef string
	revision  string
	// applied is true when the render was applied: it goes to lastSuccessful.
	applied bool
	// failure is true when the attempt failed (it counts towards the backoff); holds are not failures.
	failure bool
	// handledSyncAt and handledForceSyncAt are the pending /sync requests this attempt handled by
	// getting past the gates.
	handledSyncAt      *metav1.Time
	handledForceSyncAt *metav1.Time
	// waves replaces status.waves when not nil.
	waves []v1alpha1.WaveStatus
	// pin replaces status.pin.
	pin *v1alpha1.PinStatus
	// rollout replaces status.rollout when not nil (planRollout's state, once a render was applied).
	rollout *v1alpha1.RolloutStatus
	// syncing is true when the attempt got past the gates into stageSync.
	syncing bool
	// hooks is true when the render has hook objects: only then can the inventory hold lifecycle
	// entries for it.
	hooks bool
	// pollSoon asks for the next reconcile within pollInterval: the attempt waits for something that
	// sends no event (a hook, a wave's health, a lower cluster wave's timeout).
	pollSoon bool
}

// reconcileState carries one reconcile's inputs and intermediate results between the stages.
type reconcileState struct {
	rel *v1alpha1.Release
	now metav1.Time
	// mode is the sync mode with its default applied.
	mode v1alpha1.SyncMode
	// syncRequestedAt and forceSyncRequestedAt are the pending /sync requests (nil when none pending).
	syncRequestedAt      *metav1.Time
	forceSyncRequestedAt *metav1.Time

	cluster  *v1alpha1.Cluster
	client   *clusters.Client
	opts     deployer.Options
	revision string
	// rendered is the whole render, hooks included, as stored; objects are the objects it applies and
	// hooks its hook objects.
	rendered []*unstructured.Unstructured
	objects  []*unstructured.Unstructured
	hooks    []*unstructured.Unstructured
	// renderRef is the reference of the render that will be applied.
	renderRef string
	// pin is the pin status decided by resolvePinnedRender.
	pin *v1alpha1.PinStatus
	// rollout is the state planRollout decided.
	rollout *v1alpha1.RolloutStatus
	// inv is what the ReleaseInventory spec holds, once loaded (loadInventory) and as written since.
	inv       v1alpha1.ReleaseInventorySpec
	invLoaded bool
	// judged is what dryRunGate found, so the deploy of the same objects skips a read and a dry run.
	judged *deployer.Judged
}

// setRender sets the render to apply, split into applied objects and hooks.
func (st *reconcileState) setRender(objs []*unstructured.Unstructured, renderRef, revision string) {
	st.rendered, st.renderRef, st.revision = objs, renderRef, revision
	st.objects, st.hooks = hooks.Split(objs)
}

// newReconcileState records the attempt time and sync mode and reads the pending /sync and
// /sync?force=true requests from the annotations.
func (c *Controller) newReconcileState(ctx context.Context, rel *v1alpha1.Release) *reconcileState {
	st := &reconcileState{rel: rel, now: metav1.NewTime(c.clock.Now()), mode: rel.Spec.SyncPolicy.Mode}
	if st.mode == "" {
		st.mode = v1alpha1.SyncModeAutomatic
	}
	st.syncRequestedAt = c.pendingRequest(ctx, rel, v1alpha1.SyncRequestedAtAnnotation, rel.Status.LastHandledSyncAt)
	st.forceSyncRequestedAt = c.pendingRequest(ctx, rel, v1alpha1.ForceSyncRequestedAtAnnotation, rel.Status.LastHandledForceSyncAt)
	return st
}

// pendingRequest returns the request time in the annotation when it is after the handled time.
// A malformed time is reported in an Event and ignored.
func (c *Controller) pendingRequest(ctx context.Context, rel *v1alpha1.Release, annotation string, handled *metav1.Time) *metav1.Time {
	value, ok := rel.Annotations[annotation]
	if !ok {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, value)
	if err != nil {
		klog.FromContext(ctx).Info("Ignoring malformed sync annotation", "annotation", annotation, "err", err)
		c.recorder.Eventf(rel, "Warning", "InvalidAnnotation", "annotation %s is not an RFC 3339 time: %q", annotation, value)
		return nil
	}
	at := metav1.NewTime(requestSecond(t))
	if y := at.UTC().Year(); at.IsZero() || y < 1 || y > 9999 {
		// Such a time cannot be stored as lastHandled*At (RFC 3339, years 1-9999, zero is null), so it
		// would stay pending forever.
		klog.FromContext(ctx).Info("Ignoring a sync annotation outside the years 1-9999", "annotation", annotation)
		c.recorder.Eventf(rel, "Warning", "InvalidAnnotation", "annotation %s is outside the years 1-9999: %q", annotation, value)
		return nil
	}
	if handled != nil && !at.After(handled.Time) {
		return nil
	}
	return &at
}

// requestSecond rounds a request time up to the whole second: status times are stored with second
// precision, so an unrounded request would look pending again after it was handled. Requests within
// one second coalesce.
func requestSecond(t time.Time) time.Time {
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second)
	}
	return t
}

// syncPending reports whether a /sync (forced or not) is pending.
func (st *reconcileState) syncPending() bool {
	return st.syncRequestedAt != nil || st.forceSyncRequestedAt != nil
}

// reconcile runs the stages of reconcile-flow.md; each may stop the pipeline with an outcome.
func (c *Controller) reconcile(ctx context.Context, rel *v1alpha1.Release) (reconcileOutcome, error) {
	st := c.newReconcileState(ctx, rel)

	// 1. Render.
	if out, stop, err := c.stageRender(ctx, st); stop {
		return out, err
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("renderRef", st.renderRef))

	// 2-3. Rollout: a pin skips the state machine.
	if rel.Spec.Pin == nil && c.planRollout(ctx, st) == rollout.ActionApplyLastHealthy {
		return c.applyLastHealthy(ctx, st)
	}

	// 4. Gates.
	if out, stop := c.stageGates(ctx, st); stop {
		return out, nil
	}

	// 5. Sync.
	out, err := c.stageSync(ctx, st)

	// 6. syncFailed hooks.
	if isSyncingFailure(out) {
		c.runSyncFailedHooks(ctx, st)
	}
	if err != nil {
		// A transient failure leaves the /sync request pending, so the retry handles it.
		out.handledSyncAt, out.handledForceSyncAt = nil, nil
	}
	return out, err
}

// outcome builds an outcome of the current attempt.
func (st *reconcileState) outcome(reason, message string, failure bool) reconcileOutcome {
	return reconcileOutcome{reason: reason, message: message, failure: failure,
		renderRef: st.renderRef, revision: st.revision, pin: st.pin, hooks: len(st.hooks) > 0}
}
