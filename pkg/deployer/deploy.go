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
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/clusters"
	"github.com/kumodo/convoy/pkg/waves"
)

// FieldManager is the server-side apply field manager of applied objects.
const FieldManager = "convoy"

// Actions of a Change.
const (
	ActionCreated    = "created"
	ActionConfigured = "configured"
	ActionUnchanged  = "unchanged"
)

// Options of one deploy or dry run.
type Options struct {
	// Owner is the "namespace/name" of the Release, written to v1alpha1.OwnerAnnotation.
	Owner string
	// TargetNamespace is the Release's spec.targetNamespace: namespaced objects that name no
	// namespace go there, and objects may always go there.
	TargetNamespace string
	// AllowClusterScoped is the Cluster's spec.allowClusterScoped.
	AllowClusterScoped bool
	// AllowedNamespaces is the Cluster's spec.allowedNamespaces ("*" allows any).
	AllowedNamespaces []string
}

// Change is what Deploy did to one object.
type Change struct {
	// Entry is the object's inventory entry; its wave comes from the sync-wave annotation.
	Entry v1alpha1.InventoryEntry
	// Action is ActionCreated, ActionConfigured or ActionUnchanged.
	Action string
}

// target is one object resolved for sending: mapped, namespaced, policy-checked and prepared.
type target struct {
	ref        string
	obj        *unstructured.Unstructured // prepared: labels, owner annotation, namespace
	namespaced bool
	served     bool                        // false: the kind is not served yet (dry run only)
	resource   dynamic.ResourceInterface   // nil when not served
	gvr        schema.GroupVersionResource // zero when not served
}

// resolve maps obj, places it in its namespace, checks the policy and prepares it. With wait, a kind
// not served yet is waited for (Deploy); without, a kind whose CRD is in crds is returned unserved
// (DryRun skips it) and any other unserved kind is rejected.
func resolve(ctx context.Context, r *resolver, obj *unstructured.Unstructured, opts Options, crds crdIndex, wait bool) (target, error) {
	gvk := obj.GroupVersionKind()
	ref := Ref(obj)
	t := target{served: true}
	m, err := r.mapping(gvk)
	switch {
	case errors.Is(err, errNotServed) && wait:
		if m, err = r.waitForKind(ctx, ref, gvk, crds); err != nil {
			return target{}, err
		}
	case errors.Is(err, errNotServed):
		info, ok := crds[gvk.GroupKind()]
		if !ok {
			return target{}, &RejectedError{Object: ref, Message: "kind " + gvkString(gvk) + " is not served by the cluster"}
		}
		t.served, t.namespaced = false, info.namespaced
	case err != nil:
		return target{}, fmt.Errorf("%s: %w", ref, err)
	}
	if t.served {
		t.namespaced = m.Scope.Name() == meta.RESTScopeNameNamespace
	}
	ns := objectNamespace(obj, t.namespaced, opts.TargetNamespace)
	t.ref = formatRef(obj.GetKind(), ns, obj.GetName())
	if err := checkPolicy(t.ref, obj.GetKind(), obj.GetName(), ns, t.namespaced, opts); err != nil {
		return target{}, err
	}
	t.obj = Prepare(obj, opts.Owner, ns)
	if t.served {
		t.gvr = m.Resource
		if t.namespaced {
			t.resource = r.c.Dynamic.Resource(m.Resource).Namespace(ns)
		} else {
			t.resource = r.c.Dynamic.Resource(m.Resource)
		}
	}
	return t, nil
}

// live reads the live object of t; nil when it does not exist.
func (t target) live(ctx context.Context) (*unstructured.Unstructured, error) {
	live, err := t.resource.Get(ctx, t.obj.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, classify("get", t.ref, err)
	}
	return live, nil
}

// apply sends t with server-side apply (field manager convoy, force), as a dry run or for real.
func (t target) apply(ctx context.Context, dryRun bool) (*unstructured.Unstructured, error) {
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	op := "apply"
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
		op = "dry-run apply"
	}
	out, err := t.resource.Apply(ctx, t.obj.GetName(), t.obj, opts)
	if err != nil {
		return nil, classify(op, t.ref, err)
	}
	return out, nil
}

// Deploy applies objs (one wave, in order) with server-side apply, field manager convoy, force
// conflicts, adding the managed-by label and the owner annotation. Per object: map it (resetting
// the mapper on a no-match and waiting for a just-applied CRD), check the policy, read the live
// object (missing: create), check ownership (another Release's: *ConflictError), then dry-run the
// apply and skip the write when the result equals the live object. An object judged takes the
// judgment instead of the read and the dry run (see Judged).
//
// Objects go in batches by waves.Stage: Namespaces and CRDs one kind at a time, so they exist
// before the objects that need them, then the foundation kinds together, then the rest together.
// The objects of a batch are sent in parallel.
//
// It returns the changes of the objects handled, and the first error in the order of objs: a
// *RejectedError, a *ConflictError, or a transient error naming the object. Objects after a
// failed kind are not sent.
func Deploy(ctx context.Context, c *clusters.Client, objs []*unstructured.Unstructured, opts Options, judged *Judged) ([]Change, error) {
	if opts.Owner == "" {
		return nil, errors.New("deploy: Options.Owner is empty")
	}
	logger := klog.FromContext(ctx)
	r := &resolver{c: c}
	crds := indexCRDs(objs)
	changes := make([]Change, 0, len(objs))
	for start := 0; start < len(objs); {
		end := batchEnd(objs, start)
		batch := objs[start:end]
		start = end
		gk := batch[0].GroupVersionKind().GroupKind()
		// Resolving may reset the shared mapper or wait for a CRD: one object at a time.
		targets := make([]target, len(batch))
		for i, obj := range batch {
			t, err := resolve(ctx, r, obj, opts, crds, true)
			if err != nil {
				return changes, err
			}
			targets[i] = t
		}
		done := make([]*Change, len(batch))
		err := forEach(ctx, len(batch), func(ctx context.Context, i int) error {
			change, err := deployOne(ctx, targets[i], batch[i], opts, judged)
			if err != nil {
				return err
			}
			logger.V(4).Info("Deployed object", "object", EntryRef(change.Entry), "action", change.Action)
			done[i] = &change
			return nil
		})
		modified := false
		for _, ch := range done {
			if ch != nil {
				changes = append(changes, *ch)
				modified = modified || ch.Action != ActionUnchanged
			}
		}
		if err != nil {
			return changes, err
		}
		if gk == crdGroupKind && modified { // a batch of StageDefinitions has one kind
			r.kindsMayHaveChanged()
		}
	}
	return changes, nil
}

// batchEnd returns the end of the batch of objs that starts at start: the consecutive objects of
// its stage, and in StageDefinitions of its kind.
func batchEnd(objs []*unstructured.Unstructured, start int) int {
	kind := objs[start].GetKind()
	stage := waves.Stage(kind)
	end := start + 1
	for end < len(objs) && waves.Stage(objs[end].GetKind()) == stage &&
		(stage != waves.StageDefinitions || objs[end].GetKind() == kind) {
		end++
	}
	return end
}

// deployOne applies one resolved object; see Deploy.
func deployOne(ctx context.Context, t target, obj *unstructured.Unstructured, opts Options, judged *Judged) (Change, error) {
	gvk := obj.GroupVersionKind()
	change := Change{Entry: v1alpha1.InventoryEntry{
		Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
		Namespace: t.obj.GetNamespace(), Name: t.obj.GetName(), Wave: waveOf(obj),
	}}
	jd, ok := judged.get(t.obj)
	if !ok {
		live, err := t.live(ctx)
		if err != nil {
			return Change{}, err
		}
		if err := checkOwner(t.ref, live, opts.Owner); err != nil {
			return Change{}, err
		}
		jd.live = live
	}
	change.Action = ActionCreated
	if live := jd.live; live != nil {
		if live.GetDeletionTimestamp() != nil {
			// Applying would only patch an object on its way out; wait until it is gone.
			return Change{}, fmt.Errorf("apply %s: the live object is being deleted", t.ref)
		}
		if !ok {
			dry, err := t.apply(ctx, true)
			if err != nil {
				return Change{}, err
			}
			jd.dry = dry
		}
		if SameContent(live, jd.dry) {
			change.Action = ActionUnchanged
			return change, nil
		}
		change.Action = ActionConfigured
	}
	if _, err := t.apply(ctx, false); err != nil {
		return Change{}, err
	}
	return change, nil
}
