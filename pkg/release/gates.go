package release

import (
	"context"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// stageGates checks the holds that keep a render from being applied; neither applies anything.
func (c *Controller) stageGates(_ context.Context, st *reconcileState) (reconcileOutcome, bool) {
	// 1. Manual gate: without a pending /sync nothing is applied. A render equal to the last successful
	// one is already applied.
	if st.mode == v1alpha1.SyncModeManual && !st.syncPending() {
		if last := st.rel.Status.LastSuccessful; last != nil && last.RenderRef == st.renderRef {
			return st.outcome(v1alpha1.ReasonApplied, appliedMessage(st.renderRef), false), true
		}
		return st.outcome(v1alpha1.ReasonWaitingForSync, "manual sync mode: the render "+shortRef(st.renderRef)+
			" waits for a /sync request (kubectl convoy sync)", false), true
	}
	return reconcileOutcome{}, false
}
