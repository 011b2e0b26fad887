package release

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/generated/clientset/versioned"
	informers "github.com/kumodo/convoy/generated/informers/externalversions/core/v1alpha1"
	listers "github.com/kumodo/convoy/generated/listers/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/clusters"
	"github.com/kumodo/convoy/pkg/desired"
	"github.com/kumodo/convoy/pkg/fairqueue"
	"github.com/kumodo/convoy/pkg/metrics"
	"github.com/kumodo/convoy/pkg/renderstore"
	"github.com/kumodo/convoy/pkg/sharding"
)

const (
	// FieldManager owns the release controller's part of the Release status.
	FieldManager = "convoy-release"
	// releaseByCluster indexes Releases by "namespace/clusterName".
	releaseByCluster = "releaseByCluster"
	// releaseByConfigMap indexes Releases by the "namespace/name" of the ConfigMaps they read: the
	// source and the valuesFrom layers.
	releaseByConfigMap = "releaseByConfigMap"
	// releaseBySecret indexes Releases by the "namespace/name" of the Secrets they read: source
	// credentials and valuesFrom layers.
	releaseBySecret = "releaseBySecret"
)

// Config holds the release controller's settings from flags.
type Config struct {
	// Retention is the history retention used when neither the Release nor its Cluster sets one.
	Retention v1alpha1.RetentionPolicy
	// Store is the render store (--render-store); nil: no store, so no history and no pin of an
	// older render.
	Store renderstore.Store
}

// Controller reconciles Releases: it renders each one, gates it, applies it to its target Cluster in
// sync waves and prunes through the ReleaseInventory. See docs of reconcile-flow for the steps.
type Controller struct {
	convoy versioned.Interface

	releases        listers.ReleaseLister
	releaseIndexer  cache.Indexer
	releasesSynced  cache.InformerSynced
	clusters        listers.ClusterLister
	clustersSynced  cache.InformerSynced
	configMapSynced cache.InformerSynced
	secretsSynced   cache.InformerSynced

	renderer *desired.Renderer
	clients  *clusters.Cache
	gate     sharding.Gate
	recorder record.EventRecorder
	clock    clock.PassiveClock
	config   Config

	// queue serves keys round-robin across Clusters, so a slow cluster cannot starve the others.
	queue *fairqueue.Queue[cache.ObjectName]

	// gcMarks holds, per Release UID, what its last render GC ran with (see gcDue).
	gcMarks sync.Map
}

// NewController builds the release controller on the given informers. Informers must be started by
// the caller after the controller is built.
func NewController(
	ctx context.Context,
	convoy versioned.Interface,
	releaseInformer informers.ReleaseInformer,
	clusterInformer informers.ClusterInformer,
	configMapInformer coreinformers.ConfigMapInformer,
	secretInformer coreinformers.SecretInformer,
	renderer *desired.Renderer,
	clients *clusters.Cache,
	gate sharding.Gate,
	recorder record.EventRecorder,
	config Config,
) (*Controller, error) {
	logger := klog.FromContext(ctx)
	c := &Controller{
		convoy:          convoy,
		releases:        releaseInformer.Lister(),
		releaseIndexer:  releaseInformer.Informer().GetIndexer(),
		releasesSynced:  releaseInformer.Informer().HasSynced,
		clusters:        clusterInformer.Lister(),
		clustersSynced:  clusterInformer.Informer().HasSynced,
		configMapSynced: configMapInformer.Informer().HasSynced,
		secretsSynced:   secretInformer.Informer().HasSynced,
		renderer:        renderer,
		clients:         clients,
		gate:            gate,
		recorder:        recorder,
		clock:           clock.RealClock{},
		config:          config,
	}
	c.queue = fairqueue.New("release", workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](), c.clusterGroup)

	if err := releaseInformer.Informer().AddIndexers(cache.Indexers{
		releaseByCluster:   indexByCluster,
		releaseByConfigMap: indexByConfigMap,
		releaseBySecret:    indexBySecret,
	}); err != nil {
		return nil, fmt.Errorf("adding release indexers: %w", err)
	}
	if _, err := releaseInformer.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueRelease,
		UpdateFunc: c.updateRelease,
		DeleteFunc: c.enqueueRelease,
	}, cache.HandlerOptions{Logger: &logger}); err != nil {
		return nil, fmt.Errorf("adding release event handler: %w", err)
	}
	if _, err := clusterInformer.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueClusterReleases,
		UpdateFunc: c.updateCluster,
		DeleteFunc: c.enqueueClusterReleases,
	}, cache.HandlerOptions{Logger: &logger}); err != nil {
		return nil, fmt.Errorf("adding cluster event handler: %w", err)
	}
	if _, err := configMapInformer.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueConfigMapReleases,
		UpdateFunc: c.updateConfigMap,
		DeleteFunc: c.enqueueConfigMapReleases,
	}, cache.HandlerOptions{Logger: &logger}); err != nil {
		return nil, fmt.Errorf("adding configmap event handler: %w", err)
	}
	if _, err := secretInformer.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueSecretReleases,
		UpdateFunc: c.updateSecret,
		DeleteFunc: c.enqueueSecretReleases,
	}, cache.HandlerOptions{Logger: &logger}); err != nil {
		return nil, fmt.Errorf("adding secret event handler: %w", err)
	}
	return c, nil
}

func indexByCluster(obj any) ([]string, error) {
	rel, ok := obj.(*v1alpha1.Release)
	if !ok {
		return nil, nil
	}
	return []string{rel.Namespace + "/" + rel.Spec.ClusterRef.Name}, nil
}

func indexByConfigMap(obj any) ([]string, error) {
	rel, ok := obj.(*v1alpha1.Release)
	if !ok {
		return nil, nil
	}
	var keys []string
	if ref := rel.Spec.Source.ConfigMapRef; ref != nil {
		keys = append(keys, rel.Namespace+"/"+ref.Name)
	}
	return append(keys, valuesFromKeys(rel, "ConfigMap")...), nil
}

func indexBySecret(obj any) ([]string, error) {
	rel, ok := obj.(*v1alpha1.Release)
	if !ok {
		return nil, nil
	}
	var keys []string
	if ref := rel.Spec.Source.SecretRef; ref != nil {
		keys = append(keys, rel.Namespace+"/"+ref.Name)
	}
	return append(keys, valuesFromKeys(rel, "Secret")...), nil
}

// valuesFromKeys returns the "namespace/name" of the valuesFrom layers of one kind.
func valuesFromKeys(rel *v1alpha1.Release, kind string) []string {
	var keys []string
	for _, v := range rel.Spec.ValuesFrom {
		if v.Kind == kind {
			keys = append(keys, rel.Namespace+"/"+v.Name)
		}
	}
	return keys
}

// enqueueRelease adds a Release's key to the queue.
func (c *Controller) enqueueRelease(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// updateRelease enqueues on generation, annotation, label or deletionTimestamp changes and on
// informer resyncs, never on a change of status alone: a status write wakes no loop (status ownership).
func (c *Controller) updateRelease(oldObj, newObj any) {
	oldRel, newRel := oldObj.(*v1alpha1.Release), newObj.(*v1alpha1.Release)
	if oldRel.ResourceVersion == newRel.ResourceVersion || releaseChanged(oldRel, newRel) {
		c.enqueueRelease(newObj)
	}
	// A Release that becomes (or stops being) Applied and Healthy opens (or closes) the cluster wave
	// gate of the higher waves on its cluster: they are woken now, not after their interval.
	if appliedAndHealthy(oldRel) != appliedAndHealthy(newRel) {
		c.enqueueHigherWaves(newRel)
	}
}

// enqueueHigherWaves enqueues the Releases on rel's Cluster whose cluster wave is above rel's.
func (c *Controller) enqueueHigherWaves(rel *v1alpha1.Release) {
	objs, err := c.releaseIndexer.ByIndex(releaseByCluster, rel.Namespace+"/"+rel.Spec.ClusterRef.Name)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("reading index %s: %w", releaseByCluster, err))
		return
	}
	for _, obj := range objs {
		if other, ok := obj.(*v1alpha1.Release); ok && other.Spec.SyncPolicy.ClusterWave > rel.Spec.SyncPolicy.ClusterWave {
			c.enqueueRelease(other)
		}
	}
}

// releaseChanged reports whether an update is one the release controller acts on.
func releaseChanged(oldRel, newRel *v1alpha1.Release) bool {
	return oldRel.Generation != newRel.Generation ||
		!mapsEqual(oldRel.Annotations, newRel.Annotations) ||
		!oldRel.DeletionTimestamp.Equal(newRel.DeletionTimestamp)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// updateCluster wakes the Releases of a Cluster when its spec or readiness changes.
func (c *Controller) updateCluster(oldObj, newObj any) {
	oldCl, newCl := oldObj.(*v1alpha1.Cluster), newObj.(*v1alpha1.Cluster)
	// Not on a resync (same resourceVersion): the Releases' own resync enqueues each of them once.
	if oldCl.Generation != newCl.Generation || clusters.Ready(oldCl) != clusters.Ready(newCl) {
		c.enqueueClusterReleases(newObj)
	}
}

func (c *Controller) enqueueClusterReleases(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.enqueueIndexed(releaseByCluster, key.Namespace+"/"+key.Name)
}

func (c *Controller) updateConfigMap(oldObj, newObj any) {
	oldCM, newCM := oldObj.(*corev1.ConfigMap), newObj.(*corev1.ConfigMap)
	if oldCM.ResourceVersion != newCM.ResourceVersion {
		c.enqueueConfigMapReleases(newObj)
	}
}

func (c *Controller) enqueueConfigMapReleases(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.enqueueIndexed(releaseByConfigMap, key.Namespace+"/"+key.Name)
}

func (c *Controller) updateSecret(oldObj, newObj any) {
	if oldObj.(*corev1.Secret).ResourceVersion != newObj.(*corev1.Secret).ResourceVersion {
		c.enqueueSecretReleases(newObj)
	}
}

func (c *Controller) enqueueSecretReleases(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.enqueueIndexed(releaseBySecret, key.Namespace+"/"+key.Name)
}

func (c *Controller) enqueueIndexed(index, value string) {
	objs, err := c.releaseIndexer.ByIndex(index, value)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("reading index %s for %s: %w", index, value, err))
		return
	}
	for _, obj := range objs {
		c.enqueueRelease(obj)
	}
}

// EnqueueCluster enqueues every Release of a Cluster, e.g. when this replica gains the Cluster's shard.
func (c *Controller) EnqueueCluster(namespace, name string) {
	c.enqueueIndexed(releaseByCluster, namespace+"/"+name)
}

// Run waits for the caches, runs workers until ctx is done, and returns when they have stopped.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx)
	logger.Info("Starting release controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.releasesSynced, c.clustersSynced, c.configMapSynced, c.secretsSynced) {
		return fmt.Errorf("release controller: caches did not sync")
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.runWorker, time.Second) })
	}
	<-ctx.Done()
	logger.Info("Shutting down release controller")
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNextWorkItem(ctx) {
	}
}

func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if err := c.syncHandler(ctx, key); err != nil {
		if apierrors.IsConflict(err) {
			// The cache was behind a write (ours or another's): the retry reads the newer Release.
			klog.FromContext(ctx).V(2).Info("Release changed meanwhile; retrying", "release", key, "err", err)
		} else {
			utilruntime.HandleErrorWithContext(ctx, err, "Error syncing release", "release", key)
		}
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// syncHandler reconciles one Release key; the steps follow reconcile-flow.md "Entry: syncHandler".
func (c *Controller) syncHandler(ctx context.Context, key cache.ObjectName) (err error) {
	start := c.clock.Now()
	// 1. Read the Release from the cache.
	rel, err := c.releases.Releases(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading release %s: %w", key, err)
	}
	logger := klog.FromContext(ctx).WithValues("release", klog.KObj(rel), "cluster", rel.Spec.ClusterRef.Name)
	ctx = klog.NewContext(ctx, logger)

	// 2. Shard gate: a Release of a cluster this replica does not own is neither reconciled nor finalized.
	// Work under ctx stops when the shard is lost meanwhile, before its next write.
	shard := c.gate.ShardOf(c.clusterForShard(rel))
	if !c.gate.Owns(shard) {
		logger.V(4).Info("Skipping release of a shard this replica does not own")
		return nil
	}
	ctx, cancel := c.gate.ShardContext(ctx, shard)
	defer cancel()
	defer func() {
		if err != nil && errors.Is(context.Cause(ctx), sharding.ErrShardLost) {
			logger.Info("Stopped: this replica lost the shard of the release's cluster", "shard", shard)
			err = nil // the new owner reconciles it
		}
	}()

	// 3. Deletion.
	if rel.DeletionTimestamp != nil {
		return c.finalize(ctx, rel)
	}

	// 4. Finalizer.
	rel, err = c.ensureFinalizer(ctx, rel)
	if err != nil {
		return err
	}

	// 5. Reconcile.
	outcome, reconcileErr := c.reconcile(ctx, rel)
	if reconcileErr != nil {
		logger.Error(reconcileErr, "Reconcile failed", "reason", outcome.reason, "renderRef", outcome.renderRef)
	}

	// 6. Status assembly and write.
	status, err := c.assembleStatus(ctx, rel, outcome)
	if err != nil {
		return err
	}
	if err := c.writeStatus(ctx, rel, status); err != nil {
		return err
	}
	c.recordReasonChange(rel, outcome)
	metrics.ReconcileDuration.WithLabelValues("release", outcome.reason).Observe(c.clock.Since(start).Seconds())

	// 7. Requeue.
	if after := c.requeueAfter(rel, status, outcome.pollSoon, reconcileErr); after > 0 {
		c.queue.AddAfter(key, after)
	}
	return nil
}

// clusterGroup is the fair queue's group of a key: the Release's namespace and Cluster.
func (c *Controller) clusterGroup(key cache.ObjectName) string {
	if rel, err := c.releases.Releases(key.Namespace).Get(key.Name); err == nil {
		return key.Namespace + "/" + rel.Spec.ClusterRef.Name
	}
	return key.Namespace + "/"
}

// clusterForShard returns the Release's Cluster from the cache, or a Cluster carrying only its
// namespace and name when it does not exist, so the shard is still defined.
func (c *Controller) clusterForShard(rel *v1alpha1.Release) *v1alpha1.Cluster {
	if cl, err := c.clusters.Clusters(rel.Namespace).Get(rel.Spec.ClusterRef.Name); err == nil {
		return cl
	}
	return &v1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: rel.Namespace, Name: rel.Spec.ClusterRef.Name}}
}

// recordReasonChange emits an Event when the Applied reason changes.
func (c *Controller) recordReasonChange(rel *v1alpha1.Release, out reconcileOutcome) {
	prev := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ConditionApplied)
	if prev != nil && prev.Reason == out.reason && prev.Message == out.message {
		return
	}
	eventType := corev1.EventTypeNormal
	if out.failure {
		eventType = corev1.EventTypeWarning
	}
	c.recorder.Event(rel, eventType, out.reason, out.message)
}
