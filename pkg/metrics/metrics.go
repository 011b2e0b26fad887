// Package metrics holds convoy's Prometheus registry: client-go workqueue metrics for every named
// queue, client-go's REST request metrics, reconcile metrics of the controllers, and the shard
// ownership of this replica.
package metrics

import (
	"context"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"
)

// Registry is the registry served on /metrics.
var Registry = prometheus.NewRegistry()

var (
	// ReconcileDuration observes one syncHandler call of a controller, by outcome reason.
	ReconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "convoy_reconcile_duration_seconds",
		Help:    "Duration of one reconcile, by controller and outcome reason.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	}, []string{"controller", "reason"})
	// ObjectsApplied counts objects written to targets by server-side apply.
	ObjectsApplied = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convoy_objects_applied_total",
		Help: "Objects applied to target clusters, by action (created, configured, unchanged).",
	}, []string{"action"})
	// ObjectsPruned counts objects deleted from targets by prune or finalize.
	ObjectsPruned = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "convoy_objects_pruned_total",
		Help: "Objects deleted from target clusters by prune and finalize.",
	})
	// ShardOwned is 1 for each shard this replica owns and 0 for a shard it does not (any more).
	ShardOwned = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "convoy_shard_owned",
		Help: "1 when this replica owns the shard, else 0.",
	}, []string{"shard"})
)

// SetShardOwned sets the ownership gauge of a shard.
func SetShardOwned(shard int32, owned bool) {
	v := 0.0
	if owned {
		v = 1
	}
	ShardOwned.WithLabelValues(strconv.Itoa(int(shard))).Set(v)
}

var (
	depth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "depth", Help: "Current depth of the workqueue.",
	}, []string{"name"})
	adds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "workqueue", Name: "adds_total", Help: "Adds handled by the workqueue.",
	}, []string{"name"})
	latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "workqueue", Name: "queue_duration_seconds", Help: "Seconds an item waits in the queue.",
		Buckets: prometheus.ExponentialBuckets(1e-6, 10, 10),
	}, []string{"name"})
	workDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "workqueue", Name: "work_duration_seconds", Help: "Seconds processing an item takes.",
		Buckets: prometheus.ExponentialBuckets(1e-6, 10, 10),
	}, []string{"name"})
	unfinished = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "unfinished_work_seconds", Help: "Seconds of work in progress not yet observed by work_duration.",
	}, []string{"name"})
	longestRunning = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "longest_running_processor_seconds", Help: "Seconds the longest running processor has been running.",
	}, []string{"name"})
	retries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "workqueue", Name: "retries_total", Help: "Retries handled by the workqueue.",
	}, []string{"name"})
)

var once sync.Once

// RegisterSourceStats exposes the source fetcher's counters: downloads, index fetches and cache hits
// (convoy_source_*_total), read from stats at each scrape. Call it once.
func RegisterSourceStats(stats func() (downloads, indexFetches, cacheHits int64)) {
	counter := func(name, help string, pick func(d, i, h int64) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 {
			return float64(pick(stats()))
		})
	}
	Registry.MustRegister(
		counter("convoy_source_downloads_total", "Chart archives and git fetches downloaded.", func(d, _, _ int64) int64 { return d }),
		counter("convoy_source_index_fetches_total", "Helm index, OCI tag and git ref resolutions over the network.", func(_, i, _ int64) int64 { return i }),
		counter("convoy_source_cache_hits_total", "Source fetches served from the on-disk cache.", func(_, _, h int64) int64 { return h }),
	)
}

// Register registers every convoy metric and the workqueue metrics provider. Call it once, before
// any queue is created.
func Register() {
	once.Do(func() {
		Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		Registry.MustRegister(ReconcileDuration, ObjectsApplied, ObjectsPruned, ShardOwned,
			depth, adds, latency, workDuration, unfinished, longestRunning, retries)
		workqueue.SetProvider(queueMetrics{})
		registerRESTClientMetrics()
	})
}

// queueMetrics implements workqueue.MetricsProvider on the registry above.
type queueMetrics struct{}

func (queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return depth.WithLabelValues(name)
}
func (queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return adds.WithLabelValues(name)
}
func (queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return latency.WithLabelValues(name)
}
func (queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return workDuration.WithLabelValues(name)
}
func (queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return unfinished.WithLabelValues(name)
}
func (queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return longestRunning.WithLabelValues(name)
}
func (queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return retries.WithLabelValues(name)
}

var (
	// restRequests counts the REST requests of every client-go client of the process, by verb, host
	// and response code: the management cluster's and each target's, told apart by host.
	restRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convoy_rest_client_requests_total",
		Help: "REST requests sent by client-go, by verb (GET covers gets, lists and watches), host and code.",
	}, []string{"verb", "host", "code"})
	// restDryRuns counts the requests among restRequests that were dry runs (dryRun=All): writes
	// that change nothing.
	restDryRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convoy_rest_client_dry_run_requests_total",
		Help: "REST requests sent by client-go with dryRun set, by verb and host (also counted in convoy_rest_client_requests_total).",
	}, []string{"verb", "host"})
	// restThrottled sums the time requests waited for client-go's client-side rate limiter (the
	// --qps and --burst flags), by host: how much of a reconcile's time the limits cost.
	restThrottled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convoy_rest_client_rate_limiter_wait_seconds_total",
		Help: "Seconds REST requests waited for client-go's client-side rate limiter, by host.",
	}, []string{"host"})
)

// registerRESTClientMetrics registers the REST request counters and installs them as client-go's
// RequestResult, RequestLatency and RateLimiterLatency metrics (client-go takes only the first
// registration).
func registerRESTClientMetrics() {
	Registry.MustRegister(restRequests, restDryRuns, restThrottled)
	clientmetrics.Register(clientmetrics.RegisterOpts{
		RequestResult:      requestResult{},
		RequestLatency:     requestDryRun{},
		RateLimiterLatency: rateLimiterWait{},
	})
}

// requestResult implements client-go's ResultMetric: it is called once per request, after the
// last retry, watches included.
type requestResult struct{}

func (requestResult) Increment(_ context.Context, code, method, host string) {
	restRequests.WithLabelValues(method, host, code).Inc()
}

// requestDryRun implements client-go's LatencyMetric to count dry runs: the URL template it gets
// keeps the query parameter names. It is not called for watches.
type requestDryRun struct{}

func (requestDryRun) Observe(_ context.Context, verb string, u url.URL, _ time.Duration) {
	if u.Query().Has("dryRun") {
		restDryRuns.WithLabelValues(verb, u.Host).Inc()
	}
}

// rateLimiterWait implements client-go's LatencyMetric for the client-side rate limiter: it is
// called once per request with the time the request waited for a token.
type rateLimiterWait struct{}

func (rateLimiterWait) Observe(_ context.Context, _ string, u url.URL, wait time.Duration) {
	restThrottled.WithLabelValues(u.Host).Add(wait.Seconds())
}
