package observer

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	listers "github.com/kumodo/convoy/generated/listers/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/clusters"
	"github.com/kumodo/convoy/pkg/coordinator"
	"github.com/kumodo/convoy/pkg/desired"
	"github.com/kumodo/convoy/pkg/render"
	"github.com/kumodo/convoy/pkg/renderstore"
)

// fakeDiscovery serves the discovery documents of a cluster that has ConfigMaps.
func fakeDiscovery(t *testing.T) string {
	t.Helper()
	docs := map[string]string{
		"/version": `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`,
		"/api":     `{"kind":"APIVersions","versions":["v1"]}`,
		"/apis":    `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`,
		"/api/v1": `{"kind":"APIResourceList","groupVersion":"v1","resources":[` +
			`{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["get","list","create","update","patch","delete"]}]}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		doc, ok := docs[req.URL.Path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, doc)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// configMapManifest is a ConfigMap manifest named settings holding version v.
func configMapManifest(v string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  version: " + v + "\n"
}

// driftEnv is an observer Controller whose renderer renders the ConfigMap source "src" of
// namespace shop (version v2) for the fake cluster "target".
func driftEnv(t *testing.T, store renderstore.Store) *Controller {
	t.Helper()
	kubeconfig := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: " + fakeDiscovery(t) + "}\n" +
		"contexts:\n- name: c\n  context: {cluster: c}\ncurrent-context: c\n"
	cms := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	clusterIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, add := range []struct {
		idx cache.Indexer
		obj any
	}{
		{secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "kubeconfig", UID: "1", ResourceVersion: "1"},
			Data: map[string][]byte{"value": []byte(kubeconfig)}}},
		{cms, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "src", ResourceVersion: "7"},
			Data: map[string]string{"all.yaml": configMapManifest("v2")}}},
		{clusterIdx, &v1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "target"},
			Spec: v1alpha1.ClusterSpec{KubeConfigSecretRef: &v1alpha1.SecretKeyReference{Name: "kubeconfig", Key: "value"}}}},
	} {
		if err := add.idx.Add(add.obj); err != nil {
			t.Fatal(err)
		}
	}
	cmLister, secretLister := corev1listers.NewConfigMapLister(cms), corev1listers.NewSecretLister(secrets)
	coord, err := coordinator.NewWithOptions(coordinator.Options{ConfigMaps: cmLister, Secrets: secretLister, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return &Controller{
		renderer: &desired.Renderer{
			Coordinator: coord,
			Clients:     clusters.NewCache(secretLister, clusters.Options{}),
			Clusters:    listers.NewClusterLister(clusterIdx),
			ConfigMaps:  cmLister,
			Secrets:     secretLister,
		},
		config:     Config{Store: store},
		notApplied: workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](notAppliedRecheck, notAppliedRecheckMax),
	}
}

// storedRender builds a render of the settings ConfigMap at version v, with a hook when hook is set.
func storedRender(t *testing.T, v string, hook bool) *renderstore.Render {
	t.Helper()
	objs := []*unstructured.Unstructured{{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings"},
		"data":     map[string]any{"version": v},
	}}}
	if hook {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "pre", "annotations": map[string]any{v1alpha1.HookAnnotation: "PreSync"}},
		}})
	}
	ref, err := render.RenderRef(objs)
	if err != nil {
		t.Fatal(err)
	}
	return &renderstore.Render{RenderRef: ref, Revision: v, Objects: objs}
}

// TestRenderDesired: the pin first (fresh render when it names it, else the store), then the last
// healthy render of a RolledBack rollout from the store, else the fresh render; no store, a missing
// render and a broken store leave the drift undetermined with their own reasons.
func TestRenderDesired(t *testing.T) {
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "shop", Name: "web"}
	v1, v3 := storedRender(t, "v1", true), storedRender(t, "v3", false)
	missing := storedRender(t, "v9", false).RenderRef

	store, err := renderstore.Open("file://" + t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*renderstore.Render{v1, v3} {
		if err := store.PutRender(ctx, key, r); err != nil {
			t.Fatal(err)
		}
	}
	// A store whose directory is a regular file: every read fails, as with a lost volume.
	brokenDir := filepath.Join(t.TempDir(), "broken")
	if err := os.WriteFile(brokenDir, []byte("down"), 0o600); err != nil {
		t.Fatal(err)
	}
	broken, err := renderstore.Open("file://" + brokenDir)
	if err != nil {
		t.Fatal(err)
	}
	fresh := driftEnv(t, nil).renderReleaseObjects(ctx, newRelease())
	if fresh.undetermined != "" {
		t.Fatalf("rendering the source: %s: %s", fresh.undetermined, fresh.message)
	}

	pin := func(ref string) func(*v1alpha1.Release) {
		return func(r *v1alpha1.Release) { r.Spec.Pin = &v1alpha1.Pin{RenderRef: ref} }
	}
	rolledBack := func(healthy string) func(*v1alpha1.Release) {
		return func(r *v1alpha1.Release) {
			r.Status.Rollout = &v1alpha1.RolloutStatus{Phase: v1alpha1.ReasonRolledBack}
			if healthy != "" {
				r.Status.LastHealthy = &v1alpha1.HealthyRecord{RenderRef: healthy}
			}
		}
	}
	tests := []struct {
		name         string
		store        renderstore.Store
		mutate       []func(*v1alpha1.Release)
		wantRef      string
		wantVersion  string
		undetermined string
		message      string
	}{
		{name: "source render", wantRef: fresh.renderRef, wantVersion: "v2"},
		{name: "source render, store configured", store: store, wantRef: fresh.renderRef, wantVersion: "v2"},
		{name: "pin of the source render needs no store", mutate: []func(*v1alpha1.Release){pin(fresh.renderRef)}, wantRef: fresh.renderRef, wantVersion: "v2"},
		{name: "pin from the store, hooks left out", store: store, mutate: []func(*v1alpha1.Release){pin(v1.RenderRef)}, wantRef: v1.RenderRef, wantVersion: "v1"},
		{name: "pin without a store", mutate: []func(*v1alpha1.Release){pin(v1.RenderRef)},
			undetermined: ReasonNoRenderStore, message: "pinned render " + render.ShortRef(v1.RenderRef)},
		{name: "pin not stored", store: store, mutate: []func(*v1alpha1.Release){pin(missing)},
			undetermined: ReasonRenderNotStored, message: "is not in the render store"},
		{name: "pin with the store down", store: broken, mutate: []func(*v1alpha1.Release){pin(v1.RenderRef)},
			undetermined: v1alpha1.ReasonStoreUnavailable, message: "reading the pinned render"},
		{name: "rolled back to the last healthy render", store: store, mutate: []func(*v1alpha1.Release){rolledBack(v3.RenderRef)},
			wantRef: v3.RenderRef, wantVersion: "v3"},
		{name: "rolled back without a store", mutate: []func(*v1alpha1.Release){rolledBack(v3.RenderRef)},
			undetermined: ReasonNoRenderStore, message: "last healthy render"},
		{name: "rolled back, last healthy not stored", store: store, mutate: []func(*v1alpha1.Release){rolledBack(missing)},
			undetermined: ReasonRenderNotStored},
		{name: "rolled back, no last healthy render", store: store, mutate: []func(*v1alpha1.Release){rolledBack("")},
			undetermined: ReasonRenderNotStored, message: "names no render"},
		{name: "the pin wins over the rollback", store: store, mutate: []func(*v1alpha1.Release){rolledBack(v3.RenderRef), pin(v1.RenderRef)},
			wantRef: v1.RenderRef, wantVersion: "v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := driftEnv(t, tt.store)
			got := c.renderDesired(ctx, newRelease(tt.mutate...))
			if got.undetermined != tt.undetermined || !strings.Contains(got.message, tt.message) {
				t.Fatalf("renderDesired = %s %q, want %q with %q", got.undetermined, got.message, tt.undetermined, tt.message)
			}
			if tt.undetermined != "" {
				return
			}
			if got.renderRef != tt.wantRef || got.client == nil {
				t.Fatalf("renderDesired = render %s (client %v), want %s", got.renderRef, got.client, tt.wantRef)
			}
			if len(got.objects) != 1 || got.objects[0].GetName() != "settings" {
				t.Fatalf("objects = %v, want the settings ConfigMap only", got.objects)
			}
			if v, _, _ := unstructured.NestedString(got.objects[0].Object, "data", "version"); v != tt.wantVersion {
				t.Errorf("settings version = %q, want %q", v, tt.wantVersion)
			}
		})
	}
}

// newRelease is Release shop/web rendering ConfigMap src onto Cluster target.
func newRelease(mutate ...func(*v1alpha1.Release)) *v1alpha1.Release {
	rel := &v1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Generation: 1},
		Spec: v1alpha1.ReleaseSpec{
			ClusterRef:      v1alpha1.LocalObjectReference{Name: "target"},
			TargetNamespace: "shop-apps",
			ContentType:     v1alpha1.ContentTypeManifests,
			Source:          v1alpha1.ReleaseSource{ConfigMapRef: &v1alpha1.LocalObjectReference{Name: "src"}},
		},
	}
	for _, m := range mutate {
		m(rel)
	}
	return rel
}

// TestCheckApplied: a desired render that status.lastSuccessful does not name is NotApplied
// (Unknown, no objects read); an undetermined desired state is left to checkDrift.
func TestCheckApplied(t *testing.T) {
	const ref, older = "sha256:aaaaaaaaaaaaaaaa", "sha256:bbbbbbbbbbbbbbbb"
	tests := []struct {
		name        string
		last        *v1alpha1.RenderRecord
		want        desiredState
		wantApplied bool
		message     string
	}{
		{name: "never applied", want: desiredState{renderRef: ref}, message: "render aaaaaaaaaaaa is not applied yet"},
		{name: "another render applied", last: &v1alpha1.RenderRecord{RenderRef: older}, want: desiredState{renderRef: ref},
			message: "render aaaaaaaaaaaa is not applied yet (the last applied render is bbbbbbbbbbbb)"},
		{name: "applied", last: &v1alpha1.RenderRecord{RenderRef: ref}, want: desiredState{renderRef: ref}, wantApplied: true},
		{name: "undetermined", want: desiredState{undetermined: ReasonNoRenderStore}, wantApplied: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel := newRelease(func(r *v1alpha1.Release) { r.Status.LastSuccessful = tt.last })
			res, applied := checkApplied(rel, tt.want)
			if applied != tt.wantApplied {
				t.Fatalf("applied = %v, want %v", applied, tt.wantApplied)
			}
			if applied {
				return
			}
			if res.status != metav1.ConditionUnknown || res.reason != ReasonNotApplied || res.message != tt.message || res.renderRef != ref {
				t.Errorf("result = %+v, want Unknown %s %q for %s", res, ReasonNotApplied, tt.message, ref)
			}
		})
	}
}

// TestNotAppliedDelay: the recheck of a render not applied yet starts at notAppliedRecheck,
// doubles up to notAppliedRecheckMax, never exceeds a shorter interval, and starts over after
// Forget.
func TestNotAppliedDelay(t *testing.T) {
	c := driftEnv(t, nil)
	key := cache.ObjectName{Namespace: "shop", Name: "web"}
	rel := newRelease()
	var got []time.Duration
	for range 6 {
		got = append(got, c.notAppliedDelay(key, rel))
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 2 * time.Minute, 2 * time.Minute}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("delays = %v, want %v", got, want)
	}
	c.notApplied.Forget(key)
	short := newRelease(func(r *v1alpha1.Release) { r.Spec.SyncPolicy.Interval = &metav1.Duration{Duration: 2 * time.Second} })
	if d := c.notAppliedDelay(key, short); d != 2*time.Second {
		t.Errorf("delay with a 2s interval = %v, want 2s", d)
	}
	zero := newRelease(func(r *v1alpha1.Release) { r.Spec.SyncPolicy.Interval = &metav1.Duration{} })
	if d := c.notAppliedDelay(key, zero); d != 20*time.Second {
		t.Errorf("delay with interval 0 (no periodic checks) = %v, want 20s", d)
	}
}
