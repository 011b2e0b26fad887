package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

// Timeouts of the waits in the tests: generous, since the machine is shared; no test asserts
// a duration.
const (
	applyTimeout = 90 * time.Second
	quietPeriod  = 3 * time.Second
)

// ctx is the context of the tests' API calls.
var ctx = context.Background()

// deleteRelease deletes a Release.
func deleteRelease(t *testing.T, ns, name string) {
	t.Helper()
	if err := env.Convoy().CoreV1alpha1().Releases(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete Release %s/%s: %v", ns, name, err)
	}
}

// appliedStatus returns the status of the Applied condition, or "" without one.
func appliedStatus(r *convoyv1alpha1.Release) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionApplied); c != nil {
		return c.Status
	}
	return ""
}

// renderChanged accepts a Release whose last successful render is not old.
func renderChanged(old string) func(*convoyv1alpha1.Release) (bool, string) {
	return func(r *convoyv1alpha1.Release) (bool, string) {
		if ref := framework.LastSuccessfulRef(r); ref == "" || ref == old {
			return false, fmt.Sprintf("lastSuccessful.renderRef is still %q", ref)
		}
		return true, ""
	}
}

// configMapOnTarget reads a ConfigMap from a target cluster.
func configMapOnTarget(target *framework.APIServer, ns, name string) (*corev1.ConfigMap, error) {
	return target.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

// checkManaged reports what is wrong with an applied object's convoy label and annotation.
func checkManaged(obj metav1.Object, ns, release string) string {
	var problems []string
	if v := obj.GetLabels()[convoyv1alpha1.ManagedByLabel]; v != convoyv1alpha1.ManagedByValue {
		problems = append(problems, fmt.Sprintf("label %s=%q", convoyv1alpha1.ManagedByLabel, v))
	}
	if v := obj.GetAnnotations()[convoyv1alpha1.OwnerAnnotation]; v != ns+"/"+release {
		problems = append(problems, fmt.Sprintf("annotation %s=%q, want %q", convoyv1alpha1.OwnerAnnotation, v, ns+"/"+release))
	}
	return strings.Join(problems, "; ")
}

// deploymentDoc is a Deployment manifest of replicas pods of one container.
func deploymentDoc(name string, replicas int) string {
	labels := map[string]any{"app": name}
	return framework.Doc(map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{
					map[string]any{"name": "app", "image": "registry.example/" + name + ":1"},
				}},
			},
		},
	})
}

// serviceDoc is a Service manifest of the given type on port 80.
func serviceDoc(name, serviceType string) string {
	return framework.Doc(map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"type":     serviceType,
			"selector": map[string]any{"app": name},
			"ports":    []any{map[string]any{"port": 80, "targetPort": 8080}},
		},
	})
}
