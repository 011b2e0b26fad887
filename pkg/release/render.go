package release

import (
	"context"
	"errors"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/deployer"
	"github.com/kumodo/convoy/pkg/desired"
)

// stageRender fetches the source, checks the cluster, renders, runs the mutations and computes the
// render reference (desired.Renderer), then applies the pin. It returns stop=true with the outcome when
// the reconcile cannot go on.
func (c *Controller) stageRender(ctx context.Context, st *reconcileState) (reconcileOutcome, bool, error) {
	res, err := c.renderer.Render(ctx, st.rel)
	st.revision, st.cluster, st.client = res.Revision, res.Cluster, res.Client
	var derr *desired.Error
	if errors.As(err, &derr) {
		out := st.outcome(derr.Reason, derr.Error(), derr.Reason != v1alpha1.ReasonUnsupported)
		if derr.Transient {
			return out, true, err
		}
		return out, true, nil
	}
	if err != nil {
		return st.outcome(v1alpha1.ReasonRenderFailed, err.Error(), true), true, err
	}
	st.setRender(res.Objects, res.RenderRef, res.Revision)
	st.opts = deployer.Options{
		Owner:              st.rel.Namespace + "/" + st.rel.Name,
		TargetNamespace:    st.rel.Spec.TargetNamespace,
		AllowClusterScoped: st.cluster.Spec.AllowClusterScoped,
		AllowedNamespaces:  st.cluster.Spec.AllowedNamespaces,
	}

	// 7. Pin.
	if out, stop, err := c.resolvePinnedRender(ctx, st); stop {
		return out, true, err
	}
	return reconcileOutcome{}, false, nil
}
