package desired

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	listers "github.com/kumodo/convoy/generated/listers/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/clusters"
	"github.com/kumodo/convoy/pkg/coordinator"
)

// fakeCluster serves the discovery endpoints of a cluster with ConfigMaps, Namespaces and
// Deployments, and counts GET /version.
func fakeCluster(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var versions atomic.Int64
	docs := map[string]string{
		"/version": `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`,
		"/api":     `{"kind":"APIVersions","versions":["v1"]}`,
		"/apis": `{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apps",` +
			`"versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}}]}`,
		"/api/v1": `{"kind":"APIResourceList","groupVersion":"v1","resources":[` +
			`{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["get","list","create","update","patch","delete"]},` +
			`{"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["get","list"]}]}`,
		"/apis/apps/v1": `{"kind":"APIResourceList","groupVersion":"apps/v1","resources":[` +
			`{"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment","verbs":["get","list","create","update","patch","delete"]}]}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/version" {
			versions.Add(1)
		}
		doc, ok := docs[req.URL.Path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, doc)
	}))
	t.Cleanup(srv.Close)
	return srv, &versions
}

// chartRepo packages the chart files (path -> content, under a directory named after the chart)
// and serves them as a Helm repository.
func chartRepo(t *testing.T, charts map[string]map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, files := range charts {
		src := filepath.Join(t.TempDir(), name)
		for p, content := range files {
			full := filepath.Join(src, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ch, err := loader.LoadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := chartutil.Save(ch, dir); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	index, err := repo.IndexDirectory(dir, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := index.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL
}

// testCharts are the charts of TestRender: web reads values and .Capabilities; hooked has a hook with a bad annotation.
var testCharts = map[string]map[string]string{
	"web": {
		"Chart.yaml":  "apiVersion: v2\nname: web\nversion: 1.2.3\n",
		"values.yaml": "color: blue\nreplicas: 1\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n" +
			"  color: {{ .Values.color | quote }}\n  replicas: {{ .Values.replicas | quote }}\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n" +
			"  apps: {{ .Capabilities.APIVersions.Has \"apps/v1/Deployment\" | quote }}\n" +
			"  batch: {{ .Capabilities.APIVersions.Has \"batch/v1\" | quote }}\n",
		"templates/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n" +
			"  replicas: {{ .Values.replicas }}\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n" +
			"    spec: {containers: [{name: web, image: \"registry.example/web:1\"}]}\n",
	},
	"hooked": {
		"Chart.yaml": "apiVersion: v2\nname: hooked\nversion: 0.1.0\n",
		"templates/job.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pre\n  annotations:\n" +
			"    helm.sh/hook: pre-install\n    convoy.kumodo.io/hook-on-failure: Maybe\n",
	},
}

// testEnv is a Renderer over a fake cluster, a chart repository and listers of namespace shop.
func testEnv(t *testing.T) (*Renderer, string, *atomic.Int64) {
	t.Helper()
	srv, versions := fakeCluster(t)
	repoURL := chartRepo(t, testCharts)
	kubeconfig := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: " + srv.URL + "}\n" +
		"contexts:\n- name: c\n  context: {cluster: c}\ncurrent-context: c\n"
	cms := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	clusterIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	add := func(idx cache.Indexer, obj any) {
		if err := idx.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	add(secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "kubeconfig", UID: "1", ResourceVersion: "1"},
		Data: map[string][]byte{"value": []byte(kubeconfig)}})
	add(secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "secret-values"},
		Data: map[string][]byte{"values.yaml": []byte("replicas: 4\n")}})
	add(cms, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "values"},
		Data: map[string]string{"values.yaml": "color: green\n"}})
	add(clusterIdx, &v1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "target"},
		Spec: v1alpha1.ClusterSpec{KubeConfigSecretRef: &v1alpha1.SecretKeyReference{Name: "kubeconfig", Key: "value"}}})
	cmLister, secretLister := corev1listers.NewConfigMapLister(cms), corev1listers.NewSecretLister(secrets)
	coord, err := coordinator.NewWithOptions(coordinator.Options{ConfigMaps: cmLister, Secrets: secretLister, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return &Renderer{
		Coordinator: coord,
		Clients:     clusters.NewCache(secretLister, clusters.Options{}),
		Clusters:    listers.NewClusterLister(clusterIdx),
		ConfigMaps:  cmLister,
		Secrets:     secretLister,
	}, repoURL, versions
}

func helmRelease(repoURL, chart string, mutate ...func(*v1alpha1.Release)) *v1alpha1.Release {
	rel := &v1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: v1alpha1.ReleaseSpec{
			ClusterRef:      v1alpha1.LocalObjectReference{Name: "target"},
			TargetNamespace: "shop-apps",
			Source:          v1alpha1.ReleaseSource{Helm: &v1alpha1.HelmSource{RepoURL: repoURL, Chart: chart}},
		},
	}
	for _, m := range mutate {
		m(rel)
	}
	return rel
}

// TestRender runs desired.Render end to end: a chart fetched over HTTP, values layers, the fake
// cluster's capabilities and scope, mutations and the render reference, and each failure's reason.
func TestRender(t *testing.T) {
	r, repoURL, versions := testEnv(t)
	withLayers := func(rel *v1alpha1.Release) {
		rel.Spec.ValuesFrom = []v1alpha1.ValuesReference{{Kind: "ConfigMap", Name: "values"}, {Kind: "Secret", Name: "secret-values"}}
	}
	tests := []struct {
		name       string
		rel        *v1alpha1.Release
		wantData   map[string]string
		wantReason string
		transient  bool
		wantErr    string
	}{{
		name:     "chart defaults",
		rel:      helmRelease(repoURL, "web"),
		wantData: map[string]string{"color": "blue", "replicas": "1", "kube": "v1.37.2", "apps": "true", "batch": "false"},
	}, {
		name:     "layers in order",
		rel:      helmRelease(repoURL, "web", withLayers),
		wantData: map[string]string{"color": "green", "replicas": "4"},
	}, {
		name:     "layers and inline values",
		rel:      helmRelease(repoURL, "web", withLayers, func(rel *v1alpha1.Release) { rel.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"color":"red"}`)} }),
		wantData: map[string]string{"color": "red", "replicas": "4"},
	}, {
		name: "missing layer",
		rel: helmRelease(repoURL, "web", func(rel *v1alpha1.Release) {
			rel.Spec.ValuesFrom = []v1alpha1.ValuesReference{{Kind: "Secret", Name: "gone"}}
		}),
		wantReason: v1alpha1.ReasonRenderFailed, wantErr: "valuesFrom[0]: Secret shop/gone key values.yaml not found",
	}, {
		name:       "a bad hook annotation fails the render",
		rel:        helmRelease(repoURL, "hooked"),
		wantReason: v1alpha1.ReasonRenderFailed, wantErr: `ConfigMap pre: annotation convoy.kumodo.io/hook-on-failure: "Maybe"`,
	}, {
		name: "failing mutation",
		rel: helmRelease(repoURL, "web", func(rel *v1alpha1.Release) {
			rel.Spec.Mutations = []v1alpha1.Mutation{{JSONPatch: []v1alpha1.JSONPatchOperation{{Op: "remove", Path: "/spec/nothing"}}}}
		}),
		wantReason: v1alpha1.ReasonRenderFailed, wantErr: "spec.mutations[0]",
	}, {
		name:       "unknown cluster",
		rel:        helmRelease(repoURL, "web", func(rel *v1alpha1.Release) { rel.Spec.ClusterRef.Name = "elsewhere" }),
		wantReason: v1alpha1.ReasonClusterNotReady, transient: true, wantErr: "cluster shop/elsewhere not found",
	}, {
		name:       "no such chart",
		rel:        helmRelease(repoURL, "nope"),
		wantReason: v1alpha1.ReasonFetchFailed, transient: true, wantErr: "chart nope version latest",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := r.Render(context.Background(), tt.rel)
			if tt.wantReason != "" {
				var derr *Error
				if !errors.As(err, &derr) || derr.Reason != tt.wantReason || derr.Transient != tt.transient || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %#v, want reason %s (transient %v) containing %q", err, tt.wantReason, tt.transient, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if res.Revision != "1.2.3" || res.RenderRef == "" || res.Cluster == nil || res.Client == nil {
				t.Fatalf("result %+v", res)
			}
			if len(res.Objects) != 2 {
				t.Fatalf("%d objects, want 2", len(res.Objects))
			}
			for _, obj := range res.Objects {
				if obj.GetNamespace() != "shop-apps" {
					t.Errorf("%s %s namespace %q, want the targetNamespace", obj.GetKind(), obj.GetName(), obj.GetNamespace())
				}
				if obj.GetKind() != "ConfigMap" {
					continue
				}
				for k, v := range tt.wantData {
					if got, _, _ := unstructured.NestedString(obj.Object, "data", k); got != v {
						t.Errorf("data.%s = %q, want %q", k, got, v)
					}
				}
			}
		})
	}
	if n := versions.Load(); n != 1 {
		t.Errorf("GET /version %d times, want 1 (capabilities cached per cluster client)", n)
	}
}

// TestRenderRefStable: the same inputs give the same render reference, from this Renderer and
// from another with its own caches (another replica); a changed values layer gives another.
func TestRenderRefStable(t *testing.T) {
	r, repoURL, _ := testEnv(t)
	other, _, _ := testEnv(t) // its own cluster server, client cache and source cache
	rel := helmRelease(repoURL, "web", func(rel *v1alpha1.Release) {
		rel.Spec.ValuesFrom = []v1alpha1.ValuesReference{{Kind: "ConfigMap", Name: "values"}}
	})
	refs := map[string]string{}
	for name, renderer := range map[string]*Renderer{"first": r, "first again": r, "other replica": other} {
		res, err := renderer.Render(context.Background(), rel)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		refs[name] = res.RenderRef
	}
	if refs["first"] != refs["first again"] || refs["first"] != refs["other replica"] {
		t.Errorf("render references differ for the same inputs: %v", refs)
	}
	changed := rel.DeepCopy()
	changed.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2}`)}
	res, err := r.Render(context.Background(), changed)
	if err != nil {
		t.Fatal(err)
	}
	if res.RenderRef == refs["first"] {
		t.Error("a values change kept the render reference")
	}
}
