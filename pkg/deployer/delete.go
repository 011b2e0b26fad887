package deployer

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/clusters"
)

// Delete deletes the referenced objects (background propagation), highest wave first (the objects
// of one wave in parallel, Namespaces and CRDs after the rest), skipping
// objects that are gone or already being deleted, objects annotated convoy.kumodo.io/prune: disabled, and objects whose
// owner annotation is missing or names another Release: convoy never deletes what it cannot prove
// it applied for owner ("namespace/name" of the Release). It goes on after a failure and returns
// the entries actually deleted and the failures joined.
func Delete(ctx context.Context, c *clusters.Client, refs []v1alpha1.InventoryEntry, owner string) ([]v1alpha1.InventoryEntry, error) {
	if owner == "" {
		return nil, errors.New("delete: owner is empty")
	}
	logger := klog.FromContext(ctx)
	r := &resolver{c: c}
	var deleted []v1alpha1.InventoryEntry
	var errs []error
	ordered := deleteOrder(refs)
	// The objects of one wave and rank go out in parallel; waves and ranks one after the other.
	for start := 0; start < len(ordered); {
		end := start + 1
		for end < len(ordered) && ordered[end].Wave == ordered[start].Wave && deleteRank(ordered[end]) == deleteRank(ordered[start]) {
			end++
		}
		group := ordered[start:end]
		start = end
		done := make([]bool, len(group))
		reasons := make([]string, len(group))
		groupErrs := make([]error, len(group))
		_ = forEach(ctx, len(group), func(ctx context.Context, i int) error {
			done[i], reasons[i], groupErrs[i] = deleteOne(ctx, r, group[i], owner)
			return nil
		})
		for i, e := range group {
			switch {
			case groupErrs[i] != nil:
				errs = append(errs, groupErrs[i])
			case done[i]:
				logger.V(4).Info("Deleted object", "object", EntryRef(e))
				deleted = append(deleted, e)
			default:
				logger.V(4).Info("Kept object", "object", EntryRef(e), "reason", reasons[i])
			}
		}
	}
	return deleted, errors.Join(errs...)
}

// deleteOrder returns refs in deletion order: highest wave first; within a wave other kinds, then
// CustomResourceDefinitions, then Namespaces (the reverse of the apply order); else as given.
func deleteOrder(refs []v1alpha1.InventoryEntry) []v1alpha1.InventoryEntry {
	out := slices.Clone(refs)
	slices.SortStableFunc(out, func(a, b v1alpha1.InventoryEntry) int {
		if a.Wave != b.Wave {
			return int(b.Wave) - int(a.Wave)
		}
		return deleteRank(a) - deleteRank(b)
	})
	return out
}

// deleteRank orders kinds within a wave for deletion.
func deleteRank(e v1alpha1.InventoryEntry) int {
	switch {
	case e.Group == "" && e.Kind == "Namespace":
		return 2
	case e.Group == crdGroupKind.Group && e.Kind == crdGroupKind.Kind:
		return 1
	default:
		return 0
	}
}

// deleteOne deletes one object if convoy may; it returns whether it did, and why not.
func deleteOne(ctx context.Context, r *resolver, e v1alpha1.InventoryEntry, owner string) (bool, string, error) {
	ref := EntryRef(e)
	m, err := r.mappingAnyVersion(schema.GroupVersionKind{Group: e.Group, Version: e.Version, Kind: e.Kind})
	if errors.Is(err, errNotServed) {
		return false, "kind not served: the object is gone", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("delete %s: %w", ref, err)
	}
	var res dynamic.ResourceInterface = r.c.Dynamic.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if e.Namespace == "" {
			// No object can be proven to be this entry: keep whatever exists.
			return false, "namespaced entry without a namespace", nil
		}
		res = r.c.Dynamic.Resource(m.Resource).Namespace(e.Namespace)
	}
	live, err := res.Get(ctx, e.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, "gone", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("delete %s: get: %w", ref, err)
	}
	if live.GetDeletionTimestamp() != nil {
		return false, "already being deleted", nil
	}
	annotations := live.GetAnnotations()
	if annotations[v1alpha1.PruneAnnotation] == "disabled" {
		return false, v1alpha1.PruneAnnotation + " is disabled", nil
	}
	if current := annotations[v1alpha1.OwnerAnnotation]; current != owner {
		if current == "" {
			return false, "no owner annotation", nil
		}
		return false, "owned by Release " + current, nil
	}
	uid := live.GetUID()
	policy := metav1.DeletePropagationBackground
	err = res.Delete(ctx, e.Name, metav1.DeleteOptions{
		PropagationPolicy: &policy,
		Preconditions:     &metav1.Preconditions{UID: &uid}, // never a replacement created meanwhile
	})
	switch {
	case apierrors.IsNotFound(err):
		return false, "gone", nil
	case apierrors.IsConflict(err):
		return false, "replaced by another object", nil
	case err != nil:
		return false, "", fmt.Errorf("delete %s: %w", ref, err)
	}
	return true, "", nil
}
