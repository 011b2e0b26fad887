package manifests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/kumodo/convoy/e2e/framework"
)

// fieldManager is the field manager of every apply of this package.
const fieldManager = "convoy-manifests-check"

// repoDir returns a directory of the repository: the test runs in e2e/manifests.
func repoDir(t *testing.T, elem ...string) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatalf("repository root: %v", err)
	}
	return filepath.Join(append([]string{root}, elem...)...)
}

// build runs kustomize on the kustomization in dir, as `kubectl apply -k dir` would.
func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		// Through JSON: Map's numbers are ints, which unstructured objects do not take.
		data, err := r.MarshalJSON()
		if err != nil {
			t.Fatalf("kustomize build %s: resource %s: %v", dir, r.CurId(), err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			t.Fatalf("kustomize build %s: resource %s: %v", dir, r.CurId(), err)
		}
		objs = append(objs, u)
	}
	if len(objs) == 0 {
		t.Fatalf("kustomize build %s: no objects", dir)
	}
	return objs
}

// decodeFile reads the YAML documents of a plain manifest file.
func decodeFile(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode %s: %v", path, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

// applier sends objects to the API server with server-side apply.
type applier struct {
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier() *applier {
	return &applier{mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(env.Mgmt.Kube.Discovery()))}
}

// apply applies obj (dryRun=All when dryRun) and returns the API server's answer: the object as
// it would be stored, validated and defaulted.
func (a *applier) apply(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	gvk := obj.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("REST mapping of %s: %w", gvk, err)
	}
	opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	res := env.Mgmt.Dynamic.Resource(m.Resource)
	if ns := obj.GetNamespace(); ns != "" {
		return res.Namespace(ns).Apply(ctx, obj.GetName(), obj, opts)
	}
	return res.Apply(ctx, obj.GetName(), obj, opts)
}

// dryRunAll dry-runs every object and fails the test for each one the API server rejects. It
// returns the server's answers by id (kind/namespace/name).
func dryRunAll(t *testing.T, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitNamespaces(t, ctx, objs)
	a := newApplier()
	got := map[string]*unstructured.Unstructured{}
	for _, obj := range objs {
		out, err := a.apply(ctx, obj, true)
		if err != nil {
			t.Errorf("the API server rejects %s: %v", id(obj), err)
			continue
		}
		got[id(out)] = out
	}
	return got
}

// waitNamespaces waits until the namespaces of objs exist: the API server creates kube-system
// shortly after it is ready.
func waitNamespaces(t *testing.T, ctx context.Context, objs []*unstructured.Unstructured) {
	t.Helper()
	seen := map[string]bool{}
	for _, obj := range objs {
		ns := obj.GetNamespace()
		if ns == "" || seen[ns] {
			continue
		}
		seen[ns] = true
		framework.Eventually(t, 30*time.Second, func() (bool, string) {
			_, err := env.Mgmt.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, "namespace " + ns + " does not exist"
			}
			return err == nil, fmt.Sprintf("get namespace %s: %v", ns, err)
		})
	}
}

// id names an object as kind/namespace/name (kind/name when cluster-scoped).
func id(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return obj.GetKind() + "/" + ns + "/" + obj.GetName()
	}
	return obj.GetKind() + "/" + obj.GetName()
}

// typed converts the server's answer to a typed object.
func typed[T any](t *testing.T, objs map[string]*unstructured.Unstructured, key string) *T {
	t.Helper()
	u, ok := objs[key]
	if !ok {
		t.Fatalf("no %s among the applied objects", key)
	}
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		t.Fatalf("convert %s: %v", key, err)
	}
	return out
}

// byKind returns the objects of a kind.
func byKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}
