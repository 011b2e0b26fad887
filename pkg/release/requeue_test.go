package release

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
func i32(v int32) *int32                   { return &v }

func TestBackoffDelay(t *testing.T) {
	custom := &v1alpha1.Backoff{Initial: dur(time.Second), Factor: i32(3), Max: dur(20 * time.Second)}
	tests := []struct {
		name string
		b    *v1alpha1.Backoff
		n    int32
		want time.Duration
	}{
		{"defaults first failure", nil, 1, 5 * time.Second},
		{"defaults second failure", nil, 2, 10 * time.Second},
		{"defaults fifth failure", nil, 5, 80 * time.Second},
		{"defaults capped", nil, 20, 1000 * time.Second},
		{"zero failures acts as one", nil, 0, 5 * time.Second},
		{"custom", custom, 3, 9 * time.Second},
		{"custom capped", custom, 4, 20 * time.Second},
		{"huge exponent capped", nil, 2000, 1000 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := backoffDelay(tt.b, tt.n); got != tt.want {
				t.Fatalf("backoffDelay(%d) = %v, want %v", tt.n, got, tt.want)
			}
		})
	}
}

func TestRequeueAfter(t *testing.T) {
	c := &Controller{}
	rel := func(interval *metav1.Duration) *v1alpha1.Release {
		return &v1alpha1.Release{Spec: v1alpha1.ReleaseSpec{SyncPolicy: v1alpha1.SyncPolicy{Interval: interval}}}
	}
	failed := v1alpha1.ReleaseStatus{LastAttempted: &v1alpha1.AttemptRecord{Failures: 3}}
	progressing := v1alpha1.ReleaseStatus{Rollout: &v1alpha1.RolloutStatus{Phase: "Progressing"}}
	tests := []struct {
		name   string
		rel    *v1alpha1.Release
		status v1alpha1.ReleaseStatus
		err    error
		want   time.Duration
	}{
		{"default interval", rel(nil), v1alpha1.ReleaseStatus{}, nil, 5 * time.Minute},
		{"interval", rel(dur(time.Minute)), v1alpha1.ReleaseStatus{}, nil, time.Minute},
		{"no periodic reconcile", rel(dur(0)), v1alpha1.ReleaseStatus{}, nil, 0},
		{"error backs off by failures", rel(dur(time.Minute)), failed, errors.New("x"), 20 * time.Second},
		{"progressing at most 10s", rel(dur(time.Minute)), progressing, nil, 10 * time.Second},
		{"progressing with interval 0", rel(dur(0)), progressing, nil, 10 * time.Second},
		{"progressing short interval kept", rel(dur(3 * time.Second)), progressing, nil, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.requeueAfter(tt.rel, tt.status, false, tt.err); got != tt.want {
				t.Fatalf("requeueAfter = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRequestSecond(t *testing.T) {
	base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in, want time.Time
	}{
		{base, base},
		{base.Add(time.Nanosecond), base.Add(time.Second)},
		{base.Add(999 * time.Millisecond), base.Add(time.Second)},
	}
	for _, tt := range tests {
		if got := requestSecond(tt.in); !got.Equal(tt.want) {
			t.Errorf("requestSecond(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
	// A handled request, stored at second precision, is not pending again.
	handled := metav1.NewTime(requestSecond(base.Add(300 * time.Millisecond)))
	if again := requestSecond(base.Add(300 * time.Millisecond)); again.After(handled.Time) {
		t.Fatal("a handled sub-second request looks pending again")
	}
}
