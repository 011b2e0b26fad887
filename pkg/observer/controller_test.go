package observer

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/generated/clientset/versioned/fake"
	convoyinformers "github.com/kumodo/convoy/generated/informers/externalversions"
	"github.com/kumodo/convoy/pkg/clusters"
	"github.com/kumodo/convoy/pkg/coordinator"
	"github.com/kumodo/convoy/pkg/desired"
	"github.com/kumodo/convoy/pkg/sharding"
)

// counts are the calls of the two loops' handlers.
type counts struct{ drift, health atomic.Int32 }

func (c *counts) String() string {
	return fmt.Sprintf("drift=%d health=%d", c.drift.Load(), c.health.Load())
}

// startCounting builds an observer on fake clients whose loops only count their calls.
func startCounting(t *testing.T) (*fake.Clientset, *counts) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	convoy := fake.NewSimpleClientset()
	kube := kubefake.NewSimpleClientset()
	convoyFactory := convoyinformers.NewSharedInformerFactory(convoy, 0)
	kubeFactory := kubeinformers.NewSharedInformerFactory(kube, 0)
	gate, err := sharding.NewStatic(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewController(ctx, convoy, convoyFactory.Core().V1alpha1().Releases(), convoyFactory.Core().V1alpha1().ReleaseInventories(),
		convoyFactory.Core().V1alpha1().Clusters(), kubeFactory.Core().V1().ConfigMaps(),
		&desired.Renderer{
			Coordinator: coordinator.New(kubeFactory.Core().V1().ConfigMaps().Lister()),
			Clients:     clusters.NewCache(kubeFactory.Core().V1().Secrets().Lister(), clusters.Options{}),
			Clusters:    convoyFactory.Core().V1alpha1().Clusters().Lister(),
		}, gate, Config{})
	if err != nil {
		t.Fatal(err)
	}
	n := &counts{}
	c.driftSync = func(context.Context, cache.ObjectName) error { n.drift.Add(1); return nil }
	c.healthSync = func(context.Context, cache.ObjectName) error { n.health.Add(1); return nil }
	convoyFactory.Start(ctx.Done())
	kubeFactory.Start(ctx.Done())
	done := make(chan struct{})
	go func() { _ = c.Run(ctx, 1); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		convoyFactory.Shutdown()
		kubeFactory.Shutdown()
	})
	return convoy, n
}

// waitCounts waits until the counts are exactly drift and health, and stay so for a moment.
func waitCounts(t *testing.T, n *counts, step string, drift, health int32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for n.drift.Load() != drift || n.health.Load() != health {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s, want drift=%d health=%d", step, n, drift, health)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if n.drift.Load() != drift || n.health.Load() != health {
		t.Fatalf("after %s: %s, want drift=%d health=%d", step, n, drift, health)
	}
}

// TestEventsWakeLoops proves the status-ownership rule: status writes and the sync annotations wake
// neither loop; create and generation changes wake both; inventory spec changes wake the health loop.
func TestEventsWakeLoops(t *testing.T) {
	convoy, n := startCounting(t)
	ctx := context.Background()
	releases := convoy.CoreV1alpha1().Releases("ns")
	inventories := convoy.CoreV1alpha1().ReleaseInventories("ns")

	rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Generation: 1, ResourceVersion: "1"},
		Spec: v1alpha1.ReleaseSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "live"}, TargetNamespace: "ns"}}
	rel, err := releases.Create(ctx, rel, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitCounts(t, n, "create", 1, 1)

	// The fake object tracker keeps resourceVersions as given: bump them as the API server would.
	rv := 1
	bump := func(m *metav1.ObjectMeta) { rv++; m.ResourceVersion = fmt.Sprint(rv) }
	steps := []struct {
		name          string
		do            func() error
		drift, health int32
	}{
		{"a status write by the health loop", func() error {
			rel.Status.Health = &v1alpha1.HealthStatus{Verdict: "Healthy"}
			bump(&rel.ObjectMeta)
			var err error
			rel, err = releases.UpdateStatus(ctx, rel, metav1.UpdateOptions{})
			return err
		}, 0, 0},
		{"a status write by the drift loop", func() error {
			rel.Status.Drift = &v1alpha1.DriftStatus{Drifted: 1}
			bump(&rel.ObjectMeta)
			var err error
			rel, err = releases.UpdateStatus(ctx, rel, metav1.UpdateOptions{})
			return err
		}, 0, 0},
		{"a /sync annotation", func() error {
			rel.Annotations = map[string]string{v1alpha1.SyncRequestedAtAnnotation: "2026-01-01T00:00:00Z"}
			bump(&rel.ObjectMeta)
			var err error
			rel, err = releases.Update(ctx, rel, metav1.UpdateOptions{})
			return err
		}, 0, 0},
		{"a forced /sync annotation", func() error {
			rel.Annotations[v1alpha1.ForceSyncRequestedAtAnnotation] = "2026-01-01T00:00:01Z"
			bump(&rel.ObjectMeta)
			var err error
			rel, err = releases.Update(ctx, rel, metav1.UpdateOptions{})
			return err
		}, 0, 0},
		{"a spec change (generation)", func() error {
			rel.Spec.TargetNamespace, rel.Generation = "other", rel.Generation+1
			bump(&rel.ObjectMeta)
			var err error
			rel, err = releases.Update(ctx, rel, metav1.UpdateOptions{})
			return err
		}, 1, 1},
		{"an inventory create", func() error {
			_, err := inventories.Create(ctx, &v1alpha1.ReleaseInventory{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Generation: 1, ResourceVersion: "100"}}, metav1.CreateOptions{})
			return err
		}, 0, 1},
		{"an inventory status write", func() error {
			inv, err := inventories.Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			inv.Status.Objects = []v1alpha1.ObjectHealth{{Kind: "ConfigMap", Name: "x", Health: "Healthy"}}
			bump(&inv.ObjectMeta)
			_, err = inventories.UpdateStatus(ctx, inv, metav1.UpdateOptions{})
			return err
		}, 0, 0},
		{"an inventory spec change", func() error {
			inv, err := inventories.Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			inv.Spec.RenderRef, inv.Generation = "sha256:1", inv.Generation+1
			bump(&inv.ObjectMeta)
			_, err = inventories.Update(ctx, inv, metav1.UpdateOptions{})
			return err
		}, 0, 1},
		{"a delete", func() error { return releases.Delete(ctx, "web", metav1.DeleteOptions{}) }, 1, 1},
	}
	drift, health := n.drift.Load(), n.health.Load()
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		drift, health = drift+s.drift, health+s.health
		waitCounts(t, n, s.name, drift, health)
	}
}

func TestReleaseChanged(t *testing.T) {
	base := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1", Generation: 1}}
	now := metav1.Now()
	tests := []struct {
		name   string
		mutate func(*v1alpha1.Release)
		want   bool
	}{
		{"resync", func(*v1alpha1.Release) {}, true},
		{"status only", func(r *v1alpha1.Release) { r.ResourceVersion = "2"; r.Status.ObservedGeneration = 1 }, false},
		{"annotations", func(r *v1alpha1.Release) {
			r.ResourceVersion = "2"
			r.Annotations = map[string]string{v1alpha1.SyncRequestedAtAnnotation: "x"}
		}, false},
		{"generation", func(r *v1alpha1.Release) { r.ResourceVersion = "2"; r.Generation = 2 }, true},
		{"deletion", func(r *v1alpha1.Release) { r.ResourceVersion = "2"; r.DeletionTimestamp = &now }, true},
	}
	for _, tt := range tests {
		next := base.DeepCopy()
		tt.mutate(next)
		if got := releaseChanged(base, next); got != tt.want {
			t.Errorf("%s: releaseChanged = %v, want %v", tt.name, got, tt.want)
		}
	}
}
