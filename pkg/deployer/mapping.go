package deployer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kumodo/convoy/pkg/clusters"
)

// crdEstablishTimeout bounds the wait for a just-applied CRD to be served.
const crdEstablishTimeout = 30 * time.Second

// crdPollInterval is how often a CRD's Established condition is read while waiting.
const crdPollInterval = 500 * time.Millisecond

// crdResource is the resource of CustomResourceDefinitions.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// errNotServed marks a kind the cluster does not serve (after a mapper reset).
var errNotServed = errors.New("not served by the cluster")

// resolver maps kinds to resources for one call, resetting the cluster's shared mapper at most once
// per call unless kinds may have appeared since (a CRD was applied).
type resolver struct {
	c     *clusters.Client
	mu    sync.Mutex // guards fresh and the reset: Delete maps from parallel goroutines
	fresh bool       // the mapper was reset during this call and no CRD was applied since
}

// mapping returns the REST mapping of gvk. A kind the cluster does not serve, even after a reset,
// gives an error wrapping errNotServed; a discovery failure gives a plain error.
func (r *resolver) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, err := r.c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil && meta.IsNoMatchError(err) && !r.fresh {
		r.c.Mapper.Reset()
		r.fresh = true
		m, err = r.c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	switch {
	case err == nil:
		return m, nil
	case meta.IsNoMatchError(err):
		return nil, fmt.Errorf("%s %w", gvkString(gvk), errNotServed)
	default:
		return nil, fmt.Errorf("map %s: %w", gvkString(gvk), err)
	}
}

// mappingAnyVersion maps gvk, falling back to any served version of its kind: an object stays the
// same object when the version it was applied with is no longer served.
func (r *resolver) mappingAnyVersion(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := r.mapping(gvk)
	if !errors.Is(err, errNotServed) {
		return m, err
	}
	m, anyErr := r.c.Mapper.RESTMapping(gvk.GroupKind())
	if anyErr != nil {
		return nil, err
	}
	return m, nil
}

// gvkString formats a kind as "apiVersion Kind", e.g. "apps/v1 Deployment".
func gvkString(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + " " + gvk.Kind
}

// kindsMayHaveChanged records that a CRD was applied, so the next no-match resets the mapper again.
func (r *resolver) kindsMayHaveChanged() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fresh = false
}

// waitForKind waits until the cluster serves gvk, when a CRD defining it exists on the cluster:
// the CRD of the render (crds) or one found by listing. It returns a *RejectedError when no CRD
// defines the kind or the CRD does not serve the version, and a plain error on timeout.
func (r *resolver) waitForKind(ctx context.Context, ref string, gvk schema.GroupVersionKind, crds crdIndex) (*meta.RESTMapping, error) {
	crdName := ""
	if info, ok := crds[gvk.GroupKind()]; ok {
		crdName = info.name
	} else {
		name, err := r.findCRD(ctx, gvk.GroupKind())
		if err != nil {
			return nil, err
		}
		crdName = name
	}
	if crdName == "" {
		return nil, &RejectedError{Object: ref, Message: fmt.Sprintf("kind %s is not served by the cluster", gvkString(gvk))}
	}

	var mapping *meta.RESTMapping
	var rejected error
	poll := func(ctx context.Context) (bool, error) {
		crd, err := r.c.Dynamic.Resource(crdResource).Get(ctx, crdName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			rejected = &RejectedError{Object: ref,
				Message: fmt.Sprintf("kind %s is not served by the cluster and its CustomResourceDefinition %s does not exist", gvkString(gvk), crdName)}
			return true, nil
		}
		if err != nil {
			return false, nil // retried until the timeout
		}
		if _, info, ok := parseCRD(crd); ok && !info.versions[gvk.Version] {
			rejected = &RejectedError{Object: ref,
				Message: fmt.Sprintf("version %s of %s is not served by CustomResourceDefinition %s", gvk.Version, gvk.Kind, crdName)}
			return true, nil
		}
		if !established(crd) {
			return false, nil
		}
		r.c.Mapper.Reset()
		r.fresh = true
		m, err := r.c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return false, nil // discovery lags the Established condition
		}
		mapping = m
		return true, nil
	}
	if err := wait.PollUntilContextTimeout(ctx, crdPollInterval, crdEstablishTimeout, true, poll); err != nil {
		return nil, fmt.Errorf("wait for CustomResourceDefinition %s to serve %s: %w", crdName, gvkString(gvk), err)
	}
	if rejected != nil {
		return nil, rejected
	}
	return mapping, nil
}

// findCRD returns the name of the cluster's CustomResourceDefinition of gk, or "" when none exists.
func (r *resolver) findCRD(ctx context.Context, gk schema.GroupKind) (string, error) {
	list, err := r.c.Dynamic.Resource(crdResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("list CustomResourceDefinitions to find %s: %w", gk, err)
	}
	for i := range list.Items {
		if got, info, ok := parseCRD(&list.Items[i]); ok && got == gk {
			return info.name, nil
		}
	}
	return "", nil
}

// established reports whether a CustomResourceDefinition's Established condition is True.
func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
