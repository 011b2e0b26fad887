package clusters

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// secretStore is an informer indexer with a Secret lister over it, as the controllers use.
type secretStore struct {
	indexer cache.Indexer
	lister  corev1listers.SecretLister
}

func newSecretStore() *secretStore {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	return &secretStore{indexer: idx, lister: corev1listers.NewSecretLister(idx)}
}

func (s *secretStore) put(t *testing.T, ns, name, rv string, data map[string][]byte) {
	t.Helper()
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv, UID: types.UID("uid-" + name)},
		Data:       data,
	}
	if err := s.indexer.Update(sec); err != nil {
		t.Fatal(err)
	}
}

func secretCluster(ns, name, secret, key string) *v1alpha1.Cluster {
	return &v1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ClusterSpec{KubeConfigSecretRef: &v1alpha1.SecretKeyReference{Name: secret, Key: key}},
	}
}

func TestCacheRebuildsOnSecretChange(t *testing.T) {
	store := newSecretStore()
	store.put(t, "team-a", "kc", "1", map[string][]byte{"value": kubeconfig("", "    token: one")})
	c := NewCache(store.lister, Options{QPS: 50, Burst: 100})
	cl := secretCluster("team-a", "prod", "kc", "")

	first, err := c.Get(cl)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if first.Config.BearerToken != "one" || first.Config.QPS != 50 || first.Config.Burst != 100 {
		t.Fatalf("config = token %q qps %v burst %d", first.Config.BearerToken, first.Config.QPS, first.Config.Burst)
	}
	again, err := c.Get(cl)
	if err != nil || again != first {
		t.Fatalf("second Get = %p, %v; want the cached client %p", again, err, first)
	}

	store.put(t, "team-a", "kc", "2", map[string][]byte{"value": kubeconfig("", "    token: two")})
	rebuilt, err := c.Get(cl)
	if err != nil {
		t.Fatalf("Get after update: %v", err)
	}
	if rebuilt == first || rebuilt.Config.BearerToken != "two" {
		t.Fatalf("client not rebuilt after the secret's resourceVersion changed")
	}

	c.Forget("team-a", "prod")
	afterForget, err := c.Get(cl)
	if err != nil || afterForget == rebuilt {
		t.Fatalf("Forget did not drop the client (err %v)", err)
	}

	// A spec change (another key) rebuilds too.
	store.put(t, "team-a", "kc", "3", map[string][]byte{"value": kubeconfig("", "    token: two"), "other": kubeconfig("", "    token: three")})
	other, err := c.Get(secretCluster("team-a", "prod", "kc", "other"))
	if err != nil || other.Config.BearerToken != "three" {
		t.Fatalf("Get with key other = %v, %v", other, err)
	}
}

func TestCacheErrors(t *testing.T) {
	store := newSecretStore()
	store.put(t, "team-a", "kc", "1", map[string][]byte{"value": kubeconfig("", "    token: t")})
	store.put(t, "team-b", "kc-b", "1", map[string][]byte{"value": kubeconfig("", "    token: t")})
	store.put(t, "team-a", "bad", "1", map[string][]byte{"value": kubeconfig("", "    exec: {command: x}")})
	inCluster := &v1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "here"},
		Spec: v1alpha1.ClusterSpec{InCluster: true}}

	tests := []struct {
		name    string
		opts    Options
		cluster *v1alpha1.Cluster
		wantErr string
	}{
		{name: "missing secret", cluster: secretCluster("team-a", "x", "nope", ""), wantErr: "secret team-a/nope not found"},
		{name: "other namespace's secret", cluster: secretCluster("team-a", "x", "kc-b", ""), wantErr: "secret team-a/kc-b not found"},
		{name: "missing key", cluster: secretCluster("team-a", "x", "kc", "kubeconfig"), wantErr: "key kubeconfig missing in secret team-a/kc"},
		{name: "exec refused", cluster: secretCluster("team-a", "x", "bad", ""), wantErr: "exec plugins are not allowed"},
		{name: "in-cluster refused", cluster: inCluster, wantErr: "inCluster targets are not enabled"},
		{name: "neither", cluster: &v1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "x"}},
			wantErr: "neither inCluster nor kubeConfigSecretRef"},
		{name: "in-cluster allowed", opts: Options{InCluster: &rest.Config{Host: "https://10.0.0.1"}}, cluster: inCluster},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache(store.lister, tt.opts)
			got, err := c.Get(tt.cluster)
			if tt.wantErr == "" {
				if err != nil || got == nil {
					t.Fatalf("Get = %v, %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestCacheDropsClientWhenSecretBreaks(t *testing.T) {
	store := newSecretStore()
	store.put(t, "ns", "kc", "1", map[string][]byte{"value": kubeconfig("", "    token: t")})
	c := NewCache(store.lister, Options{})
	cl := secretCluster("ns", "c", "kc", "")
	if _, err := c.Get(cl); err != nil {
		t.Fatal(err)
	}
	store.put(t, "ns", "kc", "2", map[string][]byte{"value": []byte("{broken")})
	if _, err := c.Get(cl); err == nil {
		t.Fatal("Get with a broken kubeconfig succeeded")
	}
	c.mu.Lock()
	_, cached := c.entries["ns/c"]
	c.mu.Unlock()
	if cached {
		t.Fatal("the stale client is still cached")
	}
}

func TestReady(t *testing.T) {
	tests := []struct {
		name  string
		conds []metav1.Condition
		want  bool
	}{
		{name: "no conditions"},
		{name: "ready", conds: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue}}, want: true},
		{name: "not ready", conds: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := &v1alpha1.Cluster{Status: v1alpha1.ClusterStatus{Conditions: tt.conds}}
			if got := Ready(cl); got != tt.want {
				t.Errorf("Ready = %v, want %v", got, tt.want)
			}
		})
	}
}

// fakeAPIServer serves /version and a minimal discovery document (core v1 and apps/v1).
func fakeAPIServer(t *testing.T) *httptest.Server {
	t.Helper()
	docs := map[string]string{
		"/version": `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`,
		"/api":     `{"kind":"APIVersions","versions":["v1"]}`,
		"/api/v1": `{"kind":"APIResourceList","groupVersion":"v1","resources":[
			{"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["get"]},
			{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["get"]}]}`,
		"/apis": `{"kind":"APIGroupList","groups":[{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],
			"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}}]}`,
		"/apis/apps/v1": `{"kind":"APIResourceList","groupVersion":"apps/v1","resources":[
			{"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment","verbs":["get"]}]}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestProbeAndScope(t *testing.T) {
	srv := fakeAPIServer(t)
	c, err := NewClient(&rest.Config{Host: srv.URL, BearerToken: "t"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Probe(context.Background())
	if err != nil || v != "v1.37.2" {
		t.Fatalf("Probe = %q, %v", v, err)
	}

	tests := []struct {
		gvk                   schema.GroupVersionKind
		wantNamespaced, known bool
	}{
		{gvk: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, known: true},
		{gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, wantNamespaced: true, known: true},
		{gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, wantNamespaced: true, known: true},
		{gvk: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}},
	}
	for _, tt := range tests {
		t.Run(tt.gvk.Kind, func(t *testing.T) {
			namespaced, known := c.Scope(tt.gvk)
			if namespaced != tt.wantNamespaced || known != tt.known {
				t.Errorf("Scope = %v, %v; want %v, %v", namespaced, known, tt.wantNamespaced, tt.known)
			}
		})
	}

	bad, err := NewClient(&rest.Config{Host: srv.URL, BearerToken: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Probe(context.Background()); err == nil {
		t.Fatal("Probe with a rejected token succeeded")
	}
}

func TestForServiceAccount(t *testing.T) {
	c, err := NewClient(&rest.Config{Host: "https://127.0.0.1:1", BearerToken: "t"})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := c.ForServiceAccount("shop", "deployer")
	if err != nil {
		t.Fatal(err)
	}
	if got := sa.Config.Impersonate.UserName; got != "system:serviceaccount:shop:deployer" {
		t.Errorf("impersonated user = %q", got)
	}
	if sa.Mapper != c.Mapper || sa.Discovery != c.Discovery {
		t.Error("impersonating client does not share discovery")
	}
	if c.Config.Impersonate.UserName != "" {
		t.Error("the parent config was mutated")
	}
	again, _ := c.ForServiceAccount("shop", "deployer")
	if again != sa {
		t.Error("impersonating client not reused")
	}
}

// TestProbeReadyz: an API server that answers /version but whose /readyz fails (its etcd is down)
// is not ready, and the failed checks are named; a /readyz the credentials may not read is no verdict.
func TestProbeReadyz(t *testing.T) {
	tests := []struct {
		name    string
		code    int
		body    string
		wantErr string
	}{
		{name: "ready", code: http.StatusOK, body: "ok"},
		{name: "etcd down", code: http.StatusInternalServerError,
			body:    "[+]ping ok\n[-]etcd failed: reason withheld\n[-]etcd-readiness failed: reason withheld\nreadyz check failed\n",
			wantErr: "not ready: etcd failed: reason withheld; etcd-readiness failed: reason withheld"},
		{name: "forbidden", code: http.StatusForbidden, body: `{"kind":"Status","code":403}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/version" {
					fmt.Fprint(w, `{"gitVersion":"v1.37.2"}`)
					return
				}
				w.WriteHeader(tt.code)
				fmt.Fprint(w, tt.body)
			}))
			defer srv.Close()
			c, err := NewClient(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Probe(context.Background())
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Probe error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
