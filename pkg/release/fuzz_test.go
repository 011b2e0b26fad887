package release

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// Status times are RFC 3339 with whole seconds in UTC: these bound what a handled time can be.
var (
	minStatusUnix = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	maxStatusUnix = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
)

// FuzzPendingRequest reads a fuzzed sync annotation against a fuzzed handled time. A missing
// annotation is no request and no Event; one that is not an RFC 3339 time is no request and one
// Warning Event; an accepted one is rounded up to the whole second, never before the annotation
// and less than a second after it, is pending exactly when after the handled time, and once
// recorded as handled in the status (through its JSON form, as the API server stores it) is not
// pending again.
func FuzzPendingRequest(f *testing.F) {
	noon := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC).Unix()
	f.Add("2026-07-01T12:00:00.3Z", true, noon, true)
	f.Add("2026-07-01T12:00:01Z", true, noon, true)
	f.Add("2026-07-01T12:00:00Z", true, noon, true)
	f.Add("2026-07-01T14:00:00.999999999+02:00", true, noon, false)
	f.Add("2026-07-01 12:00:00", true, noon, false)
	f.Add("", true, int64(0), false)
	f.Add("", false, int64(0), true)
	f.Add("yesterday", true, noon, true)
	f.Add("2026-02-30T00:00:00Z", true, noon, false)
	f.Add("0000-01-01T00:00:00.5Z", true, minStatusUnix, true)
	f.Fuzz(func(t *testing.T, value string, present bool, handledUnix int64, hasHandled bool) {
		const annotation = v1alpha1.SyncRequestedAtAnnotation
		ctx := context.Background()
		rec := record.NewFakeRecorder(100)
		c := &Controller{recorder: rec, clock: testingclock.NewFakePassiveClock(time.Unix(noon, 0))}
		rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{}}}
		if present {
			rel.Annotations[annotation] = value
		}
		var handled *metav1.Time
		if hasHandled {
			span := maxStatusUnix - minStatusUnix + 1
			h := metav1.NewTime(time.Unix(minStatusUnix+((handledUnix%span)+span)%span, 0).UTC())
			handled = &h
		}

		got := c.pendingRequest(ctx, rel, annotation, handled)
		events := drainEvents(rec)
		if !present {
			if got != nil || len(events) > 0 {
				t.Fatalf("no annotation: request %v, events %q", got, events)
			}
			return
		}
		at, err := time.Parse(time.RFC3339Nano, value)
		if err == nil {
			// A time the status cannot hold (zero, or outside the years 1-9999 once rounded and in UTC)
			// is refused like a malformed one.
			if r := requestSecond(at).UTC(); r.IsZero() || r.Year() < 1 || r.Year() > 9999 {
				err = errors.New("outside the storable years")
			}
		}
		if err != nil {
			if got != nil {
				t.Fatalf("malformed annotation %q gave request %v", value, got)
			}
			if len(events) != 1 || !strings.HasPrefix(events[0], "Warning InvalidAnnotation ") || !strings.Contains(events[0], annotation) {
				t.Fatalf("malformed annotation %q: events %q, want one Warning InvalidAnnotation naming it", value, events)
			}
			return
		}
		if len(events) > 0 {
			t.Fatalf("valid annotation %q raised events %q", value, events)
		}
		want := requestSecond(at)
		if want.Nanosecond() != 0 || want.Before(at) || want.Sub(at) >= time.Second {
			t.Fatalf("requestSecond(%v) = %v: not the next whole second", at, want)
		}
		if handled != nil && !want.After(handled.Time) {
			if got != nil {
				t.Fatalf("request %v at or before the handled %v is pending", want, handled)
			}
			return
		}
		if got == nil || !got.Equal(&metav1.Time{Time: want}) {
			t.Fatalf("request %q after handled %v: got %v, want %v", value, handled, got, want)
		}

		// Handle it the way a sync does: the time goes into the status, through its JSON form.
		data, err := json.Marshal(v1alpha1.ReleaseStatus{LastHandledSyncAt: got})
		if err != nil {
			t.Fatalf("accepted request %q cannot be written to the status: %v", value, err)
		}
		var st v1alpha1.ReleaseStatus
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatalf("accepted request %q does not read back from the status %s: %v", value, data, err)
		}
		if st.LastHandledSyncAt == nil || !st.LastHandledSyncAt.Equal(got) {
			t.Fatalf("accepted request %q (%v) reads back from the status %s as %v", value, got, data, st.LastHandledSyncAt)
		}
		if again := c.pendingRequest(ctx, rel, annotation, st.LastHandledSyncAt); again != nil {
			t.Fatalf("request %q is pending again after it was handled (%s)", value, data)
		}
	})
}

// drainEvents returns the events recorded so far.
func drainEvents(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
