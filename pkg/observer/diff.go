package observer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/clusters"
	"github.com/kumodo/convoy/pkg/deployer"
)

// drifted is one object that differs from the render.
type drifted struct {
	ref    v1alpha1.ObjectReference
	reason string // "missing", "owned by another Release", or the differing fields
}

func (d drifted) String() string {
	return formatRef(d.ref) + " (" + d.reason + ")"
}

func formatRef(r v1alpha1.ObjectReference) string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// errUndetermined wraps failures that leave the drift of an object unknown.
var errUndetermined = errors.New("drift undetermined")

// differ compares desired objects with the live objects of one target cluster.
type differ struct {
	client *clusters.Client
	owner  string // namespace/name of the Release
	target string // the Release's targetNamespace
	reset  bool   // the REST mapper was reset during this check
}

// diffObjects reads each live object and sends the desired one as a server-side apply dry run
// under the field manager convoy; it returns the drifted objects in render order. Two requests per
// object: a GET and a dry-run PATCH (none for an object that is missing).
func (d *differ) diffObjects(ctx context.Context, objs []*unstructured.Unstructured) ([]drifted, error) {
	var out []drifted
	for _, obj := range objs {
		dr, err := d.diffObject(ctx, obj)
		if err != nil {
			return out, err
		}
		if dr != nil {
			out = append(out, *dr)
		}
	}
	return out, nil
}

// diffObject checks one object; nil means in sync.
func (d *differ) diffObject(ctx context.Context, obj *unstructured.Unstructured) (*drifted, error) {
	gvk := obj.GroupVersionKind()
	ref := v1alpha1.ObjectReference{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	mapping, err := d.mapping(obj)
	if meta.IsNoMatchError(err) {
		return &drifted{ref: ref, reason: "kind not served"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errUndetermined, formatRef(ref), err)
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	var resource dynamic.ResourceInterface
	switch {
	case !namespaced:
		ref.Namespace = ""
		resource = d.client.Dynamic.Resource(mapping.Resource)
	default:
		if ref.Namespace == "" {
			ref.Namespace = d.target
		}
		resource = d.client.Dynamic.Resource(mapping.Resource).Namespace(ref.Namespace)
	}
	live, err := resource.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &drifted{ref: ref, reason: "missing"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: get %s: %w", errUndetermined, formatRef(ref), err)
	}
	if owner := live.GetAnnotations()[v1alpha1.OwnerAnnotation]; owner != "" && owner != d.owner {
		return &drifted{ref: ref, reason: "owned by Release " + owner}, nil
	}
	applied := deployer.Prepare(obj, d.owner, ref.Namespace)
	dry, err := resource.Apply(ctx, ref.Name, applied, metav1.ApplyOptions{
		FieldManager: deployer.FieldManager, Force: true, DryRun: []string{metav1.DryRunAll},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: dry-run apply %s: %w", errUndetermined, formatRef(ref), err)
	}
	if fields := deployer.ChangedFields(live, dry); len(fields) > 0 {
		return &drifted{ref: ref, reason: "changed " + strings.Join(fields, ", ")}, nil
	}
	return nil, nil
}

// mapping maps obj's kind, resetting the cluster's mapper once per check on a no-match.
func (d *differ) mapping(obj *unstructured.Unstructured) (*meta.RESTMapping, error) {
	gvk := obj.GroupVersionKind()
	m, err := d.client.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil && meta.IsNoMatchError(err) && !d.reset {
		d.client.Mapper.Reset()
		d.reset = true
		m, err = d.client.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	return m, err
}
