package release

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/deployer"
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
	opts := deployer.Options{
		Owner:              rel.Namespace + "/" + rel.Name,
		TargetNamespace:    rel.Spec.TargetNamespace,
		AllowClusterScoped: st.cluster.Spec.AllowClusterScoped,
		AllowedNamespaces:  st.cluster.Spec.AllowedNamespaces,
	}
	prev, err := c.currentInventory(ctx, rel)
	if err != nil {
		return st.outcome(v1alpha1.ReasonApplyFailed, err.Error(), true), err
	}

	grouped, err := waves.Group(st.objects)
	if err != nil {
		return c.syncOutcome(st, v1alpha1.ReasonUnappliable, err.Error(), true), nil
	}
	if len(st.objects) == 0 && len(prev.Entries) > 0 && prunePolicy(rel) && rel.Annotations[v1alpha1.AllowEmptyAnnotation] != "true" {
		msg := fmt.Sprintf("the render has no objects while the inventory holds %d: refusing to prune everything "+
			"(annotate the Release %s=true to allow it)", len(prev.Entries), v1alpha1.AllowEmptyAnnotation)
		return c.syncOutcome(st, v1alpha1.ReasonUnappliable, msg, true), nil
	}

	// 1. Dry run.
	if st.forceSyncRequestedAt == nil {
		if out, err := c.dryRunGate(ctx, st, opts); out != nil {
			return *out, err
		}
	}

	// 2. Persist: the render is in the store before anything is applied.
	if out, err := c.persistRender(ctx, st); out != nil {
		return *out, err
	}

	// 3. preSync hooks come with the hooks build: there is no hook phase to run here.

	// 4. Waves.
	status := waveStatuses(grouped)
	var applied []v1alpha1.InventoryEntry
	counts := map[string]int{}
	written := prev
	for i, w := range grouped {
		entries, err := deployer.Entries(st.client, w.Objects, st.objects, opts)
		if err != nil {
			out, err := c.applyErrorOutcome(st, err)
			out.waves = status
			return out, err
		}
		planned := append(slices.Clone(applied), entries...)
		if written, err = c.putInventory(ctx, rel, written, prev.RenderRef, inventory.Union(prev.Entries, planned)); err != nil {
			return c.syncOutcome(st, v1alpha1.ReasonApplyFailed, err.Error(), true), err
		}
		changes, deployErr := deployer.Deploy(ctx, st.client, w.Objects, opts)
		for _, ch := range changes {
			applied = append(applied, ch.Entry)
			counts[ch.Action]++
			metrics.ObjectsApplied.WithLabelValues(ch.Action).Inc()
		}
		if written, err = c.putInventory(ctx, rel, written, prev.RenderRef, inventory.Union(prev.Entries, applied)); err != nil {
			return c.syncOutcome(st, v1alpha1.ReasonApplyFailed, err.Error(), true), err
		}
		if deployErr != nil {
			status[i].Phase, status[i].Message = "Failed", deployErr.Error()
			out, err := c.applyErrorOutcome(st, deployErr)
			out.waves = status
			return out, err
		}
		status[i].Phase = "Applied"
	}

	// 5. Prune.
	final := applied
	pruned := 0
	if prunePolicy(rel) {
		stale := inventory.Stale(prev.Entries, applied)
		deleted, pruneErr := c.prune(ctx, st, stale)
		pruned = len(deleted)
		if pruneErr != nil {
			// Objects that could not be deleted stay in the inventory so the next attempt retries them.
			final = inventory.Union(applied, inventory.Stale(stale, deleted))
			if _, err := c.putInventory(ctx, rel, written, prev.RenderRef, final); err != nil {
				logger.Error(err, "Writing the inventory after a failed prune")
			}
			out := c.syncOutcome(st, v1alpha1.ReasonPruneFailed, pruneErr.Error(), true)
			out.waves = status
			if unreachable(pruneErr) {
				out.reason = v1alpha1.ReasonClusterNotReady
			}
			return out, pruneErr
		}
	}

	// 6. Inventory: the exact applied set.
	if _, err := c.putInventory(ctx, rel, written, st.renderRef, inventory.Union(nil, final)); err != nil {
		out := c.syncOutcome(st, v1alpha1.ReasonApplyFailed, err.Error(), true)
		out.waves = status
		return out, err
	}
	logger.V(2).Info("Applied render", "objects", len(applied), "waves", len(grouped),
		"created", counts["created"], "configured", counts["configured"], "unchanged", counts["unchanged"], "pruned", pruned)

	// 7. postSync hooks come with the hooks build.
	// 8-9. History and GC: they only log their errors, never stop the sync.
	c.recordHistory(ctx, st)
	c.runGC(ctx, st)

	out := c.syncOutcome(st, v1alpha1.ReasonApplied, appliedMessage(st.renderRef), false)
	out.applied = true
	out.waves = status
	return out, nil
}

// syncOutcome is an outcome of an attempt that got past the gates: a pending /sync is handled.
func (c *Controller) syncOutcome(st *reconcileState, reason, message string, failure bool) reconcileOutcome {
	out := st.outcome(reason, message, failure)
	out.handledSyncAt, out.handledForceSyncAt = st.syncRequestedAt, st.forceSyncRequestedAt
	return out
}

// dryRunGate sends every object as a server-side apply dry run. A rejection stops the sync with
// Unappliable (or Conflict) and no error; an unreachable cluster or another transient failure stops
// it with an error.
func (c *Controller) dryRunGate(ctx context.Context, st *reconcileState, opts deployer.Options) (*reconcileOutcome, error) {
	err := deployer.DryRun(ctx, st.client, st.objects, opts)
	if err == nil {
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
	case errors.As(err, &rejected):
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

// putInventory writes the inventory with the given entries for the attempted render, unless it
// already holds exactly that. It returns what the inventory now holds.
func (c *Controller) putInventory(ctx context.Context, rel *v1alpha1.Release, written v1alpha1.ReleaseInventorySpec, renderRef string, entries []v1alpha1.InventoryEntry) (v1alpha1.ReleaseInventorySpec, error) {
	next := v1alpha1.ReleaseInventorySpec{RenderRef: renderRef, Entries: entries, Hooks: written.Hooks}
	if written.RenderRef == renderRef && entriesEqual(written.Entries, entries) {
		return written, nil
	}
	if err := inventory.Put(ctx, c.convoy, rel, next); err != nil {
		return written, fmt.Errorf("writing inventory: %w", err)
	}
	return next, nil
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
