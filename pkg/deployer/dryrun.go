package deployer

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/kumodo/convoy/pkg/clusters"
)

// namespaceResource is the resource of Namespaces.
var namespaceResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// DryRun sends every object as a server-side apply with dryRun=All (field manager convoy, force)
// after the policy and ownership checks, and returns the first *RejectedError or *ConflictError,
// or a plain (transient) error for network, 5xx or timeouts. Objects that cannot be judged before
// their wave are skipped: those whose namespace a Namespace object of objs creates and that does
// not exist yet, and those whose kind is not served yet but whose CRD is in objs (the policy check
// still applies to them).
func DryRun(ctx context.Context, c *clusters.Client, objs []*unstructured.Unstructured, opts Options) error {
	if opts.Owner == "" {
		return errors.New("dry run: Options.Owner is empty")
	}
	logger := klog.FromContext(ctx)
	r := &resolver{c: c}
	crds := indexCRDs(objs)
	creating := creatingNamespaces(objs)
	missing := map[string]bool{} // namespaces of creating found not to exist yet
	for _, obj := range objs {
		t, err := resolve(ctx, r, obj, opts, crds, false)
		if err != nil {
			return err
		}
		if !t.served {
			logger.V(4).Info("Dry run skips object of a kind its render defines", "object", t.ref)
			continue
		}
		if ns := t.obj.GetNamespace(); t.namespaced && creating[ns] {
			if _, known := missing[ns]; !known {
				exists, err := namespaceExists(ctx, c, ns)
				if err != nil {
					return err
				}
				missing[ns] = !exists
			}
			if missing[ns] {
				logger.V(4).Info("Dry run skips object in a namespace its render creates", "object", t.ref)
				continue
			}
		}
		live, err := t.live(ctx)
		if err != nil {
			return err
		}
		if err := checkOwner(t.ref, live, opts.Owner); err != nil {
			return err
		}
		if _, err := t.apply(ctx, true); err != nil {
			return err
		}
	}
	return nil
}

// namespaceExists reports whether a namespace exists. A namespace convoy may not read counts as
// missing: its objects are then judged by the real apply.
func namespaceExists(ctx context.Context, c *clusters.Client, name string) (bool, error) {
	_, err := c.Dynamic.Resource(namespaceResource).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		return false, nil
	default:
		return false, fmt.Errorf("get namespace %s: %w", name, err)
	}
}
