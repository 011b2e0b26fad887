// Package cluster holds the cluster controller: it probes each Cluster's API server with the client
// from the shared clusters.Cache and keeps the Cluster's Ready condition, kubernetesVersion and shard.
package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
	applyv1alpha1 "github.com/kumodo/convoy/generated/applyconfiguration/core/v1alpha1"
	"github.com/kumodo/convoy/generated/clientset/versioned"
	informers "github.com/kumodo/convoy/generated/informers/externalversions/core/v1alpha1"
	listers "github.com/kumodo/convoy/generated/listers/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/clusters"
	"github.com/kumodo/convoy/pkg/metrics"
	"github.com/kumodo/convoy/pkg/sharding"
)

const (
	// FieldManager owns the Cluster status.
	FieldManager = "convoy-cluster"
	// clusterBySecret indexes Clusters by the "namespace/name" of their kubeconfig Secret.
	clusterBySecret = "clusterBySecret"
	// probeRefresh is how often an unchanged probe result is still written, so lastProbeAt stays recent
	// without a status write on every probe.
	probeRefresh = 5 * time.Minute
)

// Controller probes Clusters and writes their status.
type Controller struct {
	convoy         versioned.Interface
	clusters       listers.ClusterLister
	clusterIndexer cache.Indexer
	clustersSynced cache.InformerSynced
	secretsSynced  cache.InformerSynced
	clients        *clusters.Cache
	gate           sharding.Gate
	recorder       record.EventRecorder
	clock          clock.PassiveClock
	probeInterval  time.Duration

	queue workqueue.TypedRateLimitingInterface[cache.ObjectName]
}

// NewController builds the cluster controller. probeInterval is the time between two probes of a
// Cluster.
func NewController(
	ctx context.Context,
	convoy versioned.Interface,
	clusterInformer informers.ClusterInformer,
	secretInformer coreinformers.SecretInformer,
	clients *clusters.Cache,
	gate sharding.Gate,
	recorder record.EventRecorder,
	probeInterval time.Duration,
) (*Controller, error) {
	logger := klog.FromContext(ctx)
	c := &Controller{
		convoy:         convoy,
		clusters:       clusterInformer.Lister(),
		clusterIndexer: clusterInformer.Informer().GetIndexer(),
		clustersSynced: clusterInformer.Informer().HasSynced,
		secretsSynced:  secretInformer.Informer().HasSynced,
		clients:        clients,
		gate:           gate,
		recorder:       recorder,
		clock:          clock.RealClock{},
		probeInterval:  probeInterval,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "cluster"},
		),
	}
	if err := clusterInformer.Informer().AddIndexers(cache.Indexers{clusterBySecret: indexBySecret}); err != nil {
		return nil, fmt.Errorf("adding cluster indexer: %w", err)
	}
	if _, err := clusterInformer.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			// Status writes of this controller change no generation: they wake nothing.
			if oldObj.(*v1alpha1.Cluster).Generation != newObj.(*v1alpha1.Cluster).Generation {
				c.clients.Forget(newObj.(*v1alpha1.Cluster).Namespace, newObj.(*v1alpha1.Cluster).Name)
				c.enqueue(newObj)
			}
		},
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingObjectToName(obj); err == nil {
				c.clients.Forget(key.Namespace, key.Name)
			}
		},
	}, cache.HandlerOptions{Logger: &logger}); err != nil {
		return nil, fmt.Errorf("adding cluster event handler: %w", err)
	}
	if _, err := secretInformer.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueSecretClusters,
		UpdateFunc: func(oldObj, newObj any) {
			if oldObj.(*corev1.Secret).ResourceVersion != newObj.(*corev1.Secret).ResourceVersion {
				c.enqueueSecretClusters(newObj)
			}
		},
		DeleteFunc: c.enqueueSecretClusters,
	}, cache.HandlerOptions{Logger: &logger}); err != nil {
		return nil, fmt.Errorf("adding secret event handler: %w", err)
	}
	return c, nil
}

func indexBySecret(obj any) ([]string, error) {
	cl, ok := obj.(*v1alpha1.Cluster)
	if !ok || cl.Spec.KubeConfigSecretRef == nil {
		return nil, nil
	}
	return []string{cl.Namespace + "/" + cl.Spec.KubeConfigSecretRef.Name}, nil
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// enqueueSecretClusters re-probes the Clusters of a changed kubeconfig Secret; the client cache
// rebuilds their clients on the Secret's new resourceVersion.
func (c *Controller) enqueueSecretClusters(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	objs, err := c.clusterIndexer.ByIndex(clusterBySecret, key.Namespace+"/"+key.Name)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, o := range objs {
		cl := o.(*v1alpha1.Cluster)
		c.clients.Forget(cl.Namespace, cl.Name)
		c.enqueue(o)
	}
}

// EnqueueCluster enqueues one Cluster, e.g. when this replica gains the Cluster's shard: its
// probe loop stopped while another replica owned the shard.
func (c *Controller) EnqueueCluster(namespace, name string) {
	c.queue.Add(cache.ObjectName{Namespace: namespace, Name: name})
}

// EnqueueAll enqueues every Cluster, e.g. when this replica gains shards.
func (c *Controller) EnqueueAll() {
	for _, o := range c.clusterIndexer.List() {
		c.enqueue(o)
	}
}

// Run waits for the caches, runs workers until ctx is done, and returns when they have stopped.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx)
	logger.Info("Starting cluster controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.clustersSynced, c.secretsSynced) {
		return fmt.Errorf("cluster controller: caches did not sync")
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.runWorker, time.Second) })
	}
	<-ctx.Done()
	logger.Info("Shutting down cluster controller")
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
		utilruntime.HandleErrorWithContext(ctx, err, "Error syncing cluster", "cluster", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// syncHandler probes one Cluster and writes its status, then schedules the next probe.
func (c *Controller) syncHandler(ctx context.Context, key cache.ObjectName) error {
	start := c.clock.Now()
	cl, err := c.clusters.Clusters(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading cluster %s: %w", key, err)
	}
	shard := c.gate.ShardOf(cl)
	if !c.gate.Owns(shard) {
		return nil
	}
	// The probe's status write stops when this replica loses the shard meanwhile.
	ctx, cancel := c.gate.ShardContext(ctx, shard)
	defer cancel()
	logger := klog.FromContext(ctx).WithValues("cluster", klog.KObj(cl))

	cond := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Reachable", ObservedGeneration: cl.Generation}
	var version string
	client, err := c.clients.Get(cl)
	if err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "InvalidKubeconfig", err.Error()
	} else if version, err = client.Probe(ctx); err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "Unreachable", err.Error()
		// A fresh client next time: the server may come back with other certificates or addresses.
		c.clients.Forget(cl.Namespace, cl.Name)
	} else {
		cond.Message = "API server " + version + " answered"
		// Forget cached discovery, so kinds served since the last probe (new CRDs) are known to rendering.
		client.Mapper.Reset()
	}
	if prev := meta.FindStatusCondition(cl.Status.Conditions, v1alpha1.ConditionReady); prev == nil || prev.Status != cond.Status || prev.Reason != cond.Reason {
		logger.Info("Cluster readiness changed", "ready", cond.Status, "reason", cond.Reason, "message", cond.Message)
		eventType := corev1.EventTypeNormal
		if cond.Status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		c.recorder.Event(cl, eventType, cond.Reason, cond.Message)
	}
	if version == "" {
		version = cl.Status.KubernetesVersion
	}
	if err := c.writeStatus(ctx, cl, cond, version, shard); err != nil {
		return err
	}
	metrics.ReconcileDuration.WithLabelValues("cluster", cond.Reason).Observe(c.clock.Since(start).Seconds())
	c.queue.AddAfter(key, c.probeInterval)
	return nil
}

// writeStatus writes the probe result with server-side apply when it changed, or when lastProbeAt is
// older than probeRefresh.
func (c *Controller) writeStatus(ctx context.Context, cl *v1alpha1.Cluster, cond metav1.Condition, version string, shard int32) error {
	now := metav1.NewTime(c.clock.Now())
	st := v1alpha1.ClusterStatus{KubernetesVersion: version, Shard: &shard, ObservedGeneration: cl.Generation, LastProbeAt: cl.Status.LastProbeAt}
	st.Conditions = append(st.Conditions, cl.Status.Conditions...)
	cond.LastTransitionTime = now
	meta.SetStatusCondition(&st.Conditions, cond)
	stale := cl.Status.LastProbeAt == nil || c.clock.Since(cl.Status.LastProbeAt.Time) > probeRefresh
	if !stale && equality.Semantic.DeepEqual(st, cl.Status) {
		return nil
	}
	st.LastProbeAt = &now
	raw, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encoding cluster status: %w", err)
	}
	status := applyv1alpha1.ClusterStatus()
	if err := json.Unmarshal(raw, status); err != nil {
		return fmt.Errorf("building cluster status apply configuration: %w", err)
	}
	if _, err := c.convoy.CoreV1alpha1().Clusters(cl.Namespace).ApplyStatus(ctx,
		applyv1alpha1.Cluster(cl.Name, cl.Namespace).WithStatus(status),
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return fmt.Errorf("writing cluster status: %w", err)
	}
	return nil
}
