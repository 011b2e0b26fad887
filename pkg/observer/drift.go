package observer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/clusters"
	"github.com/kumodo/convoy/pkg/desired"
	"github.com/kumodo/convoy/pkg/hooks"
	"github.com/kumodo/convoy/pkg/releasestatus"
	"github.com/kumodo/convoy/pkg/renderstore"
)

const (
	// maxDriftObjects bounds status.drift.objects.
	maxDriftObjects = 20
	// defaultInterval is the recheck interval of a Release without syncPolicy.interval (the CRD's default).
	defaultInterval = 5 * time.Minute
	// driftRecheckAfterSync bounds the wait for the next check after a /sync request, so InSync
	// turns True soon after the release controller repaired the drift.
	driftRecheckAfterSync = 10 * time.Second
	// notAppliedRecheck is the first recheck of a Release whose desired render the release
	// controller has not applied yet; it doubles per consecutive NotApplied check up to
	// notAppliedRecheckMax (and never beyond syncPolicy.interval), so a Manual Release waiting for a
	// sync is not rendered every few seconds.
	notAppliedRecheck    = 10 * time.Second
	notAppliedRecheckMax = 2 * time.Minute
)

// Reasons of the InSync condition.
const (
	ReasonInSync      = "InSync"
	ReasonDrifted     = "Drifted"
	ReasonCheckFailed = "CheckFailed"
	// ReasonNotApplied: the release controller has not applied the desired render yet (a new
	// Release, a changed source, a Manual Release waiting for a sync, a failing apply), so the
	// live objects are not expected to match it.
	ReasonNotApplied = "NotApplied"
	// ReasonNoRenderStore: the desired render must come from the render store and there is none.
	ReasonNoRenderStore = "RenderStoreRequired"
	// ReasonRenderNotStored: the render store does not hold the desired render.
	ReasonRenderNotStored = "RenderNotStored"
)

// desiredState is what renderDesired selected, or why the drift cannot be determined.
type desiredState struct {
	objects   []*unstructured.Unstructured
	renderRef string
	// client reaches the Release's target cluster.
	client *clusters.Client
	// undetermined, when not empty, is the reason the drift is Unknown, and message says why.
	undetermined string
	message      string
}

// driftResult is the outcome of one drift check.
type driftResult struct {
	status    metav1.ConditionStatus
	reason    string
	message   string
	renderRef string
	drifted   []drifted
}

// syncHandler is the drift loop: renderDesired, diffObjects, writeInSync, requestSync and
// scheduleRecheck (reconcile-flow.md "Drift loop"). Only a failed status write or a failed /sync
// request returns an error; an undetermined drift waits for the next check.
func (c *Controller) syncHandler(ctx context.Context, key cache.ObjectName) error {
	rel, ctx, cancel, err := c.release(ctx, key)
	defer cancel()
	if err != nil {
		return err
	}
	if rel == nil || rel.DeletionTimestamp != nil {
		c.notApplied.Forget(key)
		return nil
	}
	logger := klog.FromContext(ctx).WithValues("release", klog.KObj(rel), "loop", "drift")
	ctx = klog.NewContext(ctx, logger)

	want := c.renderDesired(ctx, rel)
	res, applied := checkApplied(rel, want)
	if applied {
		res = c.checkDrift(ctx, rel, want)
	}
	DriftChecks.WithLabelValues(driftLabel(res)).Inc()
	DriftedObjects.Add(float64(len(res.drifted)))
	logger.V(2).Info("Drift checked", "inSync", res.status, "reason", res.reason, "drifted", len(res.drifted), "renderRef", res.renderRef)

	if err := c.writeInSync(ctx, rel, res); err != nil {
		return err
	}
	if !applied {
		// The release controller is about to apply the render (or waits for a sync): check again
		// soon, not after the whole interval. No sync is requested for a render never applied.
		c.driftQueue.AddAfter(key, c.notAppliedDelay(key, rel))
		return nil
	}
	c.notApplied.Forget(key)
	requested := false
	if res.status == metav1.ConditionFalse && syncMode(rel) == v1alpha1.SyncModeAutomatic {
		if err := c.requestSync(ctx, rel); err != nil {
			return err
		}
		requested = c.config.SyncRequester != nil
	}
	c.scheduleRecheck(key, rel, requested)
	return nil
}

// checkApplied reports whether the release controller has applied the desired render
// (status.lastSuccessful names it). Before that the live objects are not expected to match it,
// so the drift is Unknown with reason NotApplied and no objects are read. An undetermined desired
// state counts as applied: checkDrift reports it.
func checkApplied(rel *v1alpha1.Release, want desiredState) (driftResult, bool) {
	if want.undetermined != "" {
		return driftResult{}, true
	}
	last := rel.Status.LastSuccessful
	if last != nil && last.RenderRef == want.renderRef {
		return driftResult{}, true
	}
	if rolledBack(rel, want.renderRef) {
		return driftResult{}, true
	}
	msg := fmt.Sprintf("render %s is not applied yet", shortRef(want.renderRef))
	if last != nil && last.RenderRef != "" {
		msg += fmt.Sprintf(" (the last applied render is %s)", shortRef(last.RenderRef))
	}
	return driftResult{status: metav1.ConditionUnknown, reason: ReasonNotApplied, message: msg, renderRef: want.renderRef}, false
}

// rolledBack reports whether the release controller rolled back to the render ref: the rollout is
// RolledBack to it and the Applied condition says the rollback was applied.
func rolledBack(rel *v1alpha1.Release, ref string) bool {
	applied := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ConditionApplied)
	return rel.Status.Rollout != nil && rel.Status.Rollout.Phase == v1alpha1.ReasonRolledBack &&
		rel.Status.LastHealthy != nil && rel.Status.LastHealthy.RenderRef == ref &&
		applied != nil && applied.Status == metav1.ConditionTrue && applied.Reason == v1alpha1.ReasonRolledBack
}

// notAppliedDelay is the wait before rechecking a Release whose render is not applied yet:
// notAppliedRecheck, doubling per consecutive NotApplied check up to notAppliedRecheckMax, and
// never longer than a non-zero syncPolicy.interval.
func (c *Controller) notAppliedDelay(key cache.ObjectName, rel *v1alpha1.Release) time.Duration {
	d := c.notApplied.When(key)
	if i := rel.Spec.SyncPolicy.Interval; i != nil && i.Duration > 0 && i.Duration < d {
		d = i.Duration
	}
	return d
}

// renderDesired selects the desired objects: the pinned render, then the last healthy render when
// the rollout is RolledBack (both from the render store), else the source rendered with its
// mutations (renderReleaseObjects).
func (c *Controller) renderDesired(ctx context.Context, rel *v1alpha1.Release) desiredState {
	if pin := rel.Spec.Pin; pin != nil && pin.RenderRef != "" {
		return c.pinnedDesired(ctx, rel, pin.RenderRef)
	}
	if rel.Status.Rollout != nil && rel.Status.Rollout.Phase == v1alpha1.ReasonRolledBack {
		last := rel.Status.LastHealthy
		if last == nil || last.RenderRef == "" {
			return desiredState{undetermined: ReasonRenderNotStored,
				message: "the rollout is RolledBack but status.lastHealthy names no render"}
		}
		return c.storedDesired(ctx, rel, last.RenderRef, "last healthy")
	}
	return c.renderReleaseObjects(ctx, rel)
}

// pinnedDesired returns the pinned render. When the pin names the fresh render (the source has
// not moved since the pin was set), rendering gives it without a store; any other pinned render
// comes from the store, as the release controller applies it.
func (c *Controller) pinnedDesired(ctx context.Context, rel *v1alpha1.Release, ref string) desiredState {
	fresh := c.renderReleaseObjects(ctx, rel)
	if fresh.undetermined == "" && fresh.renderRef == ref {
		return fresh
	}
	if fresh.undetermined != "" && c.config.Store == nil {
		// Without a store, whether the pin is the fresh render is all there is to know.
		return fresh
	}
	return c.storedDesired(ctx, rel, ref, "pinned")
}

// storedDesired reads render ref from the render store; what names the render in messages. No
// store, a render the store does not hold, or a store that cannot be read leave the drift
// undetermined.
func (c *Controller) storedDesired(ctx context.Context, rel *v1alpha1.Release, ref, what string) desiredState {
	store := c.config.Store
	if store == nil {
		return desiredState{undetermined: ReasonNoRenderStore, message: fmt.Sprintf(
			"the %s render %s is needed from the render store and no render store is configured (--render-store)", what, shortRef(ref))}
	}
	stored, err := store.GetRender(ctx, types.NamespacedName{Namespace: rel.Namespace, Name: rel.Name}, ref)
	if errors.Is(err, renderstore.ErrNotFound) {
		return desiredState{undetermined: ReasonRenderNotStored, message: fmt.Sprintf(
			"the %s render %s is not in the render store %s", what, shortRef(ref), store.Location())}
	}
	if err != nil {
		return desiredState{undetermined: v1alpha1.ReasonStoreUnavailable, message: fmt.Sprintf("reading the %s render: %v", what, err)}
	}
	_, client, err := c.renderer.Cluster(rel)
	if err != nil {
		return desiredState{undetermined: v1alpha1.ReasonClusterNotReady, message: err.Error()}
	}
	return desiredState{renderRef: stored.RenderRef, client: client, objects: appliedObjects(stored.Objects)}
}

// renderReleaseObjects renders the Release's source with the release controller's render path
// (pkg/desired: fetch, cluster, values, render, mutations, render reference). Hooks are left out:
// they are not part of the applied set.
func (c *Controller) renderReleaseObjects(ctx context.Context, rel *v1alpha1.Release) desiredState {
	res, err := c.renderer.Render(ctx, rel)
	if err != nil {
		reason := v1alpha1.ReasonRenderFailed
		var derr *desired.Error
		if errors.As(err, &derr) {
			reason = derr.Reason
		}
		return desiredState{undetermined: reason, message: err.Error()}
	}
	return desiredState{renderRef: res.RenderRef, client: res.Client, objects: appliedObjects(res.Objects)}
}

// appliedObjects leaves out the hooks of a render: they run in phases and are not part of the
// applied set.
func appliedObjects(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	applied, _ := hooks.Split(objs)
	return applied
}

// checkDrift runs diffObjects for the desired state and decides InSync.
func (c *Controller) checkDrift(ctx context.Context, rel *v1alpha1.Release, want desiredState) driftResult {
	if want.undetermined != "" {
		return driftResult{status: metav1.ConditionUnknown, reason: want.undetermined, message: want.message}
	}
	d := &differ{client: want.client, owner: rel.Namespace + "/" + rel.Name, target: rel.Spec.TargetNamespace}
	drifts, err := d.diffObjects(ctx, want.objects)
	if err != nil {
		return driftResult{status: metav1.ConditionUnknown, reason: ReasonCheckFailed, message: err.Error(), renderRef: want.renderRef}
	}
	if len(drifts) == 0 {
		return driftResult{status: metav1.ConditionTrue, reason: ReasonInSync, renderRef: want.renderRef,
			message: fmt.Sprintf("all %d objects match render %s", len(want.objects), shortRef(want.renderRef))}
	}
	return driftResult{status: metav1.ConditionFalse, reason: ReasonDrifted, renderRef: want.renderRef, drifted: drifts,
		message: driftMessage(drifts, len(want.objects))}
}

// driftMessage names the first drifted objects.
func driftMessage(drifts []drifted, total int) string {
	names := make([]string, 0, 5)
	for i, d := range drifts {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(drifts)-5))
			break
		}
		names = append(names, d.String())
	}
	return fmt.Sprintf("%d of %d objects drifted: %s", len(drifts), total, strings.Join(names, ", "))
}

// writeInSync writes the InSync condition and status.drift with server-side apply under
// convoy-observe. An Unknown check keeps the previous drift details.
func (c *Controller) writeInSync(ctx context.Context, rel *v1alpha1.Release, res driftResult) error {
	now := metav1.NewTime(c.clock.Now())
	var conds []metav1.Condition
	if prev := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ConditionInSync); prev != nil {
		conds = append(conds, *prev.DeepCopy())
	}
	meta.SetStatusCondition(&conds, metav1.Condition{
		Type: v1alpha1.ConditionInSync, Status: res.status, Reason: res.reason, Message: truncate(res.message, 2048),
		ObservedGeneration: rel.Generation, LastTransitionTime: now,
	})
	st := v1alpha1.ReleaseStatus{Conditions: conds}
	if res.status == metav1.ConditionUnknown {
		st.Drift = rel.Status.Drift.DeepCopy()
	} else {
		drift := &v1alpha1.DriftStatus{CheckedAt: &now, RenderRef: res.renderRef, Drifted: int32(len(res.drifted))}
		for i, d := range res.drifted {
			if i == maxDriftObjects {
				break
			}
			drift.Objects = append(drift.Objects, d.ref)
		}
		st.Drift = drift
	}
	return releasestatus.Apply(ctx, c.convoy, rel, st, DriftFieldManager)
}

// requestSync asks the release controller to sync through POST /sync.
func (c *Controller) requestSync(ctx context.Context, rel *v1alpha1.Release) error {
	if c.config.SyncRequester == nil {
		klog.FromContext(ctx).V(2).Info("Drift found in Automatic mode; no sync API configured to request a sync")
		return nil
	}
	at, err := c.config.SyncRequester.RequestSync(ctx, rel.Namespace, rel.Name, false)
	if err != nil {
		return fmt.Errorf("requesting a sync of release %s/%s: %w", rel.Namespace, rel.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Requested a sync to repair drift", "requestedAt", at)
	return nil
}

// scheduleRecheck requeues after syncPolicy.interval (none when it is 0); after a /sync request,
// within driftRecheckAfterSync.
func (c *Controller) scheduleRecheck(key cache.ObjectName, rel *v1alpha1.Release, requested bool) {
	interval := defaultInterval
	if rel.Spec.SyncPolicy.Interval != nil {
		interval = rel.Spec.SyncPolicy.Interval.Duration
	}
	if requested && (interval == 0 || interval > driftRecheckAfterSync) {
		interval = driftRecheckAfterSync
	}
	if interval > 0 {
		c.driftQueue.AddAfter(key, interval)
	}
}

// conditionEqual compares conditions without their transition time.
func conditionEqual(a, b *metav1.Condition) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.LastTransitionTime, y.LastTransitionTime = metav1.Time{}, metav1.Time{}
	return equality.Semantic.DeepEqual(x, y)
}

func driftLabel(res driftResult) string {
	switch res.status {
	case metav1.ConditionTrue:
		return "InSync"
	case metav1.ConditionFalse:
		return "Drifted"
	}
	return "Unknown"
}

func shortRef(ref string) string {
	ref = strings.TrimPrefix(ref, "sha256:")
	if len(ref) > 12 {
		return ref[:12]
	}
	return ref
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
