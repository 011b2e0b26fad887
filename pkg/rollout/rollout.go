// Package rollout is the rollout state machine of a Release: a pure function from the previous
// status.rollout, the fresh render and the health loop's verdict to the next status.rollout and
// what reconcile applies.
//
// # Enabling
//
// The state machine runs only when spec.rollout.failurePolicy is set. Without it Plan returns a nil
// state (reconcile clears status.rollout) and reconcile applies the source render. A pinned Release
// does not call Plan at all.
//
// # Transitions
//
// Plan makes at most one transition per call, so every phase a rollout goes through is written to
// status at least once and each step is visible to users and tests:
//
//   - a new render (its ref differs from status.rollout.renderRef), from any phase or none, starts
//     Progressing;
//   - a forced sync restarts a Failed or RolledBack rollout of the same render (Progressing);
//   - Progressing with a Healthy verdict for that render becomes Succeeded;
//   - Progressing with a Degraded verdict for that render, or past startedAt + progressDeadline
//     (default 10m), becomes Failed;
//   - Failed with failurePolicy Rollback and a loadable last healthy render other than the failed
//     one becomes RolledBack, and reconcile applies the last healthy render;
//   - RolledBack with the same source render stays RolledBack and keeps applying the last healthy
//     render;
//   - anything else keeps its phase (and its transitionedAt).
//
// Verdicts assessed for another render (an older one still being reported by the health loop) never
// move a rollout. Plan never reads a clock: the caller passes Now.
package rollout

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// Action says what reconcile applies after planning.
type Action int

const (
	// ActionApplySource applies the fresh source render.
	ActionApplySource Action = iota
	// ActionApplyLastHealthy applies the last healthy render from the render store.
	ActionApplyLastHealthy
)

// String returns the action's name as used in logs: "applySource" or "applyLastHealthy".
func (a Action) String() string {
	switch a {
	case ActionApplySource:
		return "applySource"
	case ActionApplyLastHealthy:
		return "applyLastHealthy"
	default:
		return "Action(" + strconv.Itoa(int(a)) + ")"
	}
}

// Phases written to status.rollout.phase.
const (
	// PhaseProgressing: the render is applied and convoy waits for a Healthy verdict for it.
	PhaseProgressing = "Progressing"
	// PhaseSucceeded: the render was found Healthy within the progress deadline.
	PhaseSucceeded = "Succeeded"
	// PhaseFailed: the render was Degraded or not Healthy within the progress deadline.
	PhaseFailed = "Failed"
	// PhaseRolledBack: the render failed and the last healthy render is applied instead.
	PhaseRolledBack = "RolledBack"
)

// DefaultProgressDeadline applies when spec.rollout.progressDeadline is not set.
const DefaultProgressDeadline = 10 * time.Minute

// Verdicts of the health loop (status.health.verdict) that move a rollout. Kept local so this
// pure package does not depend on the health assessment code.
const (
	verdictHealthy  = "Healthy"
	verdictDegraded = "Degraded"
)

// Suffixes a Failed message gets while it stays Failed; stripped again before the message is quoted.
const (
	suffixNoLastHealthy = "; no healthy render to roll back to"
	suffixHalted        = "; halted (failurePolicy Halt)"
)

// Input is everything Plan decides on.
type Input struct {
	// Policy is spec.rollout (nil = none).
	Policy *v1alpha1.RolloutPolicy
	// State is the previous status.rollout (nil = none).
	State *v1alpha1.RolloutStatus
	// RenderRef is the fresh source render.
	RenderRef string
	// Verdict is the health loop's verdict (status.health); may be nil.
	Verdict *v1alpha1.HealthStatus
	// LastHealthy is the renderRef of a last healthy render that can be applied ("" when none or
	// not loadable from the render store).
	LastHealthy string
	// ForceSync is true when a /sync?force=true request is pending.
	ForceSync bool
	// Now is the reconcile's time; Plan reads no clock.
	Now metav1.Time
}

// Plan makes at most one transition of the rollout state machine and returns the new
// status.rollout and what reconcile applies. The returned state is always a new value (or nil when
// the Release has no failure policy); in.State is never modified.
func Plan(in Input) (*v1alpha1.RolloutStatus, Action) {
	if in.Policy == nil || in.Policy.FailurePolicy == nil {
		// No failure policy clears the rollout.
		return nil, ActionApplySource
	}
	deadline := progressDeadline(in.Policy)

	if in.State == nil || in.State.RenderRef != in.RenderRef {
		return start(in, deadline, ""), ActionApplySource
	}

	st := in.State.DeepCopy()
	switch st.Phase {
	case PhaseProgressing:
		return progress(in, st, deadline), ActionApplySource

	case PhaseFailed:
		if in.ForceSync {
			return start(in, deadline, "forced sync: "), ActionApplySource
		}
		return failed(in, st)

	case PhaseRolledBack:
		if in.ForceSync {
			return start(in, deadline, "forced sync: "), ActionApplySource
		}
		// Desired stays the last healthy render. When it is no longer loadable, applying the
		// failed source would undo the rollback silently; the caller reports the missing render.
		return st, ActionApplyLastHealthy

	case PhaseSucceeded:
		return st, ActionApplySource

	default:
		// An unknown or empty phase cannot be continued: start the render's rollout afresh.
		return start(in, deadline, ""), ActionApplySource
	}
}

// start returns a fresh Progressing state for in.RenderRef.
func start(in Input, deadline time.Duration, prefix string) *v1alpha1.RolloutStatus {
	now := in.Now
	return &v1alpha1.RolloutStatus{
		RenderRef:      in.RenderRef,
		Phase:          PhaseProgressing,
		StartedAt:      &now,
		TransitionedAt: ptr(now),
		Message: fmt.Sprintf("%swaiting for render %s to become healthy (deadline %s)",
			prefix, shortRef(in.RenderRef), deadline),
	}
}

// progress handles a Progressing rollout: Succeeded on Healthy, Failed on Degraded or a passed
// deadline, else unchanged apart from the message.
func progress(in Input, st *v1alpha1.RolloutStatus, deadline time.Duration) *v1alpha1.RolloutStatus {
	// A verdict assessed for another render says nothing about this one.
	var verdict *v1alpha1.HealthStatus
	if in.Verdict != nil && in.Verdict.RenderRef == in.RenderRef {
		verdict = in.Verdict
	}
	short := shortRef(in.RenderRef)

	if verdict != nil && verdict.Verdict == verdictHealthy {
		return transition(in, st, PhaseSucceeded, fmt.Sprintf("render %s is healthy", short))
	}
	if verdict != nil && verdict.Verdict == verdictDegraded {
		msg := fmt.Sprintf("render %s is Degraded", short)
		if verdict.Message != "" {
			msg += ": " + verdict.Message
		}
		return transition(in, st, PhaseFailed, msg)
	}

	if st.StartedAt == nil {
		// A state written without startedAt: count the deadline from now rather than never.
		st.StartedAt = ptr(in.Now)
	}
	// The deadline passes strictly after startedAt + progressDeadline.
	if in.Now.Time.After(st.StartedAt.Add(deadline)) {
		reason := fmt.Sprintf("no health verdict for render %s", short)
		if verdict != nil && verdict.Message != "" {
			reason = verdict.Message
		}
		return transition(in, st, PhaseFailed,
			fmt.Sprintf("not healthy within progressDeadline %s: %s", deadline, reason))
	}

	if verdict != nil && verdict.Message != "" {
		st.Message = fmt.Sprintf("waiting for render %s to become healthy: %s", short, verdict.Message)
	}
	return st
}

// failed handles a Failed rollout without a forced sync: roll back when the policy says so and a
// different healthy render can be applied, else stay Failed with a message saying why.
func failed(in Input, st *v1alpha1.RolloutStatus) (*v1alpha1.RolloutStatus, Action) {
	cause := strings.TrimSuffix(strings.TrimSuffix(st.Message, suffixNoLastHealthy), suffixHalted)
	switch in.Policy.FailurePolicy.Action {
	case v1alpha1.FailureActionRollback:
		if in.LastHealthy != "" && in.LastHealthy != in.RenderRef {
			return transition(in, st, PhaseRolledBack, fmt.Sprintf(
				"rolled back to healthy render %s after render %s failed: %s",
				shortRef(in.LastHealthy), shortRef(in.RenderRef), cause)), ActionApplyLastHealthy
		}
		st.Message = cause + suffixNoLastHealthy
	case v1alpha1.FailureActionHalt:
		st.Message = cause + suffixHalted
	}
	return st, ActionApplySource
}

// transition moves st to phase: TransitionedAt is now, StartedAt is kept.
func transition(in Input, st *v1alpha1.RolloutStatus, phase, msg string) *v1alpha1.RolloutStatus {
	st.Phase = phase
	st.TransitionedAt = ptr(in.Now)
	st.Message = msg
	return st
}

func progressDeadline(p *v1alpha1.RolloutPolicy) time.Duration {
	if p.ProgressDeadline == nil {
		return DefaultProgressDeadline
	}
	return p.ProgressDeadline.Duration
}

// shortRef returns the first 12 hex digits of a render reference for messages.
func shortRef(ref string) string {
	hexPart := strings.TrimPrefix(ref, "sha256:")
	if len(hexPart) > 12 {
		return hexPart[:12]
	}
	if hexPart == "" {
		return "(none)"
	}
	return hexPart
}

func ptr(t metav1.Time) *metav1.Time { return &t }
