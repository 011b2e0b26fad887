package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
	convoyinformers "github.com/kumodo/convoy/generated/informers/externalversions"
	listers "github.com/kumodo/convoy/generated/listers/core/v1alpha1"
)

// createNamespaces creates namespace name on each API server.
func createNamespaces(ctx context.Context, name string, servers ...*framework.APIServer) error {
	for _, a := range servers {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := a.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s on %s: %w", name, a.Name, err)
		}
	}
	return nil
}

// registerClusters registers each target as a Cluster of its name in namespace on mgmt and waits
// until every one is Ready.
func (b *bench) registerClusters(ctx context.Context, namespace string, targets ...*framework.APIServer) error {
	for _, t := range targets {
		if err := b.env.RegisterCluster(ctx, namespace, t.Name, t); err != nil {
			return fmt.Errorf("register %s: %w", t.Name, err)
		}
	}
	var notReady []string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		notReady = nil
		for _, t := range targets {
			cl, err := b.env.Convoy().CoreV1alpha1().Clusters(namespace).Get(ctx, t.Name, metav1.GetOptions{})
			if err != nil || !meta.IsStatusConditionTrue(cl.Status.Conditions, v1alpha1.ConditionReady) {
				notReady = append(notReady, t.Name)
			}
		}
		return len(notReady) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("Clusters %v in %s not Ready (within 2m): %w", notReady, namespace, err)
	}
	return nil
}

// releaseWatch keeps the Releases of one namespace in an informer cache, so waiting for them
// costs the API server one watch instead of repeated lists.
type releaseWatch struct {
	lister listers.ReleaseNamespaceLister
	stop   chan struct{}
}

// watchReleases starts the informer of namespace's Releases and waits for its first list.
func (b *bench) watchReleases(ctx context.Context, namespace string) (*releaseWatch, error) {
	factory := convoyinformers.NewSharedInformerFactoryWithOptions(b.env.Convoy(), 0, convoyinformers.WithNamespace(namespace))
	informer := factory.Core().V1alpha1().Releases()
	lister := informer.Lister()
	w := &releaseWatch{lister: lister.Releases(namespace), stop: make(chan struct{})}
	factory.Start(w.stop)
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			close(w.stop)
			return nil, fmt.Errorf("cache of %v did not sync", typ)
		}
	}
	return w, nil
}

// close stops the informer.
func (w *releaseWatch) close() { close(w.stop) }

// applied reports whether the Release is Applied for its current generation.
func applied(r *v1alpha1.Release) bool {
	c := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionApplied)
	return c != nil && c.Reason == v1alpha1.ReasonApplied && c.ObservedGeneration == r.Generation
}

// waitApplied waits until want Releases (at least minGeneration, for those in it) are Applied
// for their generation, and returns when the last one was seen so. On timeout the error counts
// the Releases by their Applied reason.
func (w *releaseWatch) waitApplied(ctx context.Context, want int, minGeneration map[string]int64, timeout time.Duration) (time.Time, error) {
	lastReport := time.Now()
	var done int
	var reasons map[string]int
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		rels, err := w.lister.List(labels.Everything())
		if err != nil {
			return false, err
		}
		done, reasons = 0, map[string]int{}
		for _, r := range rels {
			if applied(r) && r.Generation >= minGeneration[r.Name] {
				done++
				continue
			}
			reason := "none"
			if c := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionApplied); c != nil {
				reason = c.Reason
				if c.ObservedGeneration != r.Generation {
					reason += " (older generation)"
				}
			}
			reasons[reason]++
		}
		if done >= want {
			return true, nil
		}
		if time.Since(lastReport) > 30*time.Second {
			say("  %d of %d Releases Applied; the others: %s", done, want, describeCounts(reasons))
			lastReport = time.Now()
		}
		return false, nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("%d of %d Releases Applied (within %s); the others: %s: %w", done, want, timeout, describeCounts(reasons), err)
	}
	return time.Now(), nil
}

// describeCounts formats counts by key.
func describeCounts(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// forEach runs fn for 0..n-1 on parallel goroutines and returns the first error.
func forEach(n, parallel int, fn func(i int) error) error {
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range min(parallel, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}
