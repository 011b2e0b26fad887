// Command convoy-controller-manager runs convoy's controllers: release (render, gate, apply, prune),
// observer (drift and health loops) and cluster (probe target clusters), and the HTTPS sync API
// (POST /sync, and GET /history of the render store). It serves /healthz, /readyz and /metrics on
// --health-addr. Replicas share the Clusters by shard: static (--shard) or dynamic (--sharding=dynamic,
// coordination Leases in --leader-namespace).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/generated/clientset/versioned"
	convoyscheme "github.com/kumodo/convoy/generated/clientset/versioned/scheme"
	convoyinformers "github.com/kumodo/convoy/generated/informers/externalversions"
	listers "github.com/kumodo/convoy/generated/listers/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/cluster"
	"github.com/kumodo/convoy/pkg/clusters"
	"github.com/kumodo/convoy/pkg/coordinator"
	"github.com/kumodo/convoy/pkg/desired"
	"github.com/kumodo/convoy/pkg/metrics"
	"github.com/kumodo/convoy/pkg/release"
	"github.com/kumodo/convoy/pkg/renderstore"
	"github.com/kumodo/convoy/pkg/sharding"
)

// allControllers are the controllers this build runs, in start order.
var allControllers = []string{"cluster", "release", "observer"}

// options are the command-line flags.
type options struct {
	kubeconfig           string
	controllers          string
	workers              int
	healthAddr           string
	clusterProbeInterval time.Duration
	resync               time.Duration
	qps                  float64
	burst                int
	targetQPS            float64
	targetBurst          int
	targetTimeout        time.Duration
	shards               int
	shard                int
	sharding             string
	leaderNamespace      string
	leaseDuration        time.Duration
	leaseRenewPeriod     time.Duration
	identity             string
	historyMax           int
	historyMaxAge        time.Duration
	renderStore          string
	profiling            bool
	sources              coordinator.Options
	// observer holds the observer's and the sync API's flags (observer.go).
	observer observerOptions
}

func main() {
	opts := options{}
	fs := flag.CommandLine
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster; empty: $KUBECONFIG, then in-cluster")
	fs.StringVar(&opts.controllers, "controllers", "*", "comma-separated controllers to run ("+strings.Join(allControllers, ",")+"); * runs all")
	fs.IntVar(&opts.workers, "workers", 4, "workers per controller")
	fs.StringVar(&opts.healthAddr, "health-addr", ":8081", "address serving /healthz, /readyz and /metrics")
	fs.DurationVar(&opts.clusterProbeInterval, "cluster-probe-interval", 30*time.Second, "time between two probes of a Cluster")
	fs.DurationVar(&opts.resync, "resync", 10*time.Minute, "informer resync period")
	fs.Float64Var(&opts.qps, "qps", 50, "QPS to the management API server")
	fs.IntVar(&opts.burst, "burst", 100, "burst to the management API server")
	fs.Float64Var(&opts.targetQPS, "target-qps", 50, "QPS to each target API server")
	fs.IntVar(&opts.targetBurst, "target-burst", 100, "burst to each target API server")
	fs.DurationVar(&opts.targetTimeout, "target-timeout", 30*time.Second, "timeout of one request to a target API server")
	fs.IntVar(&opts.shards, "shards", 1, "number of shards Clusters are spread over")
	fs.IntVar(&opts.shard, "shard", -1, "the shard this replica owns (static sharding); -1: all shards when --shards=1")
	fs.StringVar(&opts.sharding, "sharding", shardingStatic, "how replicas share the shards: static (--shard, or the StatefulSet "+
		"ordinal of POD_NAME) or dynamic (coordination Leases: each live replica holds at most ceil(shards/replicas), "+
		"a dead replica's shards move within one lease duration)")
	fs.StringVar(&opts.leaderNamespace, "leader-namespace", "", "namespace of the dynamic sharding Leases; empty: $POD_NAMESPACE, else kube-system")
	fs.DurationVar(&opts.leaseDuration, "lease-duration", 15*time.Second, "dynamic sharding: how long a Lease stays valid without renewal")
	fs.DurationVar(&opts.leaseRenewPeriod, "lease-renew-period", 5*time.Second, "dynamic sharding: time between two renewals of this replica's Leases")
	fs.StringVar(&opts.identity, "identity", "", "dynamic sharding: this replica's unique name; empty: $POD_NAME, else the host name")
	fs.IntVar(&opts.historyMax, "history-max", 10, "rendered history kept per Release when neither the Release nor its Cluster sets retention")
	fs.DurationVar(&opts.historyMaxAge, "history-max-age", 720*time.Hour, "age after which history entries are removed, by default")
	fs.StringVar(&opts.renderStore, "render-store", "", "render store URL: file:///var/lib/convoy/renders (one replica) or "+
		"s3://bucket/prefix?endpoint=host:port&region=R[&tls=false] (credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY); "+
		"empty: no store, so no render history and no pin of an older render")
	fs.BoolVar(&opts.profiling, "profiling", false, "serve net/http/pprof under /debug/pprof/ on --health-addr")
	sourceFlags(fs, &opts.sources)
	addObserverFlags(fs, &opts.observer)
	klog.InitFlags(fs)
	flag.Parse()

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, opts); err != nil {
		klog.ErrorS(err, "convoy-controller-manager failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func run(ctx context.Context, opts options) error {
	logger := klog.FromContext(ctx)
	enabled, err := selectControllers(opts.controllers)
	if err != nil {
		return err
	}
	cfg, err := managementConfig(opts.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(opts.qps), opts.burst
	// The identity tells replicas apart in the management cluster's audit log.
	cfg.UserAgent = "convoy-controller-manager (replica " + replicaIdentity(opts.identity) + ")"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building kubernetes client: %w", err)
	}
	convoy, err := versioned.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building convoy client: %w", err)
	}
	gate, dynamicGate, err := shardGate(opts, kube)
	if err != nil {
		return err
	}

	metrics.Register()
	if err := convoyscheme.AddToScheme(clientgoscheme.Scheme); err != nil {
		return fmt.Errorf("registering convoy types: %w", err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(3)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "convoy-controller-manager"})

	kubeFactory := kubeinformers.NewSharedInformerFactory(kube, opts.resync)
	convoyFactory := convoyinformers.NewSharedInformerFactory(convoy, opts.resync)
	var inCluster *rest.Config
	if c, err := rest.InClusterConfig(); err == nil {
		inCluster = c
	}
	clients := clusters.NewCache(kubeFactory.Core().V1().Secrets().Lister(), clusters.Options{
		QPS: float32(opts.targetQPS), Burst: opts.targetBurst, Timeout: opts.targetTimeout, InCluster: inCluster,
	})

	// The render store is shared: the release controller writes it, the observer and the history
	// endpoint read it.
	store, err := openRenderStore(logger, opts.renderStore)
	if err != nil {
		return err
	}
	// One render path per process: the release controller and the drift loop render through the same
	// desired.Renderer, so a source is fetched and cached once and both agree on the render.
	var renderer *desired.Renderer
	if enabled["release"] || enabled["observer"] {
		if renderer, err = newRenderer(opts.sources, kubeFactory, convoyFactory, clients); err != nil {
			return err
		}
	}
	var runners []func(context.Context) error
	// enqueuers wake the loops of a Cluster's Releases (and the Cluster's probe) when this replica
	// gains the Cluster's shard: keys of a shard not owned were dropped, not requeued.
	var enqueuers []func(namespace, name string)
	if enabled["cluster"] {
		c, err := cluster.NewController(ctx, convoy, convoyFactory.Core().V1alpha1().Clusters(),
			kubeFactory.Core().V1().Secrets(), clients, gate, recorder, opts.clusterProbeInterval)
		if err != nil {
			return err
		}
		enqueuers = append(enqueuers, c.EnqueueCluster)
		runners = append(runners, func(ctx context.Context) error { return c.Run(ctx, opts.workers) })
	}
	if enabled["release"] {
		retention := v1alpha1.RetentionPolicy{MaxAge: &metav1.Duration{Duration: opts.historyMaxAge}}
		maxHistory := int32(opts.historyMax)
		retention.MaxHistory = &maxHistory
		c, err := release.NewController(ctx, convoy, convoyFactory.Core().V1alpha1().Releases(),
			convoyFactory.Core().V1alpha1().Clusters(), kubeFactory.Core().V1().ConfigMaps(),
			kubeFactory.Core().V1().Secrets(), renderer,
			clients, gate, recorder, release.Config{Retention: retention, Store: store})
		if err != nil {
			return err
		}
		enqueuers = append(enqueuers, c.EnqueueCluster)
		runners = append(runners, func(ctx context.Context) error { return c.Run(ctx, opts.workers) })
	}
	// The sync API and the observer (observer.go).
	api, err := setupSyncAPI(logger, opts.observer, kube, convoy, store, convoyFactory.Core().V1alpha1().Releases().Lister())
	if err != nil {
		return err
	}
	if api != nil {
		runners = append(runners, api.run)
	}
	if enabled["observer"] {
		c, err := setupObserver(ctx, opts.observer, convoy, convoyFactory, kubeFactory, renderer, store, gate, api)
		if err != nil {
			return err
		}
		enqueuers = append(enqueuers, c.EnqueueCluster)
		runners = append(runners, func(ctx context.Context) error { return c.Run(ctx, opts.workers) })
	}
	if dynamicGate != nil {
		clusterLister := convoyFactory.Core().V1alpha1().Clusters().Lister()
		releaseLister := convoyFactory.Core().V1alpha1().Releases().Lister()
		dynamicGate.OnGain(func(shard int32) {
			enqueueShard(logger, clusterLister, releaseLister, dynamicGate, shard, enqueuers)
		})
		// The gate starts with the other runners, after the caches synced, so the first shards it
		// gains find their Clusters and Releases in the listers.
		runners = append(runners, dynamicGate.Run)
	}
	// Secrets back the client cache of every controller.
	kubeFactory.Core().V1().Secrets().Informer()

	var ready atomic.Bool
	srv, err := serveHealth(opts.healthAddr, &ready, opts.profiling)
	if err != nil {
		return err
	}
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()

	kubeFactory.Start(ctx.Done())
	convoyFactory.Start(ctx.Done())
	defer kubeFactory.Shutdown()
	defer convoyFactory.Shutdown()
	for typ, ok := range kubeFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("cache of %v did not sync", typ)
		}
	}
	for typ, ok := range convoyFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("cache of %v did not sync", typ)
		}
	}
	ready.Store(true)
	logger.Info("Caches synced; running controllers", "controllers", opts.controllers, "workers", opts.workers)

	// A controller that fails stops the others: the process exits and is restarted.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Go(func() {
			if err := r(ctx); err != nil {
				stop(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// selectControllers parses --controllers.
func selectControllers(flagValue string) (map[string]bool, error) {
	enabled := map[string]bool{}
	for _, name := range strings.Split(flagValue, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "*":
			for _, c := range allControllers {
				enabled[c] = true
			}
		case slices.Contains(allControllers, name):
			enabled[name] = true
		case name == "":
		default:
			return nil, fmt.Errorf("unknown controller %q in --controllers (known: %s)", name, strings.Join(allControllers, ","))
		}
	}
	if len(enabled) == 0 {
		return nil, fmt.Errorf("--controllers selects no controller")
	}
	return enabled, nil
}

// Values of --sharding.
const (
	shardingStatic  = "static"
	shardingDynamic = "dynamic"
)

// shardGate builds the shard gate of --sharding. Static: --shards and --shard (or the pod name's
// ordinal). Dynamic: coordination Leases in --leader-namespace; the returned *sharding.Dynamic must
// be run.
func shardGate(opts options, kube kubernetes.Interface) (sharding.Gate, *sharding.Dynamic, error) {
	n := int32(opts.shards)
	switch opts.sharding {
	case shardingStatic:
	case shardingDynamic:
		if n < 1 {
			return nil, nil, fmt.Errorf("--shards=%d: need at least 1", n)
		}
		d, err := sharding.NewDynamic(sharding.DynamicConfig{
			Leases:        kube.CoordinationV1(),
			Namespace:     firstNonEmpty(opts.leaderNamespace, os.Getenv("POD_NAMESPACE"), metav1.NamespaceSystem),
			Identity:      replicaIdentity(opts.identity),
			Shards:        n,
			LeaseDuration: opts.leaseDuration,
			RenewPeriod:   opts.leaseRenewPeriod,
		})
		if err != nil {
			return nil, nil, err
		}
		return d, d, nil
	default:
		return nil, nil, fmt.Errorf("--sharding=%q: want %s or %s", opts.sharding, shardingStatic, shardingDynamic)
	}
	if n <= 1 {
		g, err := sharding.NewStatic(1, 0)
		return g, nil, err
	}
	shard := int32(opts.shard)
	if shard < 0 {
		ordinal, err := sharding.OrdinalFromPodName(os.Getenv("POD_NAME"))
		if err != nil {
			return nil, nil, fmt.Errorf("--shards=%d needs --shard, a StatefulSet POD_NAME or --sharding=dynamic: %w", n, err)
		}
		shard = ordinal
	}
	g, err := sharding.NewStatic(n, shard)
	return g, nil, err
}

// replicaIdentity is --identity, else $POD_NAME, else the host name.
func replicaIdentity(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if pod := os.Getenv("POD_NAME"); pod != "" {
		return pod
	}
	host, _ := os.Hostname()
	return strings.ToLower(host)
}

// firstNonEmpty returns the first non-empty value.
func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// enqueueShard wakes every loop for the Clusters of a shard this replica just gained: each
// Cluster, and the cluster of each Release, which may not exist (a Release being deleted).
func enqueueShard(logger klog.Logger, clusters listers.ClusterLister, releases listers.ReleaseLister, gate sharding.Gate,
	shard int32, enqueuers []func(namespace, name string)) {
	keys := map[cache.ObjectName]bool{}
	cls, err := clusters.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Listing Clusters of a gained shard failed", "shard", shard)
	}
	for _, cl := range cls {
		if gate.ShardOf(cl) == shard {
			keys[cache.ObjectName{Namespace: cl.Namespace, Name: cl.Name}] = true
		}
	}
	rels, err := releases.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Listing Releases of a gained shard failed", "shard", shard)
	}
	for _, rel := range rels {
		key := cache.ObjectName{Namespace: rel.Namespace, Name: rel.Spec.ClusterRef.Name}
		if keys[key] {
			continue
		}
		if _, err := clusters.Clusters(key.Namespace).Get(key.Name); err == nil {
			continue // an existing Cluster was judged above
		}
		missing := &v1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		if gate.ShardOf(missing) == shard {
			keys[key] = true
		}
	}
	for key := range keys {
		for _, enqueue := range enqueuers {
			enqueue(key.Namespace, key.Name)
		}
	}
	logger.Info("Gained a shard; enqueued its clusters", "shard", shard, "clusters", len(keys))
}

// managementConfig loads the management cluster's client configuration.
func managementConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig and not in a cluster: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

// serveHealth serves /healthz (the process lives), /readyz (caches synced) and /metrics, and with
// profiling net/http/pprof's /debug/pprof/.
func serveHealth(addr string, ready *atomic.Bool, profiling bool) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.Handle("/metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on --health-addr %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "health server stopped")
		}
	}()
	return srv, nil
}

// openRenderStore opens the render store of --render-store; "" is no store. Opening does not
// contact the store: a store that is down makes attempts fail with StoreUnavailable, not the start.
func openRenderStore(logger klog.Logger, url string) (renderstore.Store, error) {
	store, err := renderstore.Open(url)
	if err != nil {
		return nil, fmt.Errorf("--render-store: %w", err)
	}
	if store == nil {
		logger.Info("No render store (--render-store): no render history, and a pin applies only the current render")
		return nil, nil
	}
	logger.Info("Render store", "location", store.Location())
	return store, nil
}

// sourceFlags registers the flags of source fetching.
func sourceFlags(fs *flag.FlagSet, o *coordinator.Options) {
	fs.StringVar(&o.CacheDir, "source-cache-dir", "", "directory of fetched charts and repositories; empty: $TMPDIR/convoy-sources")
	fs.Int64Var(&o.MaxDownloadBytes, "source-max-download-bytes", coordinator.DefaultMaxDownloadBytes, "largest download of one source (chart archive, index, git pack)")
	fs.Int64Var(&o.MaxUnpackedBytes, "source-max-unpacked-bytes", coordinator.DefaultMaxUnpackedBytes, "largest unpacked chart or repository tree")
	fs.DurationVar(&o.FetchTimeout, "source-fetch-timeout", coordinator.DefaultFetchTimeout, "timeout of one source fetch")
	fs.BoolVar(&o.AllowLinkLocal, "allow-link-local-sources", false, "allow sources on link-local and cloud metadata addresses "+
		"(169.254.0.0/16, fe80::/10, ...); refused by default, by URL and at connect time")
}

// newRenderer builds the one render path (source fetching with its cache, rendering, mutations)
// that the controllers of this process share; run builds it once.
func newRenderer(o coordinator.Options, kubeFactory kubeinformers.SharedInformerFactory,
	convoyFactory convoyinformers.SharedInformerFactory, clients *clusters.Cache) (*desired.Renderer, error) {
	o.ConfigMaps = kubeFactory.Core().V1().ConfigMaps().Lister()
	o.Secrets = kubeFactory.Core().V1().Secrets().Lister()
	coord, err := coordinator.NewWithOptions(o)
	if err != nil {
		return nil, fmt.Errorf("source fetching: %w", err)
	}
	metrics.RegisterSourceStats(func() (int64, int64, int64) {
		s := coord.Stats()
		return s.Downloads, s.IndexFetches, s.CacheHits
	})
	return &desired.Renderer{
		Coordinator: coord,
		Clients:     clients,
		Clusters:    convoyFactory.Core().V1alpha1().Clusters().Lister(),
		ConfigMaps:  o.ConfigMaps,
		Secrets:     o.Secrets,
	}, nil
}
