package release

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/deployer"
	"github.com/kumodo/convoy/pkg/health"
	"github.com/kumodo/convoy/pkg/hooks"
	"github.com/kumodo/convoy/pkg/inventory"
	"github.com/kumodo/convoy/pkg/metrics"
	"github.com/kumodo/convoy/pkg/render"
	"github.com/kumodo/convoy/pkg/waves"
)

// stageSync applies the render in sync waves, prunes what left it and writes the inventory. The
// inventory is written before each wave is applied as well as after it, so a crash at any point
// leaves every object convoy may have applied findable in the ReleaseInventory.
func (c *Controller) stageSync(ctx context.Context, st *reconcileState) (reconcileOutcome, error) {
	logger := klog.FromContext(ctx)
	rel := st.rel
	if err := c.loadInventory(ctx, st); err != nil {
		return c.syncOutcome(st, v1alpha1.ReasonApplyFailed, err.Error(), true), err
	}
	grouped, err := waves.Group(st.objects)
	if err != nil {
		return c.syncOutcome(st, v1alpha1.ReasonUnappliable, err.Error(), true), nil
	}
	if len(st.objects) == 0 && len(st.inv.Entries) > 0 && prunePolicy(rel) && rel.Annotations[v1alpha1.AllowEmptyAnnotation] != "true" {
		msg := fmt.Sprintf("the render has no objects while the inventory holds %d: refusing to prune everything "+
			"(annotate the Release %s=true to allow it)", len(st.inv.Entries), v1alpha1.AllowEmptyAnnotation)
		return c.syncOutcome(st, v1alpha1.ReasonUnappliable, msg, true), nil
	}
	// An inventory too large to store is refused before anything is sent.
	if entries, err := deployer.Entries(st.client, st.objects, st.objects, st.opts); err == nil {
		spec := v1alpha1.ReleaseInventorySpec{RenderRef: st.renderRef, Entries: inventory.Union(st.inv.Entries, entries), Hooks: st.inv.Hooks}
		if err := inventory.CheckSize(spec); err != nil {
			return c.syncOutcome(st, v1alpha1.ReasonUnappliable, err.Error(), true), nil
		}
	}
	run := c.newHookRun(st)

	// 1. Dry run, hooks included under the names they run with.
	if st.forceSyncRequestedAt == nil {
		if out, err := c.dryRunGate(ctx, st, run); out != nil {
			return *out, err
		}
	}

	// 2. Persist: the render is in the store before anything is applied.
	if out, err := c.persistRender(ctx, st); out != nil {
		return *out, err
	}

	// 3. preSync hooks.
	if run != nil {
		res, err := c.runHookPhase(ctx, run, hooks.PreSync)
		if err != nil {
			out, err := c.applyErrorOutcome(st, err)
			return out, err
		}
		switch res.state {
		case hooks.Running:
			out := st.outcome(v1alpha1.ReasonWaitingForHook, res.message, false)
			out.syncing, out.pollSoon = true, true // the /sync request stays pending until the sync ends
			return out, nil
		case hooks.Failed:
			return c.syncOutcome(st, v1alpha1.ReasonHookFailed, res.message, true), nil
		}
	}

	// 4-6. Waves, prune, inventory.
	res, err := c.applyWaves(ctx, st, grouped, st.objects, st.renderRef, true)
	if err != nil || res.reason != "" {
		out := c.syncOutcome(st, res.reason, res.message, true)
		if res.reason == "" {
			out.reason, out.message = v1alpha1.ReasonApplyFailed, err.Error()
		}
		out.waves, out.pollSoon = res.waves, res.hold
		out.failure = !res.hold
		if res.hold {
			// The /sync request stays pending until the sync ends.
			out.handledSyncAt, out.handledForceSyncAt = nil, nil
		}
		return out, err
	}
	logger.V(2).Info("Applied render", "objects", len(st.objects), "waves", len(grouped))

	// 7. postSync hooks: their failure does not change the result.
	if run != nil {
		if res, err := c.runHookPhase(ctx, run, hooks.PostSync); err != nil {
			logger.Error(err, "Running postSync hooks")
		} else if res.state == hooks.Failed {
			logger.Info("A postSync hook failed", "message", res.message)
		}
	}
	// 8-9. History and GC: they only log their errors, never stop the sync.
	c.recordHistory(ctx, st)
	c.runGC(ctx, st)

	out := c.syncOutcome(st, v1alpha1.ReasonApplied, appliedMessage(st.renderRef), false)
	out.applied = true
	out.waves = res.waves
	out.rollout = st.rollout
	return out, nil
}

// waveResult is what applyWaves did: the wave statuses and, when it stopped, the reason and message
// of the stop (hold is true for a wave waiting for health).
type waveResult struct {
	waves   []v1alpha1.WaveStatus
	reason  string
	message string
	hold    bool
}

// applyWaves applies grouped (the objects objs of render renderRef) wave by wave, prunes the
// previous inventory's objects that left the render and writes the exact applied set. With gates,
// a wave that needs health waits for the previous one (waveHealthGate). An error is transient; a
// result with a reason stopped without one.
func (c *Controller) applyWaves(ctx context.Context, st *reconcileState, grouped []waves.Wave, objs []*unstructured.Unstructured,
	renderRef string, gates bool) (waveResult, error) {
	logger := klog.FromContext(ctx)
	rel := st.rel
	prev := *st.inv.DeepCopy()
	res := waveResult{waves: waveStatuses(grouped)}
	stop := func(i int, phase string, err error) (waveResult, error) {
		out, err := c.applyErrorOutcome(st, err)
		res.reason, res.message = out.reason, out.message
		if i >= 0 {
			res.waves[i].Phase, res.waves[i].Message = phase, out.message
		}
		return res, err
	}
	var applied []v1alpha1.InventoryEntry
	counts := map[string]int{}
	for i, w := range grouped {
		if gates && i > 0 {
			if g := c.waveHealthGate(ctx, st, grouped, i); g != nil {
				res.waves[i].Phase, res.waves[i].Message, res.waves[i].Since = g.phase, g.message, g.since
				res.reason, res.message, res.hold = g.reason, g.message, g.hold
				return res, g.err
			}
		}
		entries, err := deployer.Entries(st.client, w.Objects, objs, st.opts)
		if err != nil {
			return stop(i, "Failed", err)
		}
		planned := append(slices.Clone(applied), entries...)
		if err := c.putInventory(ctx, st, prev.RenderRef, inventory.Union(prev.Entries, planned)); err != nil {
			return stop(-1, "", err)
		}
		var judged *deployer.Judged
		if renderRef == st.renderRef {
			judged = st.judged // the dry run judged these objects; a rollback's were not
		}
		changes, deployErr := deployer.Deploy(ctx, st.client, w.Objects, st.opts, judged)
		for _, ch := range changes {
			applied = append(applied, ch.Entry)
			counts[ch.Action]++
			metrics.ObjectsApplied.WithLabelValues(ch.Action).Inc()
		}
		if err := c.putInventory(ctx, st, prev.RenderRef, inventory.Union(prev.Entries, applied)); err != nil {
			return stop(-1, "", err)
		}
		if deployErr != nil {
			return stop(i, "Failed", deployErr)
		}
		res.waves[i].Phase = "Applied"
	}

	// Prune.
	final := applied
	pruned := 0
	if prunePolicy(rel) {
		stale := inventory.Stale(prev.Entries, applied)
		deleted, pruneErr := c.prune(ctx, st, stale)
		pruned = len(deleted)
		if pruneErr != nil {
			// Objects that could not be deleted stay in the inventory so the next attempt retries them.
			final = inventory.Union(applied, inventory.Stale(stale, deleted))
			if err := c.putInventory(ctx, st, prev.RenderRef, final); err != nil {
				logger.Error(err, "Writing the inventory after a failed prune")
			}
			res.reason, res.message = v1alpha1.ReasonPruneFailed, pruneErr.Error()
			if unreachable(pruneErr) {
				res.reason = v1alpha1.ReasonClusterNotReady
			}
			return res, pruneErr
		}
	}

	// Inventory: the exact applied set.
	if err := c.putInventory(ctx, st, renderRef, inventory.Union(nil, final)); err != nil {
		return stop(-1, "", err)
	}
	logger.V(3).Info("Applied waves", "renderRef", renderRef, "created", counts["created"], "configured", counts["configured"],
		"unchanged", counts["unchanged"], "pruned", pruned)
	return res, nil
}

// syncOutcome is an outcome of an attempt that got past the gates: a pending /sync is handled.
func (c *Controller) syncOutcome(st *reconcileState, reason, message string, failure bool) reconcileOutcome {
	out := st.outcome(reason, message, failure)
	out.syncing = true
	out.handledSyncAt, out.handledForceSyncAt = st.syncRequestedAt, st.forceSyncRequestedAt
	return out
}

// dryRunGate sends every object as a server-side apply dry run. A rejection stops the sync with
// Unappliable (or Conflict) and no error; an unreachable cluster or another transient failure stops
// it with an error.
func (c *Controller) dryRunGate(ctx context.Context, st *reconcileState, run *hookRun) (*reconcileOutcome, error) {
	objs := st.objects
	if run != nil {
		for _, phase := range hooks.Phases {
			hs, err := hooks.ForPhase(run.objs, phase, run.runID)
			if err != nil {
				out := c.syncOutcome(st, v1alpha1.ReasonUnappliable, err.Error(), true)
				return &out, nil
			}
			for _, h := range hs {
				objs = append(objs, h.Object)
			}
		}
	}
	judged, err := deployer.DryRun(ctx, st.client, objs, st.opts)
	if err == nil {
		st.judged = judged
		return nil, nil
	}
	out, err := c.applyErrorOutcome(st, err)
	return &out, err
}

// applyErrorOutcome classifies an error of a dry run or apply.
func (c *Controller) applyErrorOutcome(st *reconcileState, err error) (reconcileOutcome, error) {
	var rejected *deployer.RejectedError
	var conflict *deployer.ConflictError
	switch {
	case errors.As(err, &conflict):
		return c.syncOutcome(st, v1alpha1.ReasonConflict, err.Error(), true), nil
	case errors.As(err, &rejected), errors.Is(err, inventory.ErrTooLarge):
		return c.syncOutcome(st, v1alpha1.ReasonUnappliable, err.Error(), true), nil
	case unreachable(err):
		return c.syncOutcome(st, v1alpha1.ReasonClusterNotReady, err.Error(), true), err
	default:
		return c.syncOutcome(st, v1alpha1.ReasonApplyFailed, err.Error(), true), err
	}
}

// prune deletes the stale objects of the previous inventory that convoy can prove it applied for
// this Release, highest wave first.
func (c *Controller) prune(ctx context.Context, st *reconcileState, stale []v1alpha1.InventoryEntry) ([]v1alpha1.InventoryEntry, error) {
	if len(stale) == 0 {
		return nil, nil
	}
	deleted, err := deployer.Delete(ctx, st.client, stale, st.rel.Namespace+"/"+st.rel.Name)
	metrics.ObjectsPruned.Add(float64(len(deleted)))
	if len(deleted) > 0 {
		klog.FromContext(ctx).V(2).Info("Pruned objects", "count", len(deleted))
	}
	if err != nil {
		return deleted, fmt.Errorf("pruning: %w", err)
	}
	return deleted, nil
}

// loadInventory reads the inventory into st.inv, once per reconcile.
func (c *Controller) loadInventory(ctx context.Context, st *reconcileState) error {
	if st.invLoaded {
		return nil
	}
	inv, err := c.currentInventory(ctx, st.rel)
	if err != nil {
		return err
	}
	st.inv, st.invLoaded = inv, true
	return nil
}

// currentInventory reads the Release's inventory from the API server, not the cache: a stale cache
// could miss entries written by the previous reconcile and so orphan their objects.
func (c *Controller) currentInventory(ctx context.Context, rel *v1alpha1.Release) (v1alpha1.ReleaseInventorySpec, error) {
	inv, err := c.convoy.CoreV1alpha1().ReleaseInventories(rel.Namespace).Get(ctx, rel.Name, getOptions)
	if apierrors.IsNotFound(err) {
		return v1alpha1.ReleaseInventorySpec{}, nil
	}
	if err != nil {
		return v1alpha1.ReleaseInventorySpec{}, fmt.Errorf("reading inventory: %w", err)
	}
	return inv.Spec, nil
}

var getOptions = metav1.GetOptions{}

// putInventory writes the inventory with the given entries for renderRef, unless it already holds
// exactly that, and keeps st.inv in step.
func (c *Controller) putInventory(ctx context.Context, st *reconcileState, renderRef string, entries []v1alpha1.InventoryEntry) error {
	if st.inv.RenderRef == renderRef && entriesEqual(st.inv.Entries, entries) {
		return nil
	}
	next := v1alpha1.ReleaseInventorySpec{RenderRef: renderRef, Entries: entries, Hooks: st.inv.Hooks}
	if err := inventory.Put(ctx, c.convoy, st.rel, next); err != nil {
		return fmt.Errorf("writing inventory: %w", err)
	}
	st.inv = next
	return nil
}

func entriesEqual(a, b []v1alpha1.InventoryEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// waveStatuses returns one Pending status per wave.
func waveStatuses(grouped []waves.Wave) []v1alpha1.WaveStatus {
	out := make([]v1alpha1.WaveStatus, 0, len(grouped))
	for _, w := range grouped {
		out = append(out, v1alpha1.WaveStatus{Wave: w.Number, Objects: int32(len(w.Objects)), Phase: "Pending"})
	}
	return out
}

func prunePolicy(rel *v1alpha1.Release) bool {
	return rel.Spec.SyncPolicy.Prune == nil || *rel.Spec.SyncPolicy.Prune
}

func appliedMessage(ref string) string { return "applied render " + shortRef(ref) }

func shortRef(ref string) string {
	if s := render.ShortRef(ref); s != "" {
		return s
	}
	return "(none)"
}

// unreachable reports whether err means the target API server could not be reached.
func unreachable(err error) bool {
	var netErr net.Error
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.As(err, &netErr) || apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err)
}

// defaultWaveHealthTimeout applies when syncPolicy.waveHealthTimeout is not set.
const defaultWaveHealthTimeout = 5 * time.Minute

// waveGate is a stop decided by waveHealthGate.
type waveGate struct {
	reason, message, phase string
	since                  *metav1.Time
	hold                   bool
	err                    error
}

// waveHealthGate decides whether wave i may be applied. A wave needs health when
// syncPolicy.waveHealth is Required or one of its objects asks for it; then the previous wave must be
// Healthy. The previous wave's objects are read live from the target and assessed with the health
// loop's rules, because the ReleaseInventory's assessment may predate what this sync just applied.
// Progressing holds (WaitingForWaveHealth); Degraded, or waiting past waveHealthTimeout, fails
// (WaveUnhealthy).
func (c *Controller) waveHealthGate(ctx context.Context, st *reconcileState, grouped []waves.Wave, i int) *waveGate {
	w, prevWave := grouped[i], grouped[i-1]
	policy := st.rel.Spec.SyncPolicy
	if !w.NeedsHealth && policy.WaveHealth != v1alpha1.WaveHealthRequired {
		return nil
	}
	entries, err := deployer.Entries(st.client, prevWave.Objects, st.objects, st.opts)
	if err != nil {
		return &waveGate{reason: v1alpha1.ReasonApplyFailed, message: err.Error(), phase: "Failed", err: err}
	}
	reader := deployer.NewReader(st.client)
	healths := make([]string, 0, len(entries))
	var problems []string
	for _, e := range entries {
		obj, err := reader.Read(ctx, e)
		if err != nil {
			reason := v1alpha1.ReasonApplyFailed
			if unreachable(err) {
				reason = v1alpha1.ReasonClusterNotReady
			}
			return &waveGate{reason: reason, message: err.Error(), phase: "Waiting", err: err}
		}
		r := health.Assess(obj)
		healths = append(healths, r.Health)
		if r.Health != health.Healthy {
			problems = append(problems, fmt.Sprintf("%s: %s %s", deployer.EntryRef(e), r.Health, r.Message))
		}
	}
	verdict := health.Verdict(healths...)
	if verdict == health.Healthy {
		return nil
	}
	if len(problems) > 3 {
		problems = append(problems[:3], fmt.Sprintf("and %d more", len(problems)-3))
	}
	detail := fmt.Sprintf("wave %d waits for wave %d to be Healthy (it is %s: %s)", w.Number, prevWave.Number, verdict,
		strings.Join(problems, "; "))
	if verdict == health.Degraded {
		return &waveGate{reason: v1alpha1.ReasonWaveUnhealthy, message: detail, phase: "Failed"}
	}
	since := waitingSince(st, w.Number)
	timeout := defaultWaveHealthTimeout
	if policy.WaveHealthTimeout != nil {
		timeout = policy.WaveHealthTimeout.Duration
	}
	if st.now.Sub(since.Time) > timeout {
		return &waveGate{reason: v1alpha1.ReasonWaveUnhealthy, phase: "Failed", since: since,
			message: fmt.Sprintf("%s; gave up after waveHealthTimeout %s", detail, timeout)}
	}
	return &waveGate{reason: v1alpha1.ReasonWaitingForWaveHealth, message: detail, phase: "Waiting", since: since, hold: true}
}

// waitingSince is when wave n of this render started to wait: the time in status.waves when the last
// attempt of the same render was already waiting there, else now.
func waitingSince(st *reconcileState, n int32) *metav1.Time {
	s := st.rel.Status
	if s.LastAttempted != nil && s.LastAttempted.RenderRef == st.renderRef && s.LastAttempted.Reason == v1alpha1.ReasonWaitingForWaveHealth {
		for _, w := range s.Waves {
			if w.Wave == n && w.Phase == "Waiting" && w.Since != nil {
				return w.Since
			}
		}
	}
	now := st.now
	return &now
}
