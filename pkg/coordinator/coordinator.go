// Package coordinator resolves and fetches the source of a Release, shared by every Release of the
// replica. A fetch that cannot be done by this build (a source or content type it does not support)
// is a not-ready Result, never an error and never a fake success; a fetch that fails is an error the
// caller reports as FetchFailed and retries with backoff.
package coordinator

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1listers "k8s.io/client-go/listers/core/v1"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/render"
)

// Result is the outcome of Ensure.
type Result struct {
	// Ready is false when this build cannot fetch the source; Message says why.
	Ready   bool
	Message string
	// Content is the fetched content, set when Ready.
	Content render.Content
}

// Coordinator fetches Release sources.
type Coordinator struct {
	configMaps corev1listers.ConfigMapLister
}

// New returns a Coordinator reading ConfigMap sources from the given lister.
func New(configMaps corev1listers.ConfigMapLister) *Coordinator {
	return &Coordinator{configMaps: configMaps}
}

// ContentType returns the Release's content type with its default applied: helm for a Helm source,
// else manifests.
func ContentType(rel *v1alpha1.Release) v1alpha1.ContentType {
	if rel.Spec.ContentType != "" {
		return rel.Spec.ContentType
	}
	if rel.Spec.Source.Helm != nil {
		return v1alpha1.ContentTypeHelm
	}
	return v1alpha1.ContentTypeManifests
}

// Ensure resolves and fetches the source of rel. Sources are read only from the Release's own
// namespace.
func (c *Coordinator) Ensure(ctx context.Context, rel *v1alpha1.Release) (Result, error) {
	src := rel.Spec.Source
	ct := ContentType(rel)
	switch {
	case src.ConfigMapRef != nil:
		if ct != v1alpha1.ContentTypeManifests {
			return notReady("contentType %s is not supported with source.configMapRef; use manifests", ct), nil
		}
		cm, err := c.configMaps.ConfigMaps(rel.Namespace).Get(src.ConfigMapRef.Name)
		if apierrors.IsNotFound(err) {
			return Result{}, fmt.Errorf("source ConfigMap %s/%s not found", rel.Namespace, src.ConfigMapRef.Name)
		}
		if err != nil {
			return Result{}, fmt.Errorf("reading source ConfigMap %s/%s: %w", rel.Namespace, src.ConfigMapRef.Name, err)
		}
		files := make(map[string]string, len(cm.Data))
		for k, v := range cm.Data {
			files[k] = v
		}
		return Result{Ready: true, Content: render.Content{
			Type:     ct,
			Files:    files,
			Revision: "configmap/" + cm.Name + "@" + cm.ResourceVersion,
		}}, nil
	case src.Helm != nil:
		return notReady("helm sources are not supported by this build yet"), nil
	case src.Git != nil:
		return notReady("git sources are not supported by this build yet"), nil
	default:
		return notReady("the source names none of helm, git or configMapRef"), nil
	}
}

func notReady(format string, args ...any) Result {
	return Result{Message: fmt.Sprintf(format, args...)}
}
