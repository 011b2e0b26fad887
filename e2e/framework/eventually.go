package framework

import (
	"testing"
	"time"
)

// pollInterval is how often Eventually evaluates its condition.
const pollInterval = 200 * time.Millisecond

// Eventually evaluates cond every 200 ms until it reports true, and fails the test with the
// condition's last message when timeout passes first. The message should say what was seen,
// so a failure reads as a diagnosis.
func Eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true after %s: %s", timeout, msg)
		}
		time.Sleep(pollInterval)
	}
}
