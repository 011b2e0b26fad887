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
// after the policy and ownership checks, and returns the first *RejectedError or *ConflictError in
// the order of objs, or a plain (transient) error for network, 5xx or timeouts. Objects that cannot
// be judged before their wave are skipped: those whose namespace a Namespace object of objs creates
// and that does not exist yet, and those whose kind is not served yet but whose CRD is in objs (the
// policy check still applies to them). Objects are sent in parallel. On success it returns what it
// found, for Deploy.
func DryRun(ctx context.Context, c *clusters.Client, objs []*unstructured.Unstructured, opts Options) (*Judged, error) {
	if opts.Owner == "" {
		return nil, errors.New("dry run: Options.Owner is empty")
	}
	logger := klog.FromContext(ctx)
	r := &resolver{c: c}
	crds := indexCRDs(objs)
	creating := creatingNamespaces(objs)
	missing := map[string]bool{} // namespaces of creating found not to exist yet
	var judge []target
	for _, obj := range objs {
		t, err := resolve(ctx, r, obj, opts, crds, false)
		if err != nil {
			return nil, err
		}
		if !t.served {
			logger.V(4).Info("Dry run skips object of a kind its render defines", "object", t.ref)
			continue
		}
		if ns := t.obj.GetNamespace(); t.namespaced && creating[ns] {
			if _, known := missing[ns]; !known {
				exists, err := namespaceExists(ctx, c, ns)
				if err != nil {
					return nil, err
				}
				missing[ns] = !exists
			}
			if missing[ns] {
				logger.V(4).Info("Dry run skips object in a namespace its render creates", "object", t.ref)
				continue
			}
		}
		judge = append(judge, t)
	}
	lives, err := listLive(ctx, judge)
	if err != nil {
		return nil, err
	}
	judged := &Judged{}
	err = forEach(ctx, len(judge), func(ctx context.Context, i int) error {
		t := judge[i]
		// The read and the dry run go out together: a dry run writes nothing, so it may precede
		// the ownership check, and one round trip per object is saved.
		live, listed := lives[i]
		var liveErr error
		read := make(chan struct{})
		go func() {
			defer close(read)
			if !listed {
				live, liveErr = t.live(ctx)
			}
		}()
		dry, err := t.apply(ctx, true)
		<-read
		if liveErr != nil {
			return liveErr
		}
		if err := checkOwner(t.ref, live, opts.Owner); err != nil {
			return err
		}
		if err != nil {
			return err
		}
		if live != nil && live.GetResourceVersion() != dry.GetResourceVersion() {
			// The object changed between the two reads (a controller wrote it): no judgment, so
			// Deploy reads it again rather than apply over a stale comparison.
			return nil
		}
		judged.put(t.obj, judgment{live: live, dry: dry})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return judged, nil
}

// listThreshold is how many objects of one resource in one namespace a dry run reads with a single
// list instead of one get each.
const listThreshold = 16

// listPage is the page size of those lists.
const listPage = 500

// listLive reads the live objects of targets that share a resource and namespace with at least
// listThreshold others with one paginated list per group. It returns them by index into targets;
// a missing object is there as nil, an index not listed is absent (read it with a get).
func listLive(ctx context.Context, targets []target) (map[int]*unstructured.Unstructured, error) {
	type group struct {
		t     target
		names map[string]int // name -> index into targets
	}
	groups := map[string]*group{}
	for i, t := range targets {
		key := t.gvr.String() + " " + t.obj.GetNamespace()
		g := groups[key]
		if g == nil {
			g = &group{t: t, names: map[string]int{}}
			groups[key] = g
		}
		g.names[t.obj.GetName()] = i
	}
	lives := map[int]*unstructured.Unstructured{}
	for _, g := range groups {
		if len(g.names) < listThreshold {
			continue
		}
		found := map[int]*unstructured.Unstructured{}
		opts := metav1.ListOptions{Limit: listPage}
		for {
			list, err := g.t.resource.List(ctx, opts)
			if err != nil {
				// A list may be forbidden where gets are allowed: fall back to gets.
				if apierrors.IsForbidden(err) {
					found = nil
					break
				}
				return nil, classify("list", g.t.gvr.Resource+" in "+g.t.obj.GetNamespace(), err)
			}
			for k := range list.Items {
				if i, ok := g.names[list.Items[k].GetName()]; ok {
					found[i] = &list.Items[k]
				}
			}
			if opts.Continue = list.GetContinue(); opts.Continue == "" {
				break
			}
		}
		if found == nil {
			continue
		}
		for _, i := range g.names {
			lives[i] = found[i] // nil: not there
		}
	}
	return lives, nil
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
