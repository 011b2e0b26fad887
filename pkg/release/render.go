package release

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/render"
)

// stageRender fetches the source, checks the cluster, renders, and computes the render reference.
// It returns stop=true with the outcome when the reconcile cannot go on.
func (c *Controller) stageRender(ctx context.Context, st *reconcileState) (reconcileOutcome, bool, error) {
	rel := st.rel

	// 1. Fetch.
	res, err := c.coordinator.Ensure(ctx, rel)
	if err != nil {
		return st.outcome(v1alpha1.ReasonFetchFailed, err.Error(), true), true, fmt.Errorf("fetching source: %w", err)
	}
	if !res.Ready {
		return st.outcome(v1alpha1.ReasonUnsupported, res.Message, false), true, nil
	}
	st.revision = res.Content.Revision

	// 2. Cluster.
	if out, err := c.resolveCluster(st); err != nil {
		return out, true, err
	}

	// 3. Values: only the helm content type has values; this build renders no helm content, so the
	// layers are resolved together with Helm rendering.

	// 4. Render.
	objs, err := render.Render(ctx, res.Content, nil, render.Capabilities{Scope: st.client.Scope},
		render.Options{ReleaseName: rel.Name, Namespace: rel.Spec.TargetNamespace})
	if errors.Is(err, render.ErrUnsupported) {
		return st.outcome(v1alpha1.ReasonUnsupported, err.Error(), false), true, nil
	}
	if err != nil {
		return st.outcome(v1alpha1.ReasonRenderFailed, err.Error(), true), true, nil
	}

	// 5. Mutations.
	if len(rel.Spec.Mutations) > 0 {
		return st.outcome(v1alpha1.ReasonUnsupported, "spec.mutations are not supported by this build yet", false), true, nil
	}

	// Hooks run in phases around the sync; until this build runs them, applying them as plain objects
	// would run them at the wrong time.
	for _, obj := range objs {
		if phase, ok := obj.GetAnnotations()[v1alpha1.HookAnnotation]; ok {
			return st.outcome(v1alpha1.ReasonUnsupported, fmt.Sprintf("%s %s is a %s hook: lifecycle hooks are not supported by this build yet",
				obj.GetKind(), obj.GetName(), phase), false), true, nil
		}
	}

	// 6. Render reference.
	ref, err := render.RenderRef(objs)
	if err != nil {
		return st.outcome(v1alpha1.ReasonRenderFailed, err.Error(), true), true, nil
	}
	st.objects, st.renderRef = objs, ref

	// 7. Pin.
	if out, stop := c.resolvePinnedRender(ctx, st); stop {
		return out, true, nil
	}
	return reconcileOutcome{}, false, nil
}

// resolveCluster reads the target Cluster from the cache and its client. A missing or unreachable
// Cluster is ClusterNotReady with an error, so the attempt is retried with backoff.
func (c *Controller) resolveCluster(st *reconcileState) (reconcileOutcome, error) {
	rel := st.rel
	cl, err := c.clusters.Clusters(rel.Namespace).Get(rel.Spec.ClusterRef.Name)
	if apierrors.IsNotFound(err) {
		err = fmt.Errorf("cluster %s/%s not found", rel.Namespace, rel.Spec.ClusterRef.Name)
		return st.outcome(v1alpha1.ReasonClusterNotReady, err.Error(), true), err
	}
	if err != nil {
		return st.outcome(v1alpha1.ReasonClusterNotReady, err.Error(), true), fmt.Errorf("reading cluster: %w", err)
	}
	if ready := meta.FindStatusCondition(cl.Status.Conditions, v1alpha1.ConditionReady); ready != nil && ready.Status == metav1.ConditionFalse {
		err = fmt.Errorf("cluster %s is not ready: %s", cl.Name, ready.Message)
		return st.outcome(v1alpha1.ReasonClusterNotReady, err.Error(), true), err
	}
	client, err := c.clients.Get(cl)
	if err != nil {
		err = fmt.Errorf("cluster %s: %w", cl.Name, err)
		return st.outcome(v1alpha1.ReasonClusterNotReady, err.Error(), true), err
	}
	st.cluster, st.client = cl, client
	return reconcileOutcome{}, nil
}

// resolvePinnedRender applies spec.pin: when the pin names the fresh render it is applied as is;
// any other render must come from the render store, and without one the reconcile stops with Pinned.
func (c *Controller) resolvePinnedRender(_ context.Context, st *reconcileState) (reconcileOutcome, bool) {
	pin := st.rel.Spec.Pin
	if pin == nil {
		return reconcileOutcome{}, false
	}
	if pin.RenderRef == st.renderRef {
		st.pin = &v1alpha1.PinStatus{RenderRef: pin.RenderRef, Applied: true, Message: "the pinned render is the current source render"}
		return reconcileOutcome{}, false
	}
	msg := fmt.Sprintf("pinned render %s differs from the source render and no render store is configured (--render-store)", pin.RenderRef)
	st.pin = &v1alpha1.PinStatus{RenderRef: pin.RenderRef, Message: msg}
	return st.outcome(v1alpha1.ReasonPinned, msg, true), true
}
