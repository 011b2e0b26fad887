package release

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/clusters"
	"github.com/kumodo/convoy/pkg/deployer"
	"github.com/kumodo/convoy/pkg/hooks"
	"github.com/kumodo/convoy/pkg/inventory"
	"github.com/kumodo/convoy/pkg/metrics"
)

// ensureFinalizer adds the prune-workloads finalizer when it is missing and returns the Release as
// the API server has it. It sends a merge patch of the finalizers alone, guarded by the
// resourceVersion: an Update would send the whole spec back re-encoded (a "5m" interval as "5m0s"),
// which bumps the generation and costs a second reconcile.
func (c *Controller) ensureFinalizer(ctx context.Context, rel *v1alpha1.Release) (*v1alpha1.Release, error) {
	if slices.Contains(rel.Finalizers, v1alpha1.PruneWorkloadsFinalizer) {
		return rel, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers":      append(slices.Clone(rel.Finalizers), v1alpha1.PruneWorkloadsFinalizer),
		"resourceVersion": rel.ResourceVersion,
	}})
	if err != nil {
		return nil, fmt.Errorf("adding finalizer: %w", err)
	}
	updated, err := c.convoy.CoreV1alpha1().Releases(rel.Namespace).Patch(ctx, rel.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, fmt.Errorf("adding finalizer: %w", err)
	}
	return updated, nil
}

// finalize cleans up a deleted Release: it runs the preDelete hooks, prunes the inventoried objects
// from the target (unless deletionPolicy.keepWorkloads), runs the postDelete hooks, deletes the
// ReleaseInventory and the stored renders, and clears the finalizer. A hook that runs, and a failed
// preDelete hook, requeue the key after 10 seconds.
func (c *Controller) finalize(ctx context.Context, rel *v1alpha1.Release) error {
	if !slices.Contains(rel.Finalizers, v1alpha1.PruneWorkloadsFinalizer) {
		return nil
	}
	logger := klog.FromContext(ctx)
	inv, err := c.currentInventory(ctx, rel)
	if err != nil {
		return err
	}
	keep := rel.Spec.DeletionPolicy.KeepWorkloads
	deleteHooks := c.deleteHooks(ctx, rel, inv)

	// 1. The cluster, only when there is something to prune or a delete hook to run.
	var client *clusters.Client
	if !keep || len(deleteHooks) > 0 {
		if client, err = c.clusterForFinalize(ctx, rel); err != nil {
			return err
		}
	}
	var run *hookRun
	if client != nil && len(deleteHooks) > 0 {
		run = &hookRun{rel: rel, client: client, objs: deleteHooks, renderRef: inv.RenderRef,
			runID: hooks.RunID(inv.RenderRef, &rel.DeletionTimestamp.Time), inv: &inv,
			opts: c.finalizeOptions(rel)}
	}

	// 2. preDelete hooks.
	if run != nil {
		res, err := c.runHookPhase(ctx, run, hooks.PreDelete)
		if err != nil {
			return fmt.Errorf("preDelete hooks: %w", err)
		}
		switch res.state {
		case hooks.Running:
			logger.V(2).Info("Deletion waits for preDelete hooks", "message", res.message)
			c.queue.AddAfter(cache.MetaObjectToName(rel), hookRequeue)
			return nil
		case hooks.Failed:
			c.recorder.Event(rel, corev1.EventTypeWarning, v1alpha1.ReasonHookFailed, "deletion blocked: "+res.message)
			c.queue.AddAfter(cache.MetaObjectToName(rel), hookRequeue)
			return nil
		}
	}

	// 3. Prune the inventoried objects and the hooks of the sync phases.
	if client != nil && !keep {
		refs := slices.Clone(inv.Entries)
		for _, h := range inv.Hooks {
			if h.Phase != hooks.PreDelete && h.Phase != hooks.PostDelete {
				refs = append(refs, hookRef(h))
			}
		}
		if err := c.pruneRefs(ctx, client, rel, refs); err != nil {
			return err
		}
	}

	// 4. postDelete hooks: a failure is only logged.
	if run != nil {
		res, err := c.runHookPhase(ctx, run, hooks.PostDelete)
		if err != nil {
			return fmt.Errorf("postDelete hooks: %w", err)
		}
		switch res.state {
		case hooks.Running:
			logger.V(2).Info("Deletion waits for postDelete hooks", "message", res.message)
			c.queue.AddAfter(cache.MetaObjectToName(rel), hookRequeue)
			return nil
		case hooks.Failed:
			logger.Info("A postDelete hook failed", "message", res.message)
			c.recorder.Event(rel, corev1.EventTypeWarning, v1alpha1.ReasonHookFailed, res.message)
		}
	}

	// 5. The inventory.
	if err := inventory.Delete(ctx, c.convoy, rel.Namespace, rel.Name); err != nil {
		return fmt.Errorf("deleting inventory: %w", err)
	}

	// 6. The render store prefix.
	if err := c.deleteStoredRenders(ctx, rel); err != nil {
		return err
	}

	// 7. The finalizer.
	rel = rel.DeepCopy()
	rel.Finalizers = slices.DeleteFunc(rel.Finalizers, func(f string) bool { return f == v1alpha1.PruneWorkloadsFinalizer })
	if _, err := c.convoy.CoreV1alpha1().Releases(rel.Namespace).Update(ctx, rel, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("removing finalizer: %w", err)
	}
	c.gcMarks.Delete(rel.UID)
	logger.Info("Finalized release", "keepWorkloads", keep)
	return nil
}

// hookRequeue is how soon finalize looks again at a running or failed delete hook.
const hookRequeue = 10 * time.Second

// deleteHooks returns the preDelete and postDelete hook objects of the render the inventory names:
// from the render store when it holds it, else from the source rendered now. A render that cannot
// be had skips the delete hooks, with an Event saying so.
func (c *Controller) deleteHooks(ctx context.Context, rel *v1alpha1.Release, inv v1alpha1.ReleaseInventorySpec) []*unstructured.Unstructured {
	if inv.RenderRef == "" {
		return nil
	}
	var objs []*unstructured.Unstructured
	if c.config.Store != nil {
		if stored, err := c.config.Store.GetRender(ctx, releaseName(rel), inv.RenderRef); err == nil {
			objs = stored.Objects
		}
	}
	if objs == nil {
		res, err := c.renderer.Render(ctx, rel)
		if err != nil {
			klog.FromContext(ctx).Info("Skipping delete hooks: the render is not available", "err", err)
			c.recorder.Eventf(rel, corev1.EventTypeWarning, "DeleteHooksSkipped", "delete hooks not run: %v", err)
			return nil
		}
		objs = res.Objects
	}
	var out []*unstructured.Unstructured
	for _, obj := range objs {
		if p := obj.GetAnnotations()[v1alpha1.HookAnnotation]; p == hooks.PreDelete || p == hooks.PostDelete {
			out = append(out, obj)
		}
	}
	return out
}

// finalizeOptions are the deploy options of delete hooks: the same policy as every applied object.
func (c *Controller) finalizeOptions(rel *v1alpha1.Release) deployer.Options {
	opts := deployer.Options{Owner: rel.Namespace + "/" + rel.Name, TargetNamespace: rel.Spec.TargetNamespace}
	if cl, err := c.clusters.Clusters(rel.Namespace).Get(rel.Spec.ClusterRef.Name); err == nil {
		opts.AllowClusterScoped, opts.AllowedNamespaces = cl.Spec.AllowClusterScoped, cl.Spec.AllowedNamespaces
	}
	return opts
}

// clusterForFinalize returns the client of the Release's Cluster. A missing or unreachable Cluster
// returns no client, so pruning is skipped, unless deletionPolicy.blockOnClusterUnreachable asks the
// deletion to wait, which returns an error.
func (c *Controller) clusterForFinalize(ctx context.Context, rel *v1alpha1.Release) (*clusters.Client, error) {
	block := rel.Spec.DeletionPolicy.BlockOnClusterUnreachable
	skip := func(why string) (*clusters.Client, error) {
		if block {
			return nil, fmt.Errorf("deletion waits for cluster %s: %s (deletionPolicy.blockOnClusterUnreachable)", rel.Spec.ClusterRef.Name, why)
		}
		klog.FromContext(ctx).Info("Skipping prune of a deleted release", "why", why)
		c.recorder.Eventf(rel, "Warning", "PruneSkipped", "objects left on the target: %s", why)
		return nil, nil
	}
	_, client, err := c.renderer.Cluster(rel)
	if err != nil {
		return skip(err.Error())
	}
	return client, nil
}

// pruneRefs deletes the inventoried objects of a deleted Release that convoy applied for it.
func (c *Controller) pruneRefs(ctx context.Context, client *clusters.Client, rel *v1alpha1.Release, refs []v1alpha1.InventoryEntry) error {
	deleted, err := deployer.Delete(ctx, client, refs, rel.Namespace+"/"+rel.Name)
	metrics.ObjectsPruned.Add(float64(len(deleted)))
	if err != nil {
		return fmt.Errorf("pruning objects of deleted release: %w", err)
	}
	return nil
}
