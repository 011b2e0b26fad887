package observer

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kumodo/convoy/pkg/metrics"
)

var (
	// DriftChecks counts drift checks by result: InSync, Drifted or Unknown.
	DriftChecks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convoy_drift_checks_total",
		Help: "Drift checks of Releases, by result (InSync, Drifted, Unknown).",
	}, []string{"result"})
	// DriftedObjects counts the drifted objects found by drift checks.
	DriftedObjects = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "convoy_drifted_objects_total",
		Help: "Drifted objects found by drift checks (an object drifted across several checks counts each time).",
	})
	// HealthVerdicts counts health assessments of Releases by verdict.
	HealthVerdicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convoy_health_verdicts_total",
		Help: "Health assessments of Releases, by verdict (Healthy, Progressing, Degraded, Unknown).",
	}, []string{"verdict"})
)

var registerOnce sync.Once

// registerMetrics registers the observer's metrics with metrics.Registry (once).
func registerMetrics() {
	registerOnce.Do(func() { metrics.Registry.MustRegister(DriftChecks, DriftedObjects, HealthVerdicts) })
}
