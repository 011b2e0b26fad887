package rollout

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

const (
	refOld     = "sha256:0000000000aa1111111111111111111111111111111111111111111111111111"
	refNew     = "sha256:abc1234567890000000000000000000000000000000000000000000000000000"
	refHealthy = "sha256:feedfacecafe2222222222222222222222222222222222222222222222222222"
)

var (
	t0      = metav1.NewTime(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	tPrev   = metav1.NewTime(t0.Add(2 * time.Minute)) // a transition that happened before now
	tNow    = metav1.NewTime(t0.Add(5 * time.Minute))
	rollbck = &v1alpha1.RolloutPolicy{FailurePolicy: &v1alpha1.FailurePolicy{Action: v1alpha1.FailureActionRollback}}
	halt    = &v1alpha1.RolloutPolicy{FailurePolicy: &v1alpha1.FailurePolicy{Action: v1alpha1.FailureActionHalt}}
)

func at(t metav1.Time) *metav1.Time { return &t }

func state(ref, phase, msg string) *v1alpha1.RolloutStatus {
	return &v1alpha1.RolloutStatus{RenderRef: ref, Phase: phase, StartedAt: at(t0), TransitionedAt: at(tPrev), Message: msg}
}

func verdict(ref, v, msg string) *v1alpha1.HealthStatus {
	return &v1alpha1.HealthStatus{RenderRef: ref, Verdict: v, Message: msg, AssessedAt: at(tNow)}
}

func withDeadline(p *v1alpha1.RolloutPolicy, d time.Duration) *v1alpha1.RolloutPolicy {
	out := p.DeepCopy()
	out.ProgressDeadline = &metav1.Duration{Duration: d}
	return out
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name       string
		in         Input
		wantPhase  string // "" = nil state
		wantAction Action
		// wantStarted and wantTransitioned are checked when the state is not nil.
		wantStarted      metav1.Time
		wantTransitioned metav1.Time
		wantMsg          []string // substrings of the message
		wantNotMsg       []string // substrings the message must not contain
	}{
		// Rule 1: no failure policy clears the rollout.
		{
			name:       "no policy clears",
			in:         Input{State: state(refNew, PhaseFailed, "x"), RenderRef: refNew, LastHealthy: refHealthy, Now: tNow},
			wantAction: ActionApplySource,
		},
		{
			name:       "policy without failurePolicy clears, even RolledBack",
			in:         Input{Policy: &v1alpha1.RolloutPolicy{}, State: state(refNew, PhaseRolledBack, "x"), RenderRef: refNew, LastHealthy: refHealthy, Now: tNow},
			wantAction: ActionApplySource,
		},
		// Rule 2: a new render starts Progressing from any phase or none.
		{
			name:      "no state starts Progressing",
			in:        Input{Policy: rollbck, RenderRef: refNew, Now: tNow},
			wantPhase: PhaseProgressing, wantAction: ActionApplySource,
			wantStarted: tNow, wantTransitioned: tNow,
			wantMsg: []string{"waiting for render abc123456789 to become healthy (deadline 10m0s)"},
		},
		{
			name:      "new render while Progressing restarts with its own deadline",
			in:        Input{Policy: withDeadline(rollbck, 3*time.Minute), State: state(refOld, PhaseProgressing, "w"), RenderRef: refNew, Now: tNow},
			wantPhase: PhaseProgressing, wantAction: ActionApplySource,
			wantStarted: tNow, wantTransitioned: tNow,
			wantMsg: []string{"abc123456789", "(deadline 3m0s)"}, wantNotMsg: []string{"0000000000aa"},
		},
		{
			name:      "new render from Succeeded",
			in:        Input{Policy: rollbck, State: state(refOld, PhaseSucceeded, "ok"), RenderRef: refNew, Now: tNow},
			wantPhase: PhaseProgressing, wantAction: ActionApplySource,
			wantStarted: tNow, wantTransitioned: tNow,
		},
		{
			name:      "new render from Failed does not roll back",
			in:        Input{Policy: rollbck, State: state(refOld, PhaseFailed, "bad"), RenderRef: refNew, LastHealthy: refHealthy, Now: tNow},
			wantPhase: PhaseProgressing, wantAction: ActionApplySource,
			wantStarted: tNow, wantTransitioned: tNow,
		},
		{
			name:      "new render from RolledBack restarts Progressing and applies the source",
			in:        Input{Policy: rollbck, State: state(refOld, PhaseRolledBack, "rolled back"), RenderRef: refNew, LastHealthy: refHealthy, Now: tNow},
			wantPhase: PhaseProgressing, wantAction: ActionApplySource,
			wantStarted: tNow, wantTransitioned: tNow,
		},
		{
			name:      "new render with a Healthy verdict for it still starts Progressing first",
			in:        Input{Policy: rollbck, State: state(refOld, PhaseSucceeded, "ok"), RenderRef: refNew, Verdict: verdict(refNew, verdictHealthy, "all healthy"), Now: tNow},
			wantPhase: PhaseProgressing, wantAction: ActionApplySource,
			wantStarted: tNow, wantTransitioned: tNow,
		},
		{
			name:      "unknown phase restarts Progressing",
			in:        Input{Policy: rollbck, State: state(refNew, "Bogus", ""), RenderRef: refNew, Now: tNow},
			wantPhase: PhaseProgressing, wantAction: ActionApplySource,
			wantStarted: tNow, wantTransitioned: tNow,
		},
		// Rule 3: a forced sync restarts Failed or RolledBack of the same render.
		{
			name:      "forced sync restarts Failed",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseFailed, "bad"), RenderRef: refNew, LastHealthy: refHealthy, ForceSync: true, Now: tNow},
			wantPhase: PhaseProgressing, wantAction: ActionApplySource,
			wantStarted: tNow, wantTransitioned: tNow,
			wantMsg: []string{"forced sync", "waiting for render abc123456789"},
		},
		{
			name:      "forced sync restarts RolledBack and applies the source",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseRolledBack, "rolled back"), RenderRef: refNew, LastHealthy: refHealthy, ForceSync: true, Now: tNow},
			wantPhase: PhaseProgressing, wantAction: ActionApplySource,
			wantStarted: tNow, wantTransitioned: tNow,
		},
		{
			name:      "forced sync restarts Failed under Halt",
			in:        Input{Policy: halt, State: state(refNew, PhaseFailed, "bad"+suffixHalted), RenderRef: refNew, ForceSync: true, Now: tNow},
			wantPhase: PhaseProgressing, wantAction: ActionApplySource,
			wantStarted: tNow, wantTransitioned: tNow,
		},
		{
			name:      "forced sync with Succeeded does nothing",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseSucceeded, "render abc123456789 is healthy"), RenderRef: refNew, ForceSync: true, Now: tNow},
			wantPhase: PhaseSucceeded, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: tPrev,
			wantMsg: []string{"render abc123456789 is healthy"},
		},
		{
			name:      "forced sync while Progressing keeps startedAt",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseProgressing, "w"), RenderRef: refNew, ForceSync: true, Now: tNow},
			wantPhase: PhaseProgressing, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: tPrev,
		},
		// Rule 4: Progressing and Healthy for this render -> Succeeded.
		{
			name:      "Healthy for this render succeeds",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseProgressing, "w"), RenderRef: refNew, Verdict: verdict(refNew, verdictHealthy, "2 of 2"), Now: tNow},
			wantPhase: PhaseSucceeded, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: tNow,
			wantMsg: []string{"render abc123456789 is healthy"},
		},
		{
			name:      "Healthy after the deadline still succeeds",
			in:        Input{Policy: withDeadline(rollbck, time.Minute), State: state(refNew, PhaseProgressing, "w"), RenderRef: refNew, Verdict: verdict(refNew, verdictHealthy, ""), Now: tNow},
			wantPhase: PhaseSucceeded, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: tNow,
		},
		{
			name:      "Healthy for an old render does not succeed",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseProgressing, "waiting for render abc123456789 to become healthy (deadline 10m0s)"), RenderRef: refNew, Verdict: verdict(refOld, verdictHealthy, "old is fine"), Now: tNow},
			wantPhase: PhaseProgressing, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: tPrev,
			wantMsg: []string{"(deadline 10m0s)"}, wantNotMsg: []string{"old is fine"},
		},
		// Rule 5: Progressing and Degraded for this render, or past the deadline -> Failed.
		{
			name:      "Degraded for this render fails",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseProgressing, "w"), RenderRef: refNew, Verdict: verdict(refNew, verdictDegraded, "Deployment web: 0 of 3 ready"), LastHealthy: refHealthy, Now: tNow},
			wantPhase: PhaseFailed, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: tNow,
			wantMsg: []string{"render abc123456789 is Degraded: Deployment web: 0 of 3 ready"},
		},
		{
			name:      "Degraded for an old render does not fail",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseProgressing, "w"), RenderRef: refNew, Verdict: verdict(refOld, verdictDegraded, "old broken"), LastHealthy: refHealthy, Now: tNow},
			wantPhase: PhaseProgressing, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: tPrev,
			wantNotMsg: []string{"old broken"},
		},
		{
			name:      "deadline exactly at the boundary is not passed",
			in:        Input{Policy: withDeadline(rollbck, 5*time.Minute), State: state(refNew, PhaseProgressing, "w"), RenderRef: refNew, Now: tNow},
			wantPhase: PhaseProgressing, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: tPrev,
		},
		{
			name:      "deadline passed by one second fails with the verdict message",
			in:        Input{Policy: withDeadline(rollbck, 5*time.Minute-time.Second), State: state(refNew, PhaseProgressing, "w"), RenderRef: refNew, Verdict: verdict(refNew, "Progressing", "1 of 2 objects healthy"), Now: tNow},
			wantPhase: PhaseFailed, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: tNow,
			wantMsg: []string{"not healthy within progressDeadline 4m59s: 1 of 2 objects healthy"},
		},
		{
			name:      "default deadline of 10m passed fails without a verdict for this render",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseProgressing, "w"), RenderRef: refNew, Verdict: verdict(refOld, verdictHealthy, "old is fine"), Now: metav1.NewTime(t0.Add(10*time.Minute + time.Second))},
			wantPhase: PhaseFailed, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: metav1.NewTime(t0.Add(10*time.Minute + time.Second)),
			wantMsg: []string{"not healthy within progressDeadline 10m0s: no health verdict for render abc123456789"}, wantNotMsg: []string{"old is fine"},
		},
		{
			name:      "default deadline not yet passed at 10m",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseProgressing, "w"), RenderRef: refNew, Now: metav1.NewTime(t0.Add(10 * time.Minute))},
			wantPhase: PhaseProgressing, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: tPrev,
		},
		// Rule 6: Progressing otherwise stays, the message says what it waits for.
		{
			name:      "Progressing verdict for this render updates the message only",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseProgressing, "waiting for render abc123456789 to become healthy (deadline 10m0s)"), RenderRef: refNew, Verdict: verdict(refNew, "Progressing", "1 of 2 objects healthy"), Now: tNow},
			wantPhase: PhaseProgressing, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: tPrev,
			wantMsg: []string{"waiting for render abc123456789 to become healthy: 1 of 2 objects healthy"},
		},
		{
			name:      "Progressing without a verdict keeps the message",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseProgressing, "waiting for render abc123456789 to become healthy (deadline 10m0s)"), RenderRef: refNew, Now: tNow},
			wantPhase: PhaseProgressing, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: tPrev,
			wantMsg: []string{"waiting for render abc123456789 to become healthy (deadline 10m0s)"},
		},
		{
			name: "Progressing without startedAt counts the deadline from now",
			in: Input{Policy: withDeadline(rollbck, time.Second), RenderRef: refNew, Now: tNow,
				State: &v1alpha1.RolloutStatus{RenderRef: refNew, Phase: PhaseProgressing, TransitionedAt: at(tPrev)}},
			wantPhase: PhaseProgressing, wantAction: ActionApplySource,
			wantStarted: tNow, wantTransitioned: tPrev,
		},
		// Rule 7: Failed, Rollback, a different last healthy render -> RolledBack.
		{
			name:      "Failed rolls back to the last healthy render",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseFailed, "render abc123456789 is Degraded: web down"), RenderRef: refNew, LastHealthy: refHealthy, Now: tNow},
			wantPhase: PhaseRolledBack, wantAction: ActionApplyLastHealthy,
			wantStarted: t0, wantTransitioned: tNow,
			wantMsg: []string{"rolled back to healthy render feedfacecafe after render abc123456789 failed: render abc123456789 is Degraded: web down"},
		},
		{
			name:      "Failed rolls back once a last healthy render appears, without the stale suffix",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseFailed, "web down"+suffixNoLastHealthy), RenderRef: refNew, LastHealthy: refHealthy, Now: tNow},
			wantPhase: PhaseRolledBack, wantAction: ActionApplyLastHealthy,
			wantStarted: t0, wantTransitioned: tNow,
			wantMsg: []string{"failed: web down"}, wantNotMsg: []string{"no healthy render"},
		},
		// Rule 8: Failed otherwise stays Failed.
		{
			name:      "Rollback without a last healthy render stays Failed",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseFailed, "web down"), RenderRef: refNew, Now: tNow},
			wantPhase: PhaseFailed, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: tPrev,
			wantMsg: []string{"web down; no healthy render to roll back to"},
		},
		{
			name:      "Rollback without a last healthy render does not repeat the suffix",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseFailed, "web down"+suffixNoLastHealthy), RenderRef: refNew, Now: tNow},
			wantPhase: PhaseFailed, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: tPrev,
			wantNotMsg: []string{suffixNoLastHealthy + suffixNoLastHealthy},
			wantMsg:    []string{"web down" + suffixNoLastHealthy},
		},
		{
			name:      "Rollback when the last healthy render is the failed one stays Failed",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseFailed, "web down"), RenderRef: refNew, LastHealthy: refNew, Now: tNow},
			wantPhase: PhaseFailed, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: tPrev,
		},
		{
			name:      "Halt stays Failed even with a last healthy render",
			in:        Input{Policy: halt, State: state(refNew, PhaseFailed, "web down"), RenderRef: refNew, LastHealthy: refHealthy, Now: tNow},
			wantPhase: PhaseFailed, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: tPrev,
			wantMsg: []string{"web down; halted (failurePolicy Halt)"}, wantNotMsg: []string{suffixHalted + suffixHalted},
		},
		{
			name:      "Halt does not repeat the suffix",
			in:        Input{Policy: halt, State: state(refNew, PhaseFailed, "web down"+suffixHalted), RenderRef: refNew, Now: tNow},
			wantPhase: PhaseFailed, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: tPrev,
			wantMsg: []string{"web down" + suffixHalted}, wantNotMsg: []string{suffixHalted + suffixHalted},
		},
		// Rule 9: RolledBack with the same source render stays and applies the last healthy.
		{
			name:      "RolledBack stays",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseRolledBack, "rolled back"), RenderRef: refNew, LastHealthy: refHealthy, Verdict: verdict(refHealthy, verdictHealthy, ""), Now: tNow},
			wantPhase: PhaseRolledBack, wantAction: ActionApplyLastHealthy,
			wantStarted: t0, wantTransitioned: tPrev,
			wantMsg: []string{"rolled back"},
		},
		{
			name:      "RolledBack without a loadable last healthy render still applies the last healthy",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseRolledBack, "rolled back"), RenderRef: refNew, Now: tNow},
			wantPhase: PhaseRolledBack, wantAction: ActionApplyLastHealthy,
			wantStarted: t0, wantTransitioned: tPrev,
		},
		{
			name:      "RolledBack under a policy switched to Halt stays",
			in:        Input{Policy: halt, State: state(refNew, PhaseRolledBack, "rolled back"), RenderRef: refNew, LastHealthy: refHealthy, Now: tNow},
			wantPhase: PhaseRolledBack, wantAction: ActionApplyLastHealthy,
			wantStarted: t0, wantTransitioned: tPrev,
		},
		// Rule 10: Succeeded with the same render stays.
		{
			name:      "Succeeded stays even with a later Degraded verdict",
			in:        Input{Policy: rollbck, State: state(refNew, PhaseSucceeded, "render abc123456789 is healthy"), RenderRef: refNew, Verdict: verdict(refNew, verdictDegraded, "broke later"), LastHealthy: refHealthy, Now: metav1.NewTime(t0.Add(time.Hour))},
			wantPhase: PhaseSucceeded, wantAction: ActionApplySource,
			wantStarted: t0, wantTransitioned: tPrev,
			wantNotMsg: []string{"broke later"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.in.State.DeepCopy()
			got, action := Plan(tt.in)

			// The input state is never mutated and never returned.
			if !equality.Semantic.DeepEqual(before, tt.in.State) {
				t.Errorf("input state mutated:\nbefore %+v\nafter  %+v", before, tt.in.State)
			}
			if got != nil && got == tt.in.State {
				t.Errorf("Plan returned the input state pointer")
			}

			if action != tt.wantAction {
				t.Errorf("action = %s, want %s", action, tt.wantAction)
			}
			if tt.wantPhase == "" {
				if got != nil {
					t.Fatalf("state = %+v, want nil", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("state = nil, want phase %s", tt.wantPhase)
			}
			if got.Phase != tt.wantPhase {
				t.Errorf("phase = %s, want %s (message %q)", got.Phase, tt.wantPhase, got.Message)
			}
			if got.RenderRef != tt.in.RenderRef {
				t.Errorf("renderRef = %s, want %s", got.RenderRef, tt.in.RenderRef)
			}
			if got.StartedAt == nil || !got.StartedAt.Equal(&tt.wantStarted) {
				t.Errorf("startedAt = %v, want %v", got.StartedAt, tt.wantStarted)
			}
			if got.TransitionedAt == nil || !got.TransitionedAt.Equal(&tt.wantTransitioned) {
				t.Errorf("transitionedAt = %v, want %v", got.TransitionedAt, tt.wantTransitioned)
			}
			if tt.in.State != nil && (got.StartedAt == tt.in.State.StartedAt || got.TransitionedAt == tt.in.State.TransitionedAt) {
				t.Errorf("returned state shares time pointers with the input state")
			}
			for _, s := range tt.wantMsg {
				if !strings.Contains(got.Message, s) {
					t.Errorf("message %q does not contain %q", got.Message, s)
				}
			}
			for _, s := range tt.wantNotMsg {
				if strings.Contains(got.Message, s) {
					t.Errorf("message %q contains %q", got.Message, s)
				}
			}
		})
	}
}

// TestPlanSimulation feeds each returned state into the next call, as reconcile does through
// status, and shows that one call makes at most one transition.
func TestPlanSimulation(t *testing.T) {
	type step struct {
		after       time.Duration // since t0
		verdict     *v1alpha1.HealthStatus
		lastHealthy string
		force       bool
		renderRef   string // default refNew
		wantPhase   string
		wantAction  Action
		transition  bool // the phase changes in this step
	}
	steps := []step{
		{after: 0, wantPhase: PhaseProgressing, wantAction: ActionApplySource, transition: true},
		{after: 10 * time.Second, verdict: verdict(refHealthy, verdictHealthy, "old render"), lastHealthy: refHealthy,
			wantPhase: PhaseProgressing, wantAction: ActionApplySource},
		{after: 20 * time.Second, verdict: verdict(refNew, "Progressing", "1 of 2 objects healthy"), lastHealthy: refHealthy,
			wantPhase: PhaseProgressing, wantAction: ActionApplySource},
		// Degraded with a last healthy render available: Failed only, no rollback in the same call.
		{after: 30 * time.Second, verdict: verdict(refNew, verdictDegraded, "web down"), lastHealthy: refHealthy,
			wantPhase: PhaseFailed, wantAction: ActionApplySource, transition: true},
		{after: 40 * time.Second, verdict: verdict(refNew, verdictDegraded, "web down"), lastHealthy: refHealthy,
			wantPhase: PhaseRolledBack, wantAction: ActionApplyLastHealthy, transition: true},
		// The rolled-back render turns Healthy: the rollout stays RolledBack on the last healthy render.
		{after: 50 * time.Second, verdict: verdict(refHealthy, verdictHealthy, "all healthy"), lastHealthy: refHealthy,
			wantPhase: PhaseRolledBack, wantAction: ActionApplyLastHealthy},
		{after: time.Hour, verdict: verdict(refHealthy, verdictHealthy, "all healthy"), lastHealthy: refHealthy,
			wantPhase: PhaseRolledBack, wantAction: ActionApplyLastHealthy},
		// A forced sync retries the same render.
		{after: time.Hour + time.Second, verdict: verdict(refHealthy, verdictHealthy, "all healthy"), lastHealthy: refHealthy, force: true,
			wantPhase: PhaseProgressing, wantAction: ActionApplySource, transition: true},
		{after: time.Hour + 10*time.Second, verdict: verdict(refNew, verdictHealthy, "all healthy"), lastHealthy: refHealthy,
			wantPhase: PhaseSucceeded, wantAction: ActionApplySource, transition: true},
		{after: 2 * time.Hour, verdict: verdict(refNew, verdictHealthy, "all healthy"), lastHealthy: refNew,
			wantPhase: PhaseSucceeded, wantAction: ActionApplySource},
		// A newer render starts again.
		{after: 2*time.Hour + time.Second, verdict: verdict(refNew, verdictHealthy, "all healthy"), lastHealthy: refNew, renderRef: refOld,
			wantPhase: PhaseProgressing, wantAction: ActionApplySource, transition: true},
	}

	var st *v1alpha1.RolloutStatus
	for i, s := range steps {
		ref := s.renderRef
		if ref == "" {
			ref = refNew
		}
		now := metav1.NewTime(t0.Add(s.after))
		prev := st.DeepCopy()
		got, action := Plan(Input{Policy: rollbck, State: st, RenderRef: ref, Verdict: s.verdict,
			LastHealthy: s.lastHealthy, ForceSync: s.force, Now: now})
		if got == nil {
			t.Fatalf("step %d: state = nil", i)
		}
		if got.Phase != s.wantPhase || action != s.wantAction {
			t.Fatalf("step %d: got (%s, %s), want (%s, %s); message %q", i, got.Phase, action, s.wantPhase, s.wantAction, got.Message)
		}
		changed := prev == nil || prev.Phase != got.Phase || prev.RenderRef != got.RenderRef
		if changed != s.transition {
			t.Errorf("step %d: transition = %v, want %v", i, changed, s.transition)
		}
		// transitionedAt moves exactly when the phase (or the render) changes.
		if changed && !got.TransitionedAt.Equal(&now) {
			t.Errorf("step %d: transitionedAt = %v, want %v", i, got.TransitionedAt, now)
		}
		if !changed && !got.TransitionedAt.Equal(prev.TransitionedAt) {
			t.Errorf("step %d: transitionedAt moved from %v to %v without a transition", i, prev.TransitionedAt, got.TransitionedAt)
		}
		st = got
	}
}

func TestActionString(t *testing.T) {
	for a, want := range map[Action]string{
		ActionApplySource:      "applySource",
		ActionApplyLastHealthy: "applyLastHealthy",
		Action(7):              "Action(7)",
	} {
		if got := a.String(); got != want {
			t.Errorf("Action(%d).String() = %q, want %q", int(a), got, want)
		}
	}
}

func TestShortRef(t *testing.T) {
	for ref, want := range map[string]string{
		refNew:            "abc123456789",
		"sha256:abc":      "abc",
		"":                "(none)",
		"sha256:":         "(none)",
		"plain0123456789": "plain0123456",
	} {
		if got := shortRef(ref); got != want {
			t.Errorf("shortRef(%q) = %q, want %q", ref, got, want)
		}
	}
}
