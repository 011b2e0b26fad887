package release

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	// 2. Cluster wave gate.
	return c.clusterWaveGate(st)
}

// clusterWaveGate holds a Release while a Release of a lower cluster wave on the same Cluster is not
// Applied and Healthy (WaitingForClusterWave); past syncPolicy.clusterWaveTimeout the hold becomes
// ClusterWaveFailed. The wait counts from the first attempt of this render that was held.
func (c *Controller) clusterWaveGate(st *reconcileState) (reconcileOutcome, bool) {
	rel := st.rel
	wave := rel.Spec.SyncPolicy.ClusterWave
	objs, err := c.releaseIndexer.ByIndex(releaseByCluster, rel.Namespace+"/"+rel.Spec.ClusterRef.Name)
	if err != nil {
		return st.outcome(v1alpha1.ReasonWaitingForClusterWave, "reading the Releases of the cluster: "+err.Error(), false), true
	}
	var waiting []string
	for _, obj := range objs {
		other, ok := obj.(*v1alpha1.Release)
		if !ok || other.Name == rel.Name || other.DeletionTimestamp != nil || other.Spec.SyncPolicy.ClusterWave >= wave {
			continue
		}
		if !appliedAndHealthy(other) {
			waiting = append(waiting, fmt.Sprintf("%s (wave %d)", other.Name, other.Spec.SyncPolicy.ClusterWave))
		}
	}
	if len(waiting) == 0 {
		return reconcileOutcome{}, false
	}
	slices.Sort(waiting)
	since := st.now.Time
	if last := rel.Status.LastAttempted; last != nil && last.At != nil && last.RenderRef == st.renderRef &&
		last.Reason == v1alpha1.ReasonWaitingForClusterWave {
		since = last.At.Time
	}
	msg := fmt.Sprintf("cluster wave %d waits for lower waves to be Applied and Healthy: %s", wave, strings.Join(waiting, ", "))
	if timeout := rel.Spec.SyncPolicy.ClusterWaveTimeout; timeout != nil && timeout.Duration > 0 {
		if waited := st.now.Sub(since); waited > timeout.Duration {
			return st.outcome(v1alpha1.ReasonClusterWaveFailed, fmt.Sprintf("%s; gave up after clusterWaveTimeout %s",
				msg, timeout.Duration), true), true
		}
		msg += fmt.Sprintf(" (waited %s of %s)", st.now.Sub(since).Round(time.Second), timeout.Duration)
	}
	out := st.outcome(v1alpha1.ReasonWaitingForClusterWave, msg, false)
	out.pollSoon = true
	return out, true
}

// appliedAndHealthy reports whether a Release applied its current generation and is Healthy.
func appliedAndHealthy(rel *v1alpha1.Release) bool {
	applied := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ConditionApplied)
	healthy := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ConditionHealthy)
	return applied != nil && applied.Status == metav1.ConditionTrue && applied.Reason == v1alpha1.ReasonApplied &&
		applied.ObservedGeneration == rel.Generation && healthy != nil && healthy.Status == metav1.ConditionTrue
}
