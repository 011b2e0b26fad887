package render

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// Scope tells whether a kind is namespaced on the target cluster; known is false when the cluster
// does not serve the kind (e.g. a custom resource whose CRD is in the same render).
type Scope func(gvk schema.GroupVersionKind) (namespaced bool, known bool)

// Capabilities describe the target cluster, from its discovery.
type Capabilities struct {
	// KubeVersion is the cluster's Kubernetes version, e.g. "v1.37.2".
	KubeVersion string
	// APIVersions lists the served group/versions (and group/version/kind entries).
	APIVersions []string
	// Scope answers whether a kind is namespaced; nil treats every kind as unknown.
	Scope Scope
}

// Content is a fetched source ready to render.
type Content struct {
	// Type selects the renderer.
	Type v1alpha1.ContentType
	// Files maps a file name (or ConfigMap key) to its content, for manifests.
	Files map[string]string
	// Dir is the unpacked chart directory, for helm, or the kustomization directory, for kustomize.
	Dir string
	// Root is the fetched tree Dir lies in; kustomize loads nothing outside it. Empty means Dir.
	Root string
	// Revision is the chart version or git commit the content came from.
	Revision string
}

// Options of one render.
type Options struct {
	// ReleaseName is the Release's name (the Helm release name).
	ReleaseName string
	// Namespace is the Release's spec.targetNamespace, given to namespaced objects that name none.
	Namespace string
}

// Render turns content into normalised objects in deterministic order (see the package
// documentation). values are used by helm content only. A failure caused by the content is an
// *Error; an unrenderable content type wraps ErrUnsupported.
func Render(ctx context.Context, c Content, values map[string]any, caps Capabilities, opts Options) ([]*unstructured.Unstructured, error) {
	switch c.Type {
	case v1alpha1.ContentTypeManifests:
		return renderManifests(ctx, c.Files, caps, opts)
	case v1alpha1.ContentTypeHelm:
		if c.Dir == "" {
			return nil, fmt.Errorf("render helm content without a chart directory: %w", ErrUnsupported)
		}
		return renderHelm(ctx, c.Dir, values, caps, opts)
	case v1alpha1.ContentTypeKustomize:
		if c.Dir == "" {
			return nil, fmt.Errorf("render kustomize content without a directory: %w", ErrUnsupported)
		}
		return renderKustomize(ctx, c.Root, c.Dir, caps, opts)
	default:
		// The controller resolves the default content type before rendering, so an empty or
		// unknown type here is a caller's mistake, reported the same way as an unsupported one.
		return nil, fmt.Errorf("render content type %q: %w", c.Type, ErrUnsupported)
	}
}
