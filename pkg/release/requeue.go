package release

import (
	"math"
	"time"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// Defaults of the requeue rules, applied when the CRD defaults did not (objects built in code).
const (
	defaultInterval       = 5 * time.Minute
	defaultBackoffInitial = 5 * time.Second
	defaultBackoffFactor  = 2
	defaultBackoffMax     = 1000 * time.Second
	progressingRequeue    = 10 * time.Second
	// pollInterval bounds the requeue of an attempt that waits for something that sends no event.
	pollInterval = 5 * time.Second
)

// requeueAfter decides when the Release is reconciled next: after backoffDelay when the attempt
// returned an error, else after the sync interval: at most 10 seconds while a rollout is Progressing
// or a hook of the render runs, at most pollInterval while the attempt waits for a hook, a wave's
// health or a lower cluster wave. 0 means no requeue: only events and informer resyncs start the next
// reconcile.
func (c *Controller) requeueAfter(rel *v1alpha1.Release, status v1alpha1.ReleaseStatus, pollSoon bool, reconcileErr error) time.Duration {
	if reconcileErr != nil {
		var failures int32 = 1
		if status.LastAttempted != nil && status.LastAttempted.Failures > 0 {
			failures = status.LastAttempted.Failures
		}
		return backoffDelay(rel.Spec.SyncPolicy.Backoff, failures)
	}
	interval := defaultInterval
	if rel.Spec.SyncPolicy.Interval != nil {
		interval = rel.Spec.SyncPolicy.Interval.Duration
	}
	limit := func(max time.Duration) {
		if interval == 0 || interval > max {
			interval = max
		}
	}
	if status.Rollout != nil && status.Rollout.Phase == "Progressing" {
		limit(progressingRequeue)
	}
	for _, l := range status.Lifecycle {
		if l.State == "Running" {
			limit(progressingRequeue)
		}
	}
	if pollSoon {
		limit(pollInterval)
	}
	return interval
}

// backoffDelay is initial × factor^(n−1) after n consecutive failed attempts, capped at max.
func backoffDelay(b *v1alpha1.Backoff, n int32) time.Duration {
	initial, factor, max := defaultBackoffInitial, float64(defaultBackoffFactor), defaultBackoffMax
	if b != nil {
		if b.Initial != nil {
			initial = b.Initial.Duration
		}
		if b.Factor != nil {
			factor = float64(*b.Factor)
		}
		if b.Max != nil {
			max = b.Max.Duration
		}
	}
	if n < 1 {
		n = 1
	}
	d := float64(initial) * math.Pow(factor, float64(n-1))
	if d > float64(max) || math.IsInf(d, 0) || math.IsNaN(d) {
		return max
	}
	return time.Duration(d)
}
