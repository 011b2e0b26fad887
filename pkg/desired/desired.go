// Package desired computes a Release's desired objects: it fetches the source, resolves the target
// Cluster's client, renders, runs the mutations and takes the render reference. The release
// controller's stageRender and the observer's drift loop both call it, so they agree on what a
// Release wants.
package desired

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1listers "k8s.io/client-go/listers/core/v1"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	listers "github.com/kumodo/convoy/generated/listers/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/clusters"
	"github.com/kumodo/convoy/pkg/coordinator"
	"github.com/kumodo/convoy/pkg/hooks"
	"github.com/kumodo/convoy/pkg/render"
)

// Error is a failed step; Reason is the Applied reason it maps to.
type Error struct {
	// Reason is one of the Applied reasons (FetchFailed, Unsupported, ClusterNotReady, RenderFailed).
	Reason string
	// Transient errors are retried with backoff; the others wait for a change of the inputs.
	Transient bool
	Err       error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Result is a rendered Release.
type Result struct {
	// Objects is the whole render, hooks included (hooks.Split separates them).
	Objects   []*unstructured.Unstructured
	RenderRef string
	// Revision is the chart version, git commit or ConfigMap version the objects come from.
	Revision string
	Cluster  *v1alpha1.Cluster
	Client   *clusters.Client
}

// Renderer renders Releases.
type Renderer struct {
	Coordinator *coordinator.Coordinator
	Clients     *clusters.Cache
	Clusters    listers.ClusterLister
	// ConfigMaps and Secrets hold the valuesFrom layers; they are read in the Release's namespace only.
	ConfigMaps corev1listers.ConfigMapLister
	Secrets    corev1listers.SecretLister

	caps capabilitiesCache
}

// Render runs steps 1 to 6 of stageRender for rel. The returned Result carries whatever was resolved
// before a failure (the revision, the cluster), so callers can report it. No value of a valuesFrom
// Secret appears in the error (redactSecrets).
func (r *Renderer) Render(ctx context.Context, rel *v1alpha1.Release) (*Result, error) {
	res, err := r.render(ctx, rel)
	return res, r.redactSecrets(rel, err)
}

// render is Render before the redaction of its error.
func (r *Renderer) render(ctx context.Context, rel *v1alpha1.Release) (*Result, error) {
	res := &Result{}

	// 1. Fetch.
	fetched, err := r.Coordinator.Ensure(ctx, rel)
	if err != nil {
		// Content the coordinator refuses (too large, escaping links) fails the same way until the
		// source changes; anything else (the network, a registry) may pass on a retry.
		return res, &Error{Reason: v1alpha1.ReasonFetchFailed, Transient: !errors.Is(err, coordinator.ErrRefused), Err: fmt.Errorf("fetching source: %w", err)}
	}
	if !fetched.Ready {
		return res, &Error{Reason: v1alpha1.ReasonUnsupported, Err: errors.New(fetched.Message)}
	}
	res.Revision = fetched.Content.Revision

	// 2. Cluster.
	if res.Cluster, res.Client, err = r.Cluster(rel); err != nil {
		return res, &Error{Reason: v1alpha1.ReasonClusterNotReady, Transient: true, Err: err}
	}

	// 3. Values: only Helm charts take values; a missing layer fails before anything is rendered.
	var values map[string]any
	caps := render.Capabilities{Scope: res.Client.Scope}
	if fetched.Content.Type == v1alpha1.ContentTypeHelm {
		if values, err = r.resolveValueLayers(rel); err != nil {
			return res, &Error{Reason: v1alpha1.ReasonRenderFailed, Err: err}
		}
		// .Capabilities comes from the target's discovery, cached per client.
		if caps.KubeVersion, caps.APIVersions, err = r.caps.get(res.Client); err != nil {
			return res, &Error{Reason: v1alpha1.ReasonClusterNotReady, Transient: true, Err: fmt.Errorf("cluster %s: %w", res.Cluster.Name, err)}
		}
	}
	// 4. Render.
	objs, err := render.Render(ctx, fetched.Content, values, caps,
		render.Options{ReleaseName: rel.Name, Namespace: rel.Spec.TargetNamespace})
	if errors.Is(err, render.ErrUnsupported) {
		return res, &Error{Reason: v1alpha1.ReasonUnsupported, Err: err}
	}
	if err != nil {
		return res, &Error{Reason: v1alpha1.ReasonRenderFailed, Err: err}
	}

	// 5. Mutations.
	if err := render.ApplyMutations(objs, rel.Spec.Mutations); err != nil {
		return res, &Error{Reason: v1alpha1.ReasonRenderFailed, Err: err}
	}
	// Hooks are checked here, so a bad hook annotation fails the render rather than its phase.
	if err := hooks.Validate(objs); err != nil {
		return res, &Error{Reason: v1alpha1.ReasonRenderFailed, Err: err}
	}

	// 6. Render reference.
	ref, err := renderRef(objs)
	if err != nil {
		return res, err
	}
	res.Objects, res.RenderRef = objs, ref
	return res, nil
}

// renderRef is stageRender step 6: the SHA-256 reference of the mutated objects in render order, hooks
// included (render.RenderRef), which goes to lastAttempted.renderRef. An object that cannot be
// encoded canonically fails the render.
func renderRef(objs []*unstructured.Unstructured) (string, error) {
	ref, err := render.RenderRef(objs)
	if err != nil {
		return "", &Error{Reason: v1alpha1.ReasonRenderFailed, Err: fmt.Errorf("render reference: %w", err)}
	}
	return ref, nil
}

// Cluster reads the Release's target Cluster from the cache and returns its client: the Cluster's own,
// or with spec.serviceAccountName one impersonating that service account of the targetNamespace, so
// the target's RBAC for the account bounds what the Release may do there. A missing Cluster, one
// whose probe says it is not Ready, or one without a usable client is an error.
func (r *Renderer) Cluster(rel *v1alpha1.Release) (*v1alpha1.Cluster, *clusters.Client, error) {
	cl, err := r.Clusters.Clusters(rel.Namespace).Get(rel.Spec.ClusterRef.Name)
	if apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("cluster %s/%s not found", rel.Namespace, rel.Spec.ClusterRef.Name)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading cluster: %w", err)
	}
	if ready := meta.FindStatusCondition(cl.Status.Conditions, v1alpha1.ConditionReady); ready != nil && ready.Status == metav1.ConditionFalse {
		return cl, nil, fmt.Errorf("cluster %s is not ready: %s", cl.Name, ready.Message)
	}
	client, err := r.Clients.Get(cl)
	if err != nil {
		return cl, nil, fmt.Errorf("cluster %s: %w", cl.Name, err)
	}
	if sa := rel.Spec.ServiceAccountName; sa != "" {
		// The API does not constrain the name; one with a colon would name another user.
		if msgs := validation.IsDNS1123Subdomain(sa); len(msgs) > 0 {
			return cl, nil, fmt.Errorf("spec.serviceAccountName %q: %s", sa, strings.Join(msgs, "; "))
		}
		if client, err = client.ForServiceAccount(rel.Spec.TargetNamespace, sa); err != nil {
			return cl, nil, fmt.Errorf("cluster %s: %w", cl.Name, err)
		}
	}
	return cl, client, nil
}
