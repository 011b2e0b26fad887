// Package metrics holds convoy's Prometheus registry: client-go workqueue metrics for every named
// queue, and reconcile metrics of the controllers.
package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
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
)

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

// Register registers every convoy metric and the workqueue metrics provider. Call it once, before
// any queue is created.
func Register() {
	once.Do(func() {
		Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		Registry.MustRegister(ReconcileDuration, ObjectsApplied, ObjectsPruned,
			depth, adds, latency, workDuration, unfinished, longestRunning, retries)
		workqueue.SetProvider(queueMetrics{})
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
