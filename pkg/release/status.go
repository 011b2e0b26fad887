package release

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/releasestatus"
	"github.com/kumodo/convoy/pkg/render"
)

// ownedConditions are the condition types the release controller writes.
var ownedConditions = []string{v1alpha1.ConditionApplied, v1alpha1.ConditionRolloutSucceeded, v1alpha1.ConditionLifecycleSucceeded}

// assembleStatus builds the release controller's part of the status from the cached status and the
// outcome, in the order of reconcile-flow.md "Status assembly". Fields owned by other managers are
// left out: the status is written with server-side apply.
func (c *Controller) assembleStatus(ctx context.Context, rel *v1alpha1.Release, out reconcileOutcome) (v1alpha1.ReleaseStatus, error) {
	prev := ownedStatus(rel.Status)
	st := *prev.DeepCopy()
	now := metav1.NewTime(c.clock.Now())

	// 1. Applied condition and observedGeneration.
	computeStatus(&st, rel.Generation, out, now)
	// 2. Pin.
	st.Pin = pinStatus(rel, out)
	// 3. The attempt, and a successful one.
	st.LastAttempted = attemptRecord(prev.LastAttempted, out, now)
	if out.applied {
		st.LastSuccessful = &v1alpha1.RenderRecord{RenderRef: out.renderRef, ShortRef: render.ShortRef(out.renderRef), At: &now, Revision: out.revision}
		if last := prev.LastSuccessful; last != nil && last.RenderRef == out.renderRef && last.Revision == out.revision {
			st.LastSuccessful.At = last.At
		}
	}
	// 4. In manual mode, a handled /sync goes to lastHandledSyncAt.
	if out.handledSyncAt != nil && rel.Spec.SyncPolicy.Mode == v1alpha1.SyncModeManual {
		st.LastHandledSyncAt = out.handledSyncAt
	}
	// 5. Waves.
	if out.waves != nil {
		st.Waves = out.waves
	}
	// 6. Retention.
	st.ResolvedRetentionPolicy = c.resolvedRetentionStatus(rel)
	// 7. Last healthy: the health loop's verdict for the attempted render.
	if h := rel.Status.Health; h != nil && h.Verdict == "Healthy" && out.renderRef != "" && h.RenderRef == out.renderRef {
		if st.LastHealthy == nil || st.LastHealthy.RenderRef != h.RenderRef {
			st.LastHealthy = &v1alpha1.HealthyRecord{RenderRef: h.RenderRef, At: h.AssessedAt}
		}
	}
	// 8. A handled forced sync goes to lastHandledForceSyncAt.
	if out.handledForceSyncAt != nil {
		st.LastHandledForceSyncAt = out.handledForceSyncAt
	}
	// 9. Rollout: the outcome's, else the previous one; without a failure policy there is no rollout
	// state machine, so no rollout status.
	if out.rollout != nil {
		st.Rollout = out.rollout
	}
	if rel.Spec.Rollout == nil || rel.Spec.Rollout.FailurePolicy == nil {
		st.Rollout = nil
	}
	rolloutCondition(&st, rel.Generation, now)
	// 10. Lifecycle.
	if err := c.applyLifecycleRollup(ctx, rel, out, &st, now); err != nil {
		return st, err
	}
	return st, nil
}

// computeStatus sets the Applied condition from the outcome, and observedGeneration.
func computeStatus(st *v1alpha1.ReleaseStatus, generation int64, out reconcileOutcome, now metav1.Time) {
	status := metav1.ConditionFalse
	if (out.reason == v1alpha1.ReasonApplied || out.reason == v1alpha1.ReasonRolledBack) && !out.failure {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type:               v1alpha1.ConditionApplied,
		Status:             status,
		Reason:             out.reason,
		Message:            out.message,
		ObservedGeneration: generation,
		LastTransitionTime: now,
	})
	st.ObservedGeneration = generation
}

// pinStatus sets status.pin: nil without a pin; else what resolvePinnedRender decided, or, when the
// reconcile stopped before it, the pin as not applied.
func pinStatus(rel *v1alpha1.Release, out reconcileOutcome) *v1alpha1.PinStatus {
	if rel.Spec.Pin == nil {
		return nil
	}
	if out.pin != nil {
		p := *out.pin
		p.Applied = p.Applied && out.reason == v1alpha1.ReasonApplied
		return &p
	}
	return &v1alpha1.PinStatus{RenderRef: rel.Spec.Pin.RenderRef, Message: "not applied: " + out.message}
}

// attemptRecord returns lastAttempted. Its time moves only when the attempt differs from the
// previous one, so an unchanged steady state writes no status.
func attemptRecord(prev *v1alpha1.AttemptRecord, out reconcileOutcome, now metav1.Time) *v1alpha1.AttemptRecord {
	rec := &v1alpha1.AttemptRecord{RenderRef: out.renderRef, At: &now, Revision: out.revision, Reason: out.reason}
	switch {
	case out.failure && prev != nil:
		rec.Failures = prev.Failures + 1
	case out.failure:
		rec.Failures = 1
	case !out.applied && out.reason != v1alpha1.ReasonApplied && prev != nil:
		// A hold neither counts as a failure nor resets the count.
		rec.Failures = prev.Failures
	}
	if prev != nil && prev.RenderRef == rec.RenderRef && prev.Revision == rec.Revision &&
		prev.Reason == rec.Reason && prev.Failures == rec.Failures {
		rec.At = prev.At
	}
	return rec
}

// resolvedRetentionStatus returns the retention in force: the Release's, else the Cluster's, else the
// controller's flags, field by field.
func (c *Controller) resolvedRetentionStatus(rel *v1alpha1.Release) *v1alpha1.RetentionPolicy {
	out := c.config.Retention.DeepCopy()
	layers := []*v1alpha1.RetentionPolicy{nil, rel.Spec.Retention}
	if cl, err := c.clusters.Clusters(rel.Namespace).Get(rel.Spec.ClusterRef.Name); err == nil {
		layers[0] = cl.Spec.Retention
	}
	for _, l := range layers {
		if l == nil {
			continue
		}
		if l.MaxHistory != nil {
			out.MaxHistory = l.MaxHistory
		}
		if l.MaxAge != nil {
			out.MaxAge = l.MaxAge
		}
	}
	return out
}

// ownedStatus projects a status onto the fields the release controller owns.
func ownedStatus(s v1alpha1.ReleaseStatus) v1alpha1.ReleaseStatus {
	out := v1alpha1.ReleaseStatus{
		ObservedGeneration:      s.ObservedGeneration,
		ReconciledAt:            s.ReconciledAt,
		LastAttempted:           s.LastAttempted,
		LastSuccessful:          s.LastSuccessful,
		LastHealthy:             s.LastHealthy,
		LastHandledSyncAt:       s.LastHandledSyncAt,
		LastHandledForceSyncAt:  s.LastHandledForceSyncAt,
		Pin:                     s.Pin,
		Waves:                   s.Waves,
		Rollout:                 s.Rollout,
		Lifecycle:               s.Lifecycle,
		ResolvedRetentionPolicy: s.ResolvedRetentionPolicy,
	}
	for _, t := range ownedConditions {
		if cond := meta.FindStatusCondition(s.Conditions, t); cond != nil {
			out.Conditions = append(out.Conditions, *cond)
		}
	}
	return *out.DeepCopy()
}

// writeStatus writes the status with server-side apply under convoy-release when it differs from the
// cached one (reconciledAt aside), setting reconciledAt.
func (c *Controller) writeStatus(ctx context.Context, rel *v1alpha1.Release, st v1alpha1.ReleaseStatus) error {
	prev := ownedStatus(rel.Status)
	prev.ReconciledAt, st.ReconciledAt = nil, nil
	if equality.Semantic.DeepEqual(prev, st) {
		return nil
	}
	now := metav1.NewTime(c.clock.Now())
	st.ReconciledAt = &now
	return releasestatus.Apply(ctx, c.convoy, rel, st, FieldManager)
}
