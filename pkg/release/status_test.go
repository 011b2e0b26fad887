package release

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

func TestAttemptRecord(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	prevFailed := &v1alpha1.AttemptRecord{RenderRef: "sha256:a", Reason: v1alpha1.ReasonApplyFailed, Failures: 2, At: &t0}
	prevApplied := &v1alpha1.AttemptRecord{RenderRef: "sha256:a", Reason: v1alpha1.ReasonApplied, At: &t0}
	tests := []struct {
		name         string
		prev         *v1alpha1.AttemptRecord
		out          reconcileOutcome
		wantFailures int32
		wantAt       metav1.Time
	}{
		{"first failure", nil, reconcileOutcome{reason: v1alpha1.ReasonApplyFailed, failure: true, renderRef: "sha256:a"}, 1, t1},
		{"consecutive failure", prevFailed, reconcileOutcome{reason: v1alpha1.ReasonApplyFailed, failure: true, renderRef: "sha256:a"}, 3, t1},
		{"success resets", prevFailed, reconcileOutcome{reason: v1alpha1.ReasonApplied, applied: true, renderRef: "sha256:a"}, 0, t1},
		{"hold keeps the count", prevFailed, reconcileOutcome{reason: v1alpha1.ReasonWaitingForSync, renderRef: "sha256:a"}, 2, t1},
		{"unchanged attempt keeps its time", prevApplied, reconcileOutcome{reason: v1alpha1.ReasonApplied, applied: true, renderRef: "sha256:a"}, 0, t0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := attemptRecord(tt.prev, tt.out, t1)
			if got.Failures != tt.wantFailures || !got.At.Equal(&tt.wantAt) {
				t.Fatalf("attemptRecord = failures %d at %v, want %d at %v", got.Failures, got.At, tt.wantFailures, tt.wantAt)
			}
		})
	}
}

func TestComputeStatus(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		reason string
		want   metav1.ConditionStatus
	}{
		{v1alpha1.ReasonApplied, metav1.ConditionTrue},
		{v1alpha1.ReasonRolledBack, metav1.ConditionTrue},
		{v1alpha1.ReasonWaitingForSync, metav1.ConditionFalse},
		{v1alpha1.ReasonUnappliable, metav1.ConditionFalse},
		{v1alpha1.ReasonClusterNotReady, metav1.ConditionFalse},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			st := v1alpha1.ReleaseStatus{}
			computeStatus(&st, 7, reconcileOutcome{reason: tt.reason, message: "m"}, now)
			cond := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionApplied)
			if cond == nil || cond.Status != tt.want || cond.Reason != tt.reason || st.ObservedGeneration != 7 {
				t.Fatalf("condition = %+v, observedGeneration %d", cond, st.ObservedGeneration)
			}
		})
	}
}

func TestOwnedStatusDropsOtherManagersFields(t *testing.T) {
	in := v1alpha1.ReleaseStatus{
		Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionApplied, Status: metav1.ConditionTrue},
			{Type: v1alpha1.ConditionHealthy, Status: metav1.ConditionTrue},
			{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionFalse},
		},
		Health: &v1alpha1.HealthStatus{Verdict: "Healthy"},
		Drift:  &v1alpha1.DriftStatus{Drifted: 3},
	}
	out := ownedStatus(in)
	if out.Health != nil || out.Drift != nil || len(out.Conditions) != 1 || out.Conditions[0].Type != v1alpha1.ConditionApplied {
		t.Fatalf("ownedStatus kept fields of other managers: %+v", out)
	}
}

func TestReleaseChanged(t *testing.T) {
	base := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Generation: 1, ResourceVersion: "1", Annotations: map[string]string{"a": "b"}}}
	statusOnly := base.DeepCopy()
	statusOnly.ResourceVersion = "2"
	statusOnly.Status.ObservedGeneration = 1
	specChange := statusOnly.DeepCopy()
	specChange.Generation = 2
	syncRequest := statusOnly.DeepCopy()
	syncRequest.Annotations[v1alpha1.SyncRequestedAtAnnotation] = "2026-01-01T00:00:00Z"
	deleting := statusOnly.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	tests := []struct {
		name string
		new  *v1alpha1.Release
		want bool
	}{
		{"status only", statusOnly, false},
		{"generation", specChange, true},
		{"sync annotation", syncRequest, true},
		{"deletion", deleting, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := releaseChanged(base, tt.new); got != tt.want {
				t.Fatalf("releaseChanged = %v, want %v", got, tt.want)
			}
		})
	}
}
