package release

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/clusters"
	"github.com/kumodo/convoy/pkg/deployer"
	"github.com/kumodo/convoy/pkg/health"
	"github.com/kumodo/convoy/pkg/hooks"
	"github.com/kumodo/convoy/pkg/inventory"
)

// hookRun is one run of a render's hooks on a target: the sync (or forced sync) of a render, or the
// deletion of the Release.
type hookRun struct {
	rel    *v1alpha1.Release
	client *clusters.Client
	opts   deployer.Options
	// objs are the hook objects of the render.
	objs      []*unstructured.Unstructured
	renderRef string
	runID     string
	// forced is true for the run of a forced sync: it runs the hooks again even when this render's
	// hooks already ran.
	forced bool
	// inv is what the ReleaseInventory spec holds; runHookPhase updates it as it writes.
	inv *v1alpha1.ReleaseInventorySpec
}

// phaseResult is the state of one hook phase: "" when the render has no hooks of the phase, else
// hooks.Running, hooks.Succeeded or hooks.Failed (a failed hook whose on-failure policy is Fail).
type phaseResult struct {
	state   string
	message string
}

// runHookPhase runs the hooks of one phase. Hooks run by weight, lower weights first; a weight group
// starts when every hook before it has finished. Each hook is recorded in ReleaseInventory.spec.hooks
// before it is created (so a crash never leaves a hook object convoy cannot find), created with
// server-side apply under the same policy checks as applied objects, and then followed through its
// object: Job conditions, Pod phase, or created for other kinds. A finished hook's state is written
// to its entry, after which the delete policies may remove the object. A hook object that vanished
// before it finished is created again.
func (c *Controller) runHookPhase(ctx context.Context, run *hookRun, phase string) (phaseResult, error) {
	hs, err := hooks.ForPhase(run.objs, phase, run.runID)
	if err != nil || len(hs) == 0 {
		return phaseResult{}, err
	}
	if !run.forced {
		// A hook of this render that already ran (maybe under a forced sync's name) is followed, not
		// run again.
		for _, h := range hs {
			if e := latestRun(run.inv.Hooks, phase, h.Name, run.renderRef); e != nil {
				h.Object.SetName(e.Name)
			}
		}
	}
	logger := klog.FromContext(ctx).WithValues("hookPhase", phase)
	reader := deployer.NewReader(run.client)
	var continued []string
	for start := 0; start < len(hs); {
		end := start
		for end < len(hs) && hs[end].Weight == hs[start].Weight {
			end++
		}
		group := hs[start:end]
		start = end

		if err := c.createHooks(ctx, run, phase, group); err != nil {
			var rejected *deployer.RejectedError
			var conflict *deployer.ConflictError
			if errors.As(err, &rejected) || errors.As(err, &conflict) {
				return phaseResult{state: hooks.Failed, message: err.Error()}, nil
			}
			return phaseResult{}, err
		}
		states, err := c.followHooks(ctx, run, reader, group)
		if err != nil {
			return phaseResult{}, err
		}
		for i, h := range group {
			e := states[i]
			switch {
			case e.State == "":
				msg := fmt.Sprintf("hook %s %s is running", h.Object.GetKind(), h.Object.GetName())
				if e.Message != "" {
					msg += ": " + e.Message
				}
				return phaseResult{state: hooks.Running, message: msg}, nil
			case e.State == hooks.Failed && h.OnFailure == hooks.OnFailureFail:
				return phaseResult{state: hooks.Failed, message: fmt.Sprintf("%s hook %s %s failed: %s",
					phase, h.Object.GetKind(), h.Object.GetName(), e.Message)}, nil
			case e.State == hooks.Failed:
				logger.Info("Hook failed; going on (hook-on-failure: Continue)", "hook", h.Object.GetName(), "message", e.Message)
				continued = append(continued, h.Object.GetName())
			}
		}
	}
	msg := fmt.Sprintf("%d %s hooks succeeded", len(hs)-len(continued), phase)
	if len(continued) > 0 {
		msg += fmt.Sprintf("; failed with hook-on-failure Continue: %s", strings.Join(continued, ", "))
	}
	return phaseResult{state: hooks.Succeeded, message: msg}, nil
}

// createHooks records and creates the hooks of one weight group that have no entry yet. Before a hook
// is created, the BeforeHookCreation policy deletes the objects of earlier runs of the same hook.
func (c *Controller) createHooks(ctx context.Context, run *hookRun, phase string, group []hooks.Hook) error {
	var missing []hooks.Hook
	for _, h := range group {
		if hookEntry(run.inv.Hooks, h.Object.GetName()) < 0 {
			missing = append(missing, h)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	objs := make([]*unstructured.Unstructured, len(missing))
	for i, h := range missing {
		objs[i] = h.Object
	}
	entries, err := deployer.Entries(run.client, objs, objs, run.opts)
	if err != nil {
		return err
	}
	var superseded []v1alpha1.HookEntry
	now := metav1.Now()
	next := slices.Clone(run.inv.Hooks)
	for i, h := range missing {
		if h.HasPolicy(hooks.BeforeHookCreation) {
			next = slices.DeleteFunc(next, func(e v1alpha1.HookEntry) bool {
				if e.Phase == phase && e.Hook == h.Name && e.Name != h.Object.GetName() {
					superseded = append(superseded, e)
					return true
				}
				return false
			})
		}
		e := entries[i]
		next = append(next, v1alpha1.HookEntry{Phase: phase, RenderRef: run.renderRef, Group: e.Group, Version: e.Version,
			Kind: e.Kind, Namespace: e.Namespace, Name: e.Name, CreatedAt: &now, Hook: h.Name})
	}
	if len(superseded) > 0 {
		if _, err := deployer.Delete(ctx, run.client, hookRefs(superseded), run.opts.Owner); err != nil {
			return fmt.Errorf("deleting earlier runs of %s hooks: %w", phase, err)
		}
	}
	// Write-ahead: the entries exist before the objects do.
	if err := c.putHooks(ctx, run, next); err != nil {
		return err
	}
	if _, err := deployer.Deploy(ctx, run.client, objs, run.opts, nil); err != nil {
		return fmt.Errorf("creating %s hooks: %w", phase, err)
	}
	klog.FromContext(ctx).V(2).Info("Created hooks", "phase", phase, "count", len(objs))
	return nil
}

// followHooks returns the entries of a weight group with their states: a recorded terminal state, or
// the state read from the hook object. Newly finished hooks are written to the inventory, and then
// their delete policies applied.
func (c *Controller) followHooks(ctx context.Context, run *hookRun, reader *deployer.Reader, group []hooks.Hook) ([]v1alpha1.HookEntry, error) {
	out := make([]v1alpha1.HookEntry, len(group))
	next := slices.Clone(run.inv.Hooks)
	var finished []int
	var recreate []*unstructured.Unstructured
	for i, h := range group {
		idx := hookEntry(next, h.Object.GetName())
		e := next[idx]
		if e.State == "" {
			obj, err := reader.Read(ctx, hookRef(e))
			if err != nil {
				return nil, err
			}
			if obj == nil {
				recreate = append(recreate, h.Object)
				e.Message = "the hook object does not exist; creating it again"
			} else if state, msg := health.HookState(obj); state != health.HookRunning {
				e.State, e.Message = state, truncateMessage(msg)
				next[idx] = e
				finished = append(finished, i)
			} else {
				e.Message = msg
			}
		}
		out[i] = e
	}
	if len(recreate) > 0 {
		if _, err := deployer.Deploy(ctx, run.client, recreate, run.opts, nil); err != nil {
			return nil, fmt.Errorf("creating hooks again: %w", err)
		}
	}
	if len(finished) == 0 {
		return out, nil
	}
	if err := c.putHooks(ctx, run, next); err != nil {
		return nil, err
	}
	var remove []v1alpha1.HookEntry
	for _, i := range finished {
		h, e := group[i], out[i]
		if (e.State == hooks.Succeeded && h.HasPolicy(hooks.HookSucceeded)) || (e.State == hooks.Failed && h.HasPolicy(hooks.HookFailed)) {
			remove = append(remove, e)
		}
	}
	if len(remove) > 0 {
		if _, err := deployer.Delete(ctx, run.client, hookRefs(remove), run.opts.Owner); err != nil {
			klog.FromContext(ctx).Error(err, "Deleting finished hooks by their delete policy")
		}
	}
	return out, nil
}

// putHooks writes the inventory with the given hook entries.
func (c *Controller) putHooks(ctx context.Context, run *hookRun, next []v1alpha1.HookEntry) error {
	spec := *run.inv.DeepCopy()
	spec.Hooks = next
	if err := inventory.Put(ctx, c.convoy, run.rel, spec); err != nil {
		return fmt.Errorf("writing hook entries to the inventory: %w", err)
	}
	*run.inv = spec
	return nil
}

// latestRun returns the most recently created entry of a hook of a render, nil when it never ran.
func latestRun(entries []v1alpha1.HookEntry, phase, hook, renderRef string) *v1alpha1.HookEntry {
	var latest *v1alpha1.HookEntry
	for i := range entries {
		e := &entries[i]
		if e.Phase != phase || e.Hook != hook || e.RenderRef != renderRef {
			continue
		}
		if latest == nil || (e.CreatedAt != nil && (latest.CreatedAt == nil || !e.CreatedAt.Before(latest.CreatedAt))) {
			latest = e
		}
	}
	return latest
}

// hookEntry returns the index of the entry of the hook object name, or -1.
func hookEntry(entries []v1alpha1.HookEntry, name string) int {
	return slices.IndexFunc(entries, func(e v1alpha1.HookEntry) bool { return e.Name == name })
}

// hookRef is the inventory entry form of a hook entry, for reading and deleting its object.
func hookRef(e v1alpha1.HookEntry) v1alpha1.InventoryEntry {
	return v1alpha1.InventoryEntry{Group: e.Group, Version: e.Version, Kind: e.Kind, Namespace: e.Namespace, Name: e.Name}
}

func hookRefs(es []v1alpha1.HookEntry) []v1alpha1.InventoryEntry {
	out := make([]v1alpha1.InventoryEntry, len(es))
	for i, e := range es {
		out[i] = hookRef(e)
	}
	return out
}

// isSyncingFailure reports whether the attempt failed at the Syncing stage: a dry-run rejection, a
// failed wave (rejected, conflicting or unhealthy) or a failed prune. Transient failures (an
// unreachable cluster, a store outage) and holds are not.
func isSyncingFailure(out reconcileOutcome) bool {
	if !out.syncing || !out.failure {
		return false
	}
	switch out.reason {
	case v1alpha1.ReasonUnappliable, v1alpha1.ReasonConflict, v1alpha1.ReasonWaveUnhealthy, v1alpha1.ReasonPruneFailed:
		return true
	}
	return false
}

// runSyncFailedHooks arms the syncFailed hooks of the render after a Syncing failure: they are
// created once per render (and forced sync) and not waited for. Errors are logged.
func (c *Controller) runSyncFailedHooks(ctx context.Context, st *reconcileState) {
	run := c.newHookRun(st)
	if run == nil {
		return
	}
	if res, err := c.runHookPhase(ctx, run, hooks.SyncFailed); err != nil {
		klog.FromContext(ctx).Error(err, "Running syncFailed hooks")
	} else if res.state != "" {
		klog.FromContext(ctx).V(2).Info("syncFailed hooks", "state", res.state, "message", res.message)
	}
}

// newHookRun returns the hook run of the attempted render, nil when the render has no hooks.
func (c *Controller) newHookRun(st *reconcileState) *hookRun {
	if len(st.hooks) == 0 || st.client == nil {
		return nil
	}
	var forceAt *metav1.Time
	if st.forceSyncRequestedAt != nil {
		forceAt = st.forceSyncRequestedAt
	}
	runID := st.renderRef
	if forceAt != nil {
		runID = hooks.RunID(st.renderRef, &forceAt.Time)
	}
	return &hookRun{rel: st.rel, client: st.client, opts: st.opts, objs: st.hooks, renderRef: st.renderRef,
		runID: runID, forced: forceAt != nil, inv: &st.inv}
}

// applyLifecycleRollup reads the hook entries of the ReleaseInventory from the API server (not the
// cache: the entries were just written) and folds those of the render into status.lifecycle, one
// entry per phase, and the LifecycleSucceeded condition. A render without hooks has neither. The
// state of a hook is the one the release controller recorded, else the health loop's, else Running.
func (c *Controller) applyLifecycleRollup(ctx context.Context, rel *v1alpha1.Release, out reconcileOutcome, st *v1alpha1.ReleaseStatus, now metav1.Time) error {
	if out.renderRef == "" {
		return nil // nothing was rendered: the previous lifecycle stays
	}
	var lifecycle []v1alpha1.LifecycleStatus
	if out.hooks {
		// A render without hooks has no entries to read.
		inv, err := c.convoy.CoreV1alpha1().ReleaseInventories(rel.Namespace).Get(ctx, rel.Name, getOptions)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading inventory for the lifecycle: %w", err)
		}
		if err == nil {
			lifecycle = lifecycleOf(inv, out.renderRef)
		}
	}
	st.Lifecycle = lifecycle
	if len(lifecycle) == 0 {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionLifecycleSucceeded)
		return nil
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionLifecycleSucceeded, Status: metav1.ConditionTrue,
		Reason: hooks.Succeeded, ObservedGeneration: rel.Generation, LastTransitionTime: now}
	var msgs []string
	for _, l := range lifecycle {
		switch l.State {
		case hooks.Failed:
			cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonHookFailed
		case hooks.Running:
			if cond.Status == metav1.ConditionTrue {
				cond.Status, cond.Reason = metav1.ConditionUnknown, hooks.Running
			}
		}
		msgs = append(msgs, l.Phase+": "+l.State)
	}
	cond.Message = "render " + shortRef(out.renderRef) + " hooks: " + strings.Join(msgs, ", ")
	meta.SetStatusCondition(&st.Conditions, cond)
	return nil
}

// lifecycleOf folds the hooks of one render by phase, in phase order. Only the latest run of each
// hook counts (a forced sync runs them again).
func lifecycleOf(inv *v1alpha1.ReleaseInventory, renderRef string) []v1alpha1.LifecycleStatus {
	observed := map[string]v1alpha1.HookState{}
	for _, h := range inv.Status.Hooks {
		observed[h.Name] = h
	}
	latest := map[string]v1alpha1.HookEntry{}
	for _, e := range inv.Spec.Hooks {
		if e.RenderRef != renderRef {
			continue
		}
		key := e.Phase + "/" + e.Hook
		if prev, ok := latest[key]; !ok || prev.CreatedAt == nil || (e.CreatedAt != nil && !e.CreatedAt.Before(prev.CreatedAt)) {
			latest[key] = e
		}
	}
	var out []v1alpha1.LifecycleStatus
	for _, phase := range hooks.Phases {
		l := v1alpha1.LifecycleStatus{Phase: phase, RenderRef: renderRef}
		var running, failed, total int
		var failedMsgs []string
		for _, e := range latest {
			if e.Phase != phase {
				continue
			}
			total++
			state, msg := e.State, e.Message
			if state == "" {
				if o, ok := observed[e.Name]; ok && o.RenderRef == renderRef {
					state, msg = o.State, o.Message
				}
			}
			switch state {
			case hooks.Succeeded:
			case hooks.Failed:
				failed++
				failedMsgs = append(failedMsgs, e.Name+": "+msg)
			default:
				running++
			}
		}
		if total == 0 {
			continue
		}
		switch {
		case failed > 0:
			slices.Sort(failedMsgs)
			l.State, l.Message = hooks.Failed, truncateMessage(strings.Join(failedMsgs, "; "))
		case running > 0:
			l.State, l.Message = hooks.Running, fmt.Sprintf("%d of %d hooks running", running, total)
		default:
			l.State, l.Message = hooks.Succeeded, fmt.Sprintf("%d hooks succeeded", total)
		}
		out = append(out, l)
	}
	return out
}

// cleanupHooks deletes the hook objects of renders that are no longer kept (they left the history,
// or without a render store are neither the current nor a protected render) and drops their
// entries. Delete-phase hooks are left alone. Errors are logged.
func (c *Controller) cleanupHooks(ctx context.Context, st *reconcileState, keep map[string]bool) {
	var gone []v1alpha1.HookEntry
	kept := st.inv.Hooks[:0:0]
	for _, e := range st.inv.Hooks {
		if keep[e.RenderRef] || e.Phase == hooks.PreDelete || e.Phase == hooks.PostDelete {
			kept = append(kept, e)
		} else {
			gone = append(gone, e)
		}
	}
	if len(gone) == 0 {
		return
	}
	logger := klog.FromContext(ctx)
	deleted, err := deployer.Delete(ctx, st.client, hookRefs(gone), st.opts.Owner)
	if err != nil {
		// Entries whose objects could not be deleted stay, so a later GC retries them.
		logger.Error(err, "Deleting hooks of renders that left the history")
		for _, e := range gone {
			if !slices.Contains(deleted, hookRef(e)) {
				kept = append(kept, e)
			}
		}
	}
	run := &hookRun{rel: st.rel, inv: &st.inv}
	if err := c.putHooks(ctx, run, kept); err != nil {
		logger.Error(err, "Dropping hook entries of renders that left the history")
		return
	}
	logger.V(2).Info("Deleted hooks of renders that left the history", "count", len(gone))
}

// truncateMessage keeps messages in status and inventory short.
func truncateMessage(s string) string {
	const max = 512
	if len(s) <= max {
		return s
	}
	return s[:max-3] + "..."
}
