package deployer

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/clusters"
)

// Reader reads inventoried objects from one target cluster, resetting the cluster's shared mapper
// at most once for all its reads.
type Reader struct {
	r resolver
}

// NewReader returns a Reader of the cluster c.
func NewReader(c *clusters.Client) *Reader { return &Reader{r: resolver{c: c}} }

// Read returns the live object of an entry: nil without error when it, or its kind, does not exist.
func (rd *Reader) Read(ctx context.Context, e v1alpha1.InventoryEntry) (*unstructured.Unstructured, error) {
	gvk := schema.GroupVersionKind{Group: e.Group, Version: e.Version, Kind: e.Kind}
	m, err := rd.r.mappingAnyVersion(gvk)
	if errors.Is(err, errNotServed) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", EntryRef(e), err)
	}
	res := rd.r.c.Dynamic.Resource(m.Resource)
	var obj *unstructured.Unstructured
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		obj, err = res.Namespace(e.Namespace).Get(ctx, e.Name, metav1.GetOptions{})
	} else {
		obj, err = res.Get(ctx, e.Name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", EntryRef(e), err)
	}
	return obj, nil
}
