package metrics

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestRESTClientMetrics sends requests through a real clientset to a fake API server and checks
// what the request counters saw, by verb, host and code, and which ones were dry runs.
func TestRESTClientMetrics(t *testing.T) {
	Register()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/namespaces/ns/configmaps/missing" {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns"}}`))
	}))
	defer srv.Close()
	host := mustHost(t, srv.URL)
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cms := kube.CoreV1().ConfigMaps("ns")
	if _, err := cms.Get(ctx, "a", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "missing", metav1.GetOptions{}); err == nil {
		t.Fatal("GET of a missing ConfigMap succeeded")
	}
	patch := []byte(`{"data":{"k":"v"}}`)
	if _, err := cms.Patch(ctx, "a", types.MergePatchType, patch, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Patch(ctx, "a", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		verb, code string
		want       float64
	}{
		{"GET", "200", 1},
		{"GET", "404", 1},
		{"PATCH", "200", 2},
		{"POST", "200", 1},
		{"DELETE", "200", 0},
	} {
		got := counterValue(t, "convoy_rest_client_requests_total", map[string]string{"verb": tc.verb, "host": host, "code": tc.code})
		if got != tc.want {
			t.Errorf("requests{verb=%s,code=%s} = %v, want %v", tc.verb, tc.code, got, tc.want)
		}
	}
	for verb, want := range map[string]float64{"PATCH": 1, "GET": 0, "POST": 0} {
		if got := counterValue(t, "convoy_rest_client_dry_run_requests_total", map[string]string{"verb": verb, "host": host}); got != want {
			t.Errorf("dry runs{verb=%s} = %v, want %v", verb, got, want)
		}
	}
}

// counterValue reads a counter with exactly these labels from Registry, as /metrics serves it; 0
// when it has no such series.
func counterValue(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if maps.Equal(got, labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func mustHost(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
