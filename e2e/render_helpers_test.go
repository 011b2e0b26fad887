package e2e

import (
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

// testChartsDir holds the project's own test charts.
const testChartsDir = "testdata/charts"

// loadTestChart loads one of the project's test charts.
func loadTestChart(t *testing.T, name string) *chart.Chart {
	t.Helper()
	ch, err := loader.LoadDir(filepath.Join(testChartsDir, name))
	if err != nil {
		t.Fatalf("load test chart %s: %v", name, err)
	}
	return ch
}

// chartVersion returns ch loaded again (charts are mutable trees) with its version set to v.
func chartVersion(t *testing.T, name, v string) *chart.Chart {
	t.Helper()
	ch := loadTestChart(t, name)
	ch.Metadata.Version = v
	return ch
}

// createGitRelease creates a Release of path in the git repository at url, at ref.
func createGitRelease(t *testing.T, ns, name, cluster, url string, ref convoyv1alpha1.GitRef, path string, ct convoyv1alpha1.ContentType, opts ...framework.ReleaseOption) {
	t.Helper()
	r := framework.NewRelease(ns, name, cluster)
	r.Spec.Source.Git = &convoyv1alpha1.GitSource{URL: url, Ref: ref, Path: path}
	r.Spec.ContentType = ct
	env.CreateRelease(t, r, opts...)
}

// withMutations sets spec.mutations.
func withMutations(ms ...convoyv1alpha1.Mutation) framework.ReleaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.Mutations = ms }
}

// createValuesConfigMap creates a ConfigMap on mgmt holding values under key.
func createValuesConfigMap(t *testing.T, ns, name, key, values string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{key: values}}
	if _, err := env.Mgmt.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create values ConfigMap %s/%s: %v", ns, name, err)
	}
}

// createValuesSecret creates a Secret on mgmt holding values under key.
func createValuesSecret(t *testing.T, ns, name, key, values string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{key: []byte(values)}}
	if _, err := env.Mgmt.Kube.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create values Secret %s/%s: %v", ns, name, err)
	}
}

// revisionIs accepts a Release whose lastAttempted and lastSuccessful revisions are want.
func revisionIs(want string) func(*convoyv1alpha1.Release) (bool, string) {
	return func(r *convoyv1alpha1.Release) (bool, string) {
		if r.Status.LastAttempted == nil || r.Status.LastAttempted.Revision != want {
			return false, fmt.Sprintf("lastAttempted %+v, want revision %s", r.Status.LastAttempted, want)
		}
		if r.Status.LastSuccessful == nil || r.Status.LastSuccessful.Revision != want {
			return false, fmt.Sprintf("lastSuccessful %+v, want revision %s", r.Status.LastSuccessful, want)
		}
		return true, ""
	}
}

// configMapData waits until ConfigMap ns/name on target exists and accept agrees with its data.
func configMapData(t *testing.T, target *framework.APIServer, ns, name string, accept func(map[string]string) string) *corev1.ConfigMap {
	t.Helper()
	var out *corev1.ConfigMap
	framework.Eventually(t, applyTimeout, func() (bool, string) {
		cm, err := configMapOnTarget(target, ns, name)
		if err != nil {
			return false, fmt.Sprintf("get ConfigMap %s/%s on %s: %v", ns, name, target.Name, err)
		}
		if problem := accept(cm.Data); problem != "" {
			return false, fmt.Sprintf("ConfigMap %s/%s on %s: %s (data %v)", ns, name, target.Name, problem, cm.Data)
		}
		out = cm
		return true, ""
	})
	return out
}

// dataIs is an accept function for configMapData: every key of want has its value.
func dataIs(want map[string]string) func(map[string]string) string {
	return func(got map[string]string) string {
		var problems []string
		for k, v := range want {
			if got[k] != v {
				problems = append(problems, fmt.Sprintf("%s=%q, want %q", k, got[k], v))
			}
		}
		return strings.Join(problems, "; ")
	}
}

// realChartsDir returns $CONVOY_REAL_CHARTS or skips the test with a clear message.
func realChartsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CONVOY_REAL_CHARTS")
	if dir == "" {
		t.Skip("CONVOY_REAL_CHARTS is not set: the real charts suite needs a directory of third-party charts (the Makefile sets it to ../shared/testdata/charts when present)")
	}
	return dir
}

// allowClusterScoped sets spec.allowClusterScoped on the Cluster ns/name.
func allowClusterScoped(t *testing.T, ns, name string) {
	t.Helper()
	clusters := env.Convoy().CoreV1alpha1().Clusters(ns)
	cl, err := clusters.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Cluster %s/%s: %v", ns, name, err)
	}
	cl.Spec.AllowClusterScoped = true
	if _, err := clusters.Update(ctx, cl, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("allow cluster-scoped objects on Cluster %s/%s: %v", ns, name, err)
	}
}

// unstructuredInt reads an integer field of an unstructured object.
func unstructuredInt(obj map[string]any, fields ...string) (int64, bool, error) {
	return unstructured.NestedInt64(obj, fields...)
}

// bigChart is a chart named big whose archive is larger than the controller's download limit:
// a file of random (incompressible) bytes makes it so.
func bigChart(t *testing.T) *chart.Chart {
	t.Helper()
	blob := make([]byte, framework.ControllerMaxDownloadBytes+512<<10)
	if _, err := rand.Read(blob); err != nil {
		t.Fatal(err)
	}
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "big", Version: "0.1.0", Type: "application"},
		Templates: []*chart.File{{Name: "templates/configmap.yaml", Data: []byte(
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  a: b\n")}},
		Files: []*chart.File{{Name: "files/blob.bin", Data: blob}},
	}
}

// closedURL returns an http URL on 127.0.0.1 where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}
