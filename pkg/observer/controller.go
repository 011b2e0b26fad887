package observer

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/generated/clientset/versioned"
	informers "github.com/kumodo/convoy/generated/informers/externalversions/core/v1alpha1"
	listers "github.com/kumodo/convoy/generated/listers/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/desired"
	"github.com/kumodo/convoy/pkg/renderstore"
	"github.com/kumodo/convoy/pkg/sharding"
)

// Field managers of the observer's parts of the Release status.
const (
	// DriftFieldManager owns InSync and status.drift.
	DriftFieldManager = "convoy-observe"
	// HealthFieldManager owns Healthy and status.health, and the ReleaseInventory status.
	HealthFieldManager = "convoy-health"
)

// SyncRequester asks the release controller to sync a Release (the sync API's POST /sync).
type SyncRequester interface {
	RequestSync(ctx context.Context, namespace, name string, force bool) (string, error)
}

// Config holds the observer's settings from flags.
type Config struct {
	// SyncRequester is called by the drift loop in Automatic mode; nil disables requestSync.
	SyncRequester SyncRequester
	// HealthInterval is how often the health loop polls a Release; zero means defaultHealthInterval.
	HealthInterval time.Duration
	// Store is the render store the release controller writes (the same one); the drift loop reads
	// pinned and last healthy renders from it. nil: no store, so the drift of a Release whose
	// desired render only the store holds is Unknown.
	Store renderstore.Store
}

// defaultHealthInterval is the health poll interval when Config.HealthInterval is zero.
const defaultHealthInterval = 30 * time.Second

// Controller runs the drift and health loops.
type Controller struct {
	convoy versioned.Interface

	releases          listers.ReleaseLister
	releasesSynced    cache.InformerSynced
	inventories       listers.ReleaseInventoryLister
	inventoriesSynced cache.InformerSynced
	clusters          listers.ClusterLister
	clustersSynced    cache.InformerSynced
	configMapsSynced  cache.InformerSynced

	renderer *desired.Renderer
	gate     sharding.Gate
	clock    clock.PassiveClock
	config   Config

	driftQueue  workqueue.TypedRateLimitingInterface[cache.ObjectName]
	healthQueue workqueue.TypedRateLimitingInterface[cache.ObjectName]
	// notApplied spaces the drift rechecks of a Release whose render is not applied yet.
	notApplied workqueue.TypedRateLimiter[cache.ObjectName]

	// driftSync and healthSync process one key; they are the syncHandler and healthSyncHandler
	// methods, replaceable by tests that count calls.
	driftSync  func(context.Context, cache.ObjectName) error
	healthSync func(context.Context, cache.ObjectName) error
}

// NewController builds the observer on the given informers; the caller starts them afterwards.
// renderer is the process's one render path (source cache, values, mutations), the same
// desired.Renderer the release controller uses, so both agree on what a Release wants and a source
// is fetched and cached once.
func NewController(
	ctx context.Context,
	convoy versioned.Interface,
	releaseInformer informers.ReleaseInformer,
	inventoryInformer informers.ReleaseInventoryInformer,
	clusterInformer informers.ClusterInformer,
	configMapInformer coreinformers.ConfigMapInformer,
	renderer *desired.Renderer,
	gate sharding.Gate,
	config Config,
) (*Controller, error) {
	logger := klog.FromContext(ctx)
	if renderer == nil {
		return nil, fmt.Errorf("observer: a renderer is required")
	}
	if config.HealthInterval <= 0 {
		config.HealthInterval = defaultHealthInterval
	}
	registerMetrics()
	c := &Controller{
		convoy:            convoy,
		releases:          releaseInformer.Lister(),
		releasesSynced:    releaseInformer.Informer().HasSynced,
		inventories:       inventoryInformer.Lister(),
		inventoriesSynced: inventoryInformer.Informer().HasSynced,
		clusters:          clusterInformer.Lister(),
		clustersSynced:    clusterInformer.Informer().HasSynced,
		configMapsSynced:  configMapInformer.Informer().HasSynced,
		renderer:          renderer,
		gate:              gate,
		clock:             clock.RealClock{},
		config:            config,
		driftQueue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "drift"},
		),
		healthQueue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "health"},
		),
		notApplied: workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](notAppliedRecheck, notAppliedRecheckMax),
	}
	c.driftSync, c.healthSync = c.syncHandler, c.healthSyncHandler

	if _, err := releaseInformer.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueRelease,
		UpdateFunc: c.updateRelease,
		DeleteFunc: c.enqueueRelease,
	}, cache.HandlerOptions{Logger: &logger}); err != nil {
		return nil, fmt.Errorf("adding observer release event handler: %w", err)
	}
	if _, err := inventoryInformer.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueInventory,
		UpdateFunc: c.updateInventory,
		DeleteFunc: c.enqueueInventory,
	}, cache.HandlerOptions{Logger: &logger}); err != nil {
		return nil, fmt.Errorf("adding observer inventory event handler: %w", err)
	}
	return c, nil
}

// enqueueRelease adds a Release's key to both loops.
func (c *Controller) enqueueRelease(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.driftQueue.Add(key)
	c.healthQueue.Add(key)
}

// updateRelease enqueues on generation or deletion-timestamp changes and informer resyncs only:
// neither a status write nor the sync annotations wake the observer (status ownership).
func (c *Controller) updateRelease(oldObj, newObj any) {
	oldRel, ok1 := oldObj.(*v1alpha1.Release)
	newRel, ok2 := newObj.(*v1alpha1.Release)
	if !ok1 || !ok2 {
		return
	}
	if releaseChanged(oldRel, newRel) {
		c.enqueueRelease(newObj)
	}
}

// releaseChanged reports whether an update of a Release is one the observer loops act on.
func releaseChanged(oldRel, newRel *v1alpha1.Release) bool {
	return oldRel.ResourceVersion == newRel.ResourceVersion || // resync
		oldRel.Generation != newRel.Generation ||
		!oldRel.DeletionTimestamp.Equal(newRel.DeletionTimestamp)
}

// enqueueInventory wakes the health loop of the inventory's Release (same name).
func (c *Controller) enqueueInventory(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.healthQueue.Add(key)
}

// updateInventory wakes the health loop on spec changes (generation) and resyncs, never on the
// health loop's own status writes.
func (c *Controller) updateInventory(oldObj, newObj any) {
	oldInv, ok1 := oldObj.(*v1alpha1.ReleaseInventory)
	newInv, ok2 := newObj.(*v1alpha1.ReleaseInventory)
	if !ok1 || !ok2 {
		return
	}
	if oldInv.ResourceVersion == newInv.ResourceVersion || oldInv.Generation != newInv.Generation {
		c.enqueueInventory(newObj)
	}
}

// EnqueueCluster enqueues every Release of a Cluster in both loops, e.g. when this replica gains
// the Cluster's shard.
func (c *Controller) EnqueueCluster(namespace, name string) {
	rels, err := c.releases.Releases(namespace).List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("listing releases of cluster %s/%s: %w", namespace, name, err))
		return
	}
	for _, rel := range rels {
		if rel.Spec.ClusterRef.Name == name {
			c.enqueueRelease(rel)
		}
	}
}

// Run waits for the caches, runs workers on both queues until ctx is done, and returns when they
// have stopped.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.driftQueue.ShutDown()
	defer c.healthQueue.ShutDown()
	logger := klog.FromContext(ctx)
	logger.Info("Starting observer")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.releasesSynced, c.inventoriesSynced, c.clustersSynced, c.configMapsSynced) {
		return fmt.Errorf("observer: caches did not sync")
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			wait.UntilWithContext(ctx, func(ctx context.Context) { c.runWorker(ctx, c.driftQueue, c.driftSync, "drift") }, time.Second)
		})
		wg.Go(func() {
			wait.UntilWithContext(ctx, func(ctx context.Context) { c.runWorker(ctx, c.healthQueue, c.healthSync, "health") }, time.Second)
		})
	}
	<-ctx.Done()
	logger.Info("Shutting down observer")
	c.driftQueue.ShutDown()
	c.healthQueue.ShutDown()
	wg.Wait()
	return nil
}

func (c *Controller) runWorker(ctx context.Context, queue workqueue.TypedRateLimitingInterface[cache.ObjectName],
	sync func(context.Context, cache.ObjectName) error, loop string) {
	for c.processNextWorkItem(ctx, queue, sync, loop) {
	}
}

func (c *Controller) processNextWorkItem(ctx context.Context, queue workqueue.TypedRateLimitingInterface[cache.ObjectName],
	sync func(context.Context, cache.ObjectName) error, loop string) bool {
	key, shutdown := queue.Get()
	if shutdown {
		return false
	}
	defer queue.Done(key)
	if err := sync(ctx, key); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Error in observer loop", "loop", loop, "release", key)
		queue.AddRateLimited(key)
		return true
	}
	queue.Forget(key)
	return true
}

// release reads a Release from the cache and applies the shard gate; nil means "nothing to do". The
// returned context is cancelled when this replica loses the shard meanwhile, so the loop stops before
// its next write; call the CancelFunc when done.
func (c *Controller) release(ctx context.Context, key cache.ObjectName) (*v1alpha1.Release, context.Context, context.CancelFunc, error) {
	rel, err := c.releases.Releases(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil, ctx, func() {}, nil
	}
	if err != nil {
		return nil, ctx, func() {}, fmt.Errorf("reading release %s: %w", key, err)
	}
	shard := c.gate.ShardOf(c.clusterForShard(rel))
	if !c.gate.Owns(shard) {
		klog.FromContext(ctx).V(4).Info("Skipping release of a shard this replica does not own", "release", klog.KObj(rel))
		return nil, ctx, func() {}, nil
	}
	ctx, cancel := c.gate.ShardContext(ctx, shard)
	return rel, ctx, cancel, nil
}

// clusterForShard returns the Release's Cluster from the cache, or one carrying only its namespace
// and name when it does not exist, so the shard is still defined.
func (c *Controller) clusterForShard(rel *v1alpha1.Release) *v1alpha1.Cluster {
	if cl, err := c.clusters.Clusters(rel.Namespace).Get(rel.Spec.ClusterRef.Name); err == nil {
		return cl
	}
	return &v1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: rel.Namespace, Name: rel.Spec.ClusterRef.Name}}
}

// syncMode is the Release's sync mode with its default.
func syncMode(rel *v1alpha1.Release) v1alpha1.SyncMode {
	if rel.Spec.SyncPolicy.Mode == "" {
		return v1alpha1.SyncModeAutomatic
	}
	return rel.Spec.SyncPolicy.Mode
}
