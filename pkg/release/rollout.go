package release

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/hooks"
	"github.com/kumodo/convoy/pkg/rollout"
	"github.com/kumodo/convoy/pkg/waves"
)

// planRollout makes at most one transition of the rollout state machine (rollout.Plan) and keeps the
// planned state in st; the outcome carries it to status.rollout once a render was applied. A last
// healthy render can only be rolled back to when the render store holds renders.
func (c *Controller) planRollout(ctx context.Context, st *reconcileState) rollout.Action {
	rel := st.rel
	in := rollout.Input{
		Policy:    rel.Spec.Rollout,
		State:     rel.Status.Rollout,
		RenderRef: st.renderRef,
		Verdict:   rel.Status.Health,
		ForceSync: st.forceSyncRequestedAt != nil,
		Now:       st.now,
	}
	if h := rel.Status.LastHealthy; h != nil && c.config.Store != nil {
		in.LastHealthy = h.RenderRef
	}
	state, action := rollout.Plan(in)
	st.rollout = state
	if prev := rel.Status.Rollout; state != nil && (prev == nil || prev.Phase != state.Phase) {
		klog.FromContext(ctx).V(2).Info("Rollout transition", "from", phaseOf(prev), "to", state.Phase, "action", action)
	}
	return action
}

func phaseOf(r *v1alpha1.RolloutStatus) string {
	if r == nil {
		return ""
	}
	return r.Phase
}

// applyLastHealthy applies the last healthy render from the render store instead of the source
// render, prunes what the failed render added and writes the inventory. It skips the gates, the dry
// run and the hooks: a rollback must not wait on what failed. The outcome's reason is RolledBack; a
// failed step is logged, reported in the message and retried with backoff.
func (c *Controller) applyLastHealthy(ctx context.Context, st *reconcileState) (reconcileOutcome, error) {
	logger := klog.FromContext(ctx)
	ref := st.rel.Status.LastHealthy.RenderRef
	out := st.outcome(v1alpha1.ReasonRolledBack, "", false)
	out.rollout = st.rollout
	fail := func(err error) (reconcileOutcome, error) {
		logger.Error(err, "Rolling back to the last healthy render failed", "lastHealthy", ref)
		out.failure = true
		out.message = fmt.Sprintf("rolling back to healthy render %s failed: %v", shortRef(ref), err)
		return out, err
	}
	stored, err := c.config.Store.GetRender(ctx, releaseName(st.rel), ref)
	if err != nil {
		return fail(fmt.Errorf("reading render %s: %w", ref, err))
	}
	objs, _ := hooks.Split(stored.Objects)
	grouped, err := waves.Group(objs)
	if err != nil {
		return fail(err)
	}
	if err := c.loadInventory(ctx, st); err != nil {
		return fail(err)
	}
	res, err := c.applyWaves(ctx, st, grouped, objs, ref, false)
	out.waves = res.waves
	if err != nil {
		return fail(err)
	}
	if res.reason != "" {
		return fail(fmt.Errorf("%s: %s", res.reason, res.message))
	}
	out.message = fmt.Sprintf("applied the last healthy render %s instead of the source render %s: %s",
		shortRef(ref), shortRef(st.renderRef), st.rollout.Message)
	return out, nil
}

// rolloutCondition sets RolloutSucceeded from status.rollout: True when Succeeded, False when Failed
// or RolledBack, Unknown while Progressing; no rollout removes it.
func rolloutCondition(st *v1alpha1.ReleaseStatus, generation int64, now metav1.Time) {
	r := st.Rollout
	if r == nil {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionRolloutSucceeded)
		return
	}
	status := metav1.ConditionFalse
	switch r.Phase {
	case rollout.PhaseSucceeded:
		status = metav1.ConditionTrue
	case rollout.PhaseProgressing:
		status = metav1.ConditionUnknown
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionRolloutSucceeded, Status: status, Reason: r.Phase, Message: r.Message,
		ObservedGeneration: generation, LastTransitionTime: now,
	})
}
