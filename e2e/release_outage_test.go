package e2e

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

// outageTimeout bounds noticing the outage and recovering from it: a few probe intervals
// plus the Release's (shortened) backoff.
const outageTimeout = 2 * time.Minute

// TestClusterOutage: while the target's API server is down, the Cluster turns not Ready and
// the Release reports ClusterNotReady; once it is back, the Release recovers to Applied on its
// own. Not parallel: it stops a shared API server.
func TestClusterOutage(t *testing.T) {
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "outage-manifests", map[string]string{
		"all.yaml": framework.ConfigMapDoc("settings", map[string]string{"k": "v"}, nil),
	})
	env.CreateConfigMapRelease(t, ns, "outage", "fault", "outage-manifests",
		framework.WithInterval(3*time.Second), framework.WithBackoff(time.Second, 4*time.Second))
	env.WaitApplied(t, ns, "outage", convoyv1alpha1.ReasonApplied, applyTimeout, nil)

	if err := env.Fault.Stop(); err != nil {
		t.Fatalf("stop the fault API server: %v", err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			if err := env.Fault.Start(); err != nil {
				t.Errorf("restart the fault API server after the test: %v", err)
			}
		}
	})
	waitClusterReady(t, ns, "fault", metav1.ConditionFalse)
	env.WaitApplied(t, ns, "outage", convoyv1alpha1.ReasonClusterNotReady, outageTimeout, nil)

	if err := env.Fault.Start(); err != nil {
		t.Fatalf("restart the fault API server: %v", err)
	}
	restarted = true
	waitClusterReady(t, ns, "fault", metav1.ConditionTrue)
	env.WaitApplied(t, ns, "outage", convoyv1alpha1.ReasonApplied, outageTimeout, nil)
	if _, err := configMapOnTarget(env.Fault, ns, "settings"); err != nil {
		t.Errorf("ConfigMap settings after the outage: %v", err)
	}
}

// waitClusterReady waits until the Cluster's Ready condition has status want.
func waitClusterReady(t *testing.T, ns, name string, want metav1.ConditionStatus) {
	t.Helper()
	framework.Eventually(t, outageTimeout, func() (bool, string) {
		cl, err := env.Convoy().CoreV1alpha1().Clusters(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Sprintf("get Cluster %s/%s: %v", ns, name, err)
		}
		c := meta.FindStatusCondition(cl.Status.Conditions, convoyv1alpha1.ConditionReady)
		if c == nil || c.Status != want {
			return false, fmt.Sprintf("Cluster %s/%s Ready = %+v, want %s", ns, name, c, want)
		}
		return true, ""
	})
}
