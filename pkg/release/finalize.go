package release

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/clusters"
	"github.com/kumodo/convoy/pkg/deployer"
	"github.com/kumodo/convoy/pkg/inventory"
	"github.com/kumodo/convoy/pkg/metrics"
)

// ensureFinalizer adds the prune-workloads finalizer with an Update when it is missing and returns
// the Release as the API server has it.
func (c *Controller) ensureFinalizer(ctx context.Context, rel *v1alpha1.Release) (*v1alpha1.Release, error) {
	if slices.Contains(rel.Finalizers, v1alpha1.PruneWorkloadsFinalizer) {
		return rel, nil
	}
	rel = rel.DeepCopy()
	rel.Finalizers = append(rel.Finalizers, v1alpha1.PruneWorkloadsFinalizer)
	updated, err := c.convoy.CoreV1alpha1().Releases(rel.Namespace).Update(ctx, rel, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, fmt.Errorf("adding finalizer: %w", err)
	}
	return updated, nil
}

// finalize cleans up a deleted Release: it prunes the inventoried objects from the target (unless
// deletionPolicy.keepWorkloads), deletes the ReleaseInventory and clears the finalizer.
func (c *Controller) finalize(ctx context.Context, rel *v1alpha1.Release) error {
	if !slices.Contains(rel.Finalizers, v1alpha1.PruneWorkloadsFinalizer) {
		return nil
	}
	logger := klog.FromContext(ctx)

	// 1. The cluster, only when there is something to prune (hooks come with the hooks build).
	var client *clusters.Client
	if !rel.Spec.DeletionPolicy.KeepWorkloads {
		var err error
		if client, err = c.clusterForFinalize(ctx, rel); err != nil {
			return err
		}
	}

	// 3. Prune the inventoried objects.
	if client != nil {
		inv, err := c.currentInventory(ctx, rel)
		if err != nil {
			return err
		}
		if err := c.pruneRefs(ctx, client, rel, inv.Entries); err != nil {
			return err
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
	logger.Info("Finalized release", "keepWorkloads", rel.Spec.DeletionPolicy.KeepWorkloads)
	return nil
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
