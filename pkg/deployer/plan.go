package deployer

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/clusters"
)

// Entries returns the inventory entries objs will have once Deploy applies them: the namespace is
// placed exactly as Deploy places it, also for a kind that is not served yet but whose CRD is in
// render (the whole render, so a CRD of an earlier wave counts). The release controller writes these
// entries to the inventory before a wave is applied, so a crash mid-wave leaves every object that
// may have been applied findable. It sends no request but discovery.
func Entries(c *clusters.Client, objs, render []*unstructured.Unstructured, opts Options) ([]v1alpha1.InventoryEntry, error) {
	r := &resolver{c: c}
	crds := indexCRDs(render)
	out := make([]v1alpha1.InventoryEntry, 0, len(objs))
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		var namespaced bool
		m, err := r.mapping(gvk)
		switch {
		case err == nil:
			namespaced = m.Scope.Name() == meta.RESTScopeNameNamespace
		case errors.Is(err, errNotServed):
			info, ok := crds[gvk.GroupKind()]
			if !ok {
				return nil, &RejectedError{Object: Ref(obj), Message: "kind " + gvkString(gvk) + " is not served by the cluster"}
			}
			namespaced = info.namespaced
		default:
			return nil, fmt.Errorf("%s: %w", Ref(obj), err)
		}
		out = append(out, v1alpha1.InventoryEntry{
			Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
			Namespace: objectNamespace(obj, namespaced, opts.TargetNamespace), Name: obj.GetName(), Wave: waveOf(obj),
		})
	}
	return out, nil
}
