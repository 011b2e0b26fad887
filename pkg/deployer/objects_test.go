package deployer

import (
	"errors"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// obj builds an unstructured object; fields are merged at the top level.
func obj(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	md := map[string]any{"name": name}
	if ns != "" {
		md["namespace"] = ns
	}
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}
	for k, v := range fields {
		o[k] = v
	}
	return &unstructured.Unstructured{Object: o}
}

func withAnnotations(o *unstructured.Unstructured, kv ...string) *unstructured.Unstructured {
	a := o.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i]] = kv[i+1]
	}
	o.SetAnnotations(a)
	return o
}

func TestCheckPolicy(t *testing.T) {
	tests := []struct {
		name       string
		kind       string
		namespace  string
		namespaced bool
		opts       Options
		wantMsg    string // empty: allowed
	}{
		{name: "target namespace", kind: "ConfigMap", namespace: "shop", namespaced: true, opts: Options{TargetNamespace: "shop"}},
		{name: "other namespace refused", kind: "ConfigMap", namespace: "kube-system", namespaced: true,
			opts: Options{TargetNamespace: "shop"}, wantMsg: "namespace kube-system is neither the target namespace shop nor in Cluster spec.allowedNamespaces"},
		{name: "allowed namespace", kind: "ConfigMap", namespace: "monitoring", namespaced: true,
			opts: Options{TargetNamespace: "shop", AllowedNamespaces: []string{"monitoring"}}},
		{name: "any namespace", kind: "ConfigMap", namespace: "kube-system", namespaced: true,
			opts: Options{TargetNamespace: "shop", AllowedNamespaces: []string{"*"}}},
		{name: "cluster-scoped refused", kind: "ClusterRole", namespaced: false,
			opts: Options{TargetNamespace: "shop", AllowedNamespaces: []string{"*"}}, wantMsg: "cluster-scoped ClusterRole/x needs Cluster spec.allowClusterScoped"},
		{name: "namespace object is cluster-scoped", kind: "Namespace", namespaced: false,
			opts: Options{TargetNamespace: "shop"}, wantMsg: "cluster-scoped Namespace/x needs Cluster spec.allowClusterScoped"},
		{name: "cluster-scoped allowed", kind: "ClusterRole", namespaced: false, opts: Options{TargetNamespace: "shop", AllowClusterScoped: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkPolicy("REF", tt.kind, "x", tt.namespace, tt.namespaced, tt.opts)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("checkPolicy = %v, want nil", err)
				}
				return
			}
			var rej *RejectedError
			if !errors.As(err, &rej) || rej.Object != "REF" || rej.Message != tt.wantMsg {
				t.Fatalf("checkPolicy = %#v, want RejectedError %q", err, tt.wantMsg)
			}
		})
	}
}

func TestCheckOwner(t *testing.T) {
	cm := func(owner string) *unstructured.Unstructured {
		o := obj("v1", "ConfigMap", "shop", "cfg", nil)
		if owner != "" {
			withAnnotations(o, v1alpha1.OwnerAnnotation, owner)
		}
		return o
	}
	tests := []struct {
		name      string
		live      *unstructured.Unstructured
		wantOwner string // empty: no conflict
	}{
		{name: "missing object"},
		{name: "no annotation: adopted", live: cm("")},
		{name: "same release", live: cm("team-a/shop")},
		{name: "other release", live: cm("team-b/shop"), wantOwner: "team-b/shop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkOwner("ConfigMap shop/cfg", tt.live, "team-a/shop")
			if tt.wantOwner == "" {
				if err != nil {
					t.Fatalf("checkOwner = %v", err)
				}
				return
			}
			var conflict *ConflictError
			if !errors.As(err, &conflict) || conflict.Owner != tt.wantOwner || conflict.Object != "ConfigMap shop/cfg" {
				t.Fatalf("checkOwner = %#v, want ConflictError with owner %s", err, tt.wantOwner)
			}
		})
	}
}

func TestSameContent(t *testing.T) {
	base := func() *unstructured.Unstructured {
		o := obj("apps/v1", "Deployment", "shop", "web", map[string]any{
			"spec":   map[string]any{"replicas": int64(2)},
			"status": map[string]any{"readyReplicas": int64(2)},
		})
		o.SetLabels(map[string]string{"app": "web"})
		o.SetResourceVersion("10")
		o.SetGeneration(3)
		return o
	}
	tests := []struct {
		name   string
		mutate func(dry *unstructured.Unstructured)
		want   bool
	}{
		{name: "identical", mutate: func(*unstructured.Unstructured) {}, want: true},
		{name: "bookkeeping ignored", mutate: func(d *unstructured.Unstructured) {
			d.SetResourceVersion("11")
			d.SetGeneration(4)
			d.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "convoy"}})
		}, want: true},
		{name: "status ignored", mutate: func(d *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(d.Object, int64(0), "status", "readyReplicas")
		}, want: true},
		{name: "spec differs", mutate: func(d *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(d.Object, int64(3), "spec", "replicas")
		}},
		{name: "label differs", mutate: func(d *unstructured.Unstructured) {
			d.SetLabels(map[string]string{"app": "web", v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue})
		}},
		{name: "annotation added", mutate: func(d *unstructured.Unstructured) {
			withAnnotations(d, v1alpha1.OwnerAnnotation, "team-a/shop")
		}},
		{name: "new top-level field", mutate: func(d *unstructured.Unstructured) {
			d.Object["data"] = map[string]any{"k": "v"}
		}},
		{name: "empty annotations equal absent", mutate: func(d *unstructured.Unstructured) {
			d.SetAnnotations(map[string]string{})
		}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live, dry := base(), base()
			tt.mutate(dry)
			if got := SameContent(live, dry); got != tt.want {
				t.Errorf("SameContent = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	terminating := apierrors.NewForbidden(gr, "web", errors.New("namespace shop is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: "NamespaceTerminating"}}
	tests := []struct {
		name     string
		err      error
		rejected bool
	}{
		{name: "invalid", err: apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web",
			field.ErrorList{field.Required(field.NewPath("spec", "selector"), "")}), rejected: true},
		{name: "forbidden", err: apierrors.NewForbidden(gr, "web", errors.New("denied by webhook")), rejected: true},
		{name: "namespace terminating is transient", err: terminating},
		{name: "bad request", err: apierrors.NewBadRequest("unknown field"), rejected: true},
		{name: "namespace not found", err: apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "nope"), rejected: true},
		{name: "other not found is transient", err: apierrors.NewNotFound(gr, "web")},
		{name: "internal error", err: apierrors.NewInternalError(errors.New("etcd"))},
		{name: "field not in schema (a 500)", err: &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500,
			Message: "failed to create typed patch object (shop/x; /v1, Kind=ConfigMap): .bogus: field not declared in schema"}}, rejected: true},
		{name: "timeout", err: apierrors.NewServerTimeout(gr, "patch", 1)},
		{name: "too many requests", err: apierrors.NewTooManyRequests("slow down", 1)},
		{name: "unauthorized", err: apierrors.NewUnauthorized("expired token")},
		{name: "network", err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := classify("apply", "Deployment shop/web", tt.err)
			var rej *RejectedError
			if got := errors.As(err, &rej); got != tt.rejected {
				t.Fatalf("classify(%v) = %v, rejected %v; want rejected %v", tt.err, err, got, tt.rejected)
			}
			if tt.rejected {
				if rej.Object != "Deployment shop/web" || rej.Message == "" {
					t.Errorf("rejection = %+v", rej)
				}
				return
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("transient error does not wrap the cause: %v", err)
			}
		})
	}
}

func TestPrepare(t *testing.T) {
	in := obj("v1", "ConfigMap", "", "cfg", map[string]any{"data": map[string]any{"k": "v"}})
	in.SetLabels(map[string]string{v1alpha1.ManagedByLabel: "Helm", "app": "x"})
	in.SetResourceVersion("5")
	in.SetUID("u")
	out := Prepare(in, "team-a/shop", "shop")
	if in.GetNamespace() != "" || in.GetResourceVersion() != "5" || in.GetLabels()[v1alpha1.ManagedByLabel] != "Helm" {
		t.Fatal("Prepare mutated its input")
	}
	if out.GetNamespace() != "shop" || out.GetResourceVersion() != "" || out.GetUID() != "" {
		t.Errorf("metadata = %v", out.Object["metadata"])
	}
	wantLabels := map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, "app": "x"}
	if !reflect.DeepEqual(out.GetLabels(), wantLabels) {
		t.Errorf("labels = %v, want %v", out.GetLabels(), wantLabels)
	}
	if got := out.GetAnnotations()[v1alpha1.OwnerAnnotation]; got != "team-a/shop" {
		t.Errorf("owner annotation = %q", got)
	}
}

func TestObjectNamespace(t *testing.T) {
	tests := []struct {
		name, own  string
		namespaced bool
		want       string
	}{
		{name: "own namespace kept", own: "other", namespaced: true, want: "other"},
		{name: "empty gets target", namespaced: true, want: "shop"},
		{name: "cluster-scoped gets none", own: "shop", namespaced: false, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := obj("v1", "X", tt.own, "x", nil)
			if got := objectNamespace(o, tt.namespaced, "shop"); got != tt.want {
				t.Errorf("objectNamespace = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWaveOf(t *testing.T) {
	tests := []struct {
		value string
		want  int32
	}{{"", 0}, {"3", 3}, {"-2", -2}, {"x", 0}}
	for _, tt := range tests {
		o := obj("v1", "ConfigMap", "shop", "c", nil)
		if tt.value != "" {
			withAnnotations(o, v1alpha1.SyncWaveAnnotation, tt.value)
		}
		if got := waveOf(o); got != tt.want {
			t.Errorf("waveOf(%q) = %d, want %d", tt.value, got, tt.want)
		}
	}
}

func widgetCRD(scope string) *unstructured.Unstructured {
	return obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com", map[string]any{
		"spec": map[string]any{
			"group": "example.com",
			"names": map[string]any{"kind": "Widget", "plural": "widgets"},
			"scope": scope,
			"versions": []any{
				map[string]any{"name": "v1", "served": true, "storage": true},
				map[string]any{"name": "v0", "served": false},
			},
		},
	})
}

func TestIndexCRDsAndNamespaces(t *testing.T) {
	objs := []*unstructured.Unstructured{
		widgetCRD("Namespaced"),
		obj("v1", "Namespace", "", "shop", nil),
		obj("v1", "ConfigMap", "shop", "cfg", nil),
	}
	idx := indexCRDs(objs)
	want := crdIndex{{Group: "example.com", Kind: "Widget"}: {name: "widgets.example.com", namespaced: true, versions: map[string]bool{"v1": true}}}
	if !reflect.DeepEqual(idx, want) {
		t.Errorf("indexCRDs = %+v, want %+v", idx, want)
	}
	if got := indexCRDs([]*unstructured.Unstructured{widgetCRD("Cluster")}); got[schema.GroupKind{Group: "example.com", Kind: "Widget"}].namespaced {
		t.Error("a Cluster-scoped CRD indexed as namespaced")
	}
	if got := creatingNamespaces(objs); !reflect.DeepEqual(got, map[string]bool{"shop": true}) {
		t.Errorf("creatingNamespaces = %v", got)
	}
}

func TestRef(t *testing.T) {
	if got := Ref(obj("apps/v1", "Deployment", "shop", "web", nil)); got != "Deployment shop/web" {
		t.Errorf("Ref = %q", got)
	}
	if got := Ref(obj("v1", "Namespace", "", "shop", nil)); got != "Namespace shop" {
		t.Errorf("Ref = %q", got)
	}
	if got := EntryRef(v1alpha1.InventoryEntry{Kind: "ConfigMap", Namespace: "a", Name: "b"}); got != "ConfigMap a/b" {
		t.Errorf("EntryRef = %q", got)
	}
}

func TestDeleteOrder(t *testing.T) {
	e := func(kind string, wave int32) v1alpha1.InventoryEntry {
		g := ""
		if kind == "CustomResourceDefinition" {
			g = "apiextensions.k8s.io"
		}
		return v1alpha1.InventoryEntry{Group: g, Version: "v1", Kind: kind, Name: kind, Wave: wave}
	}
	in := []v1alpha1.InventoryEntry{e("Namespace", 0), e("CustomResourceDefinition", 0), e("ConfigMap", 0), e("Secret", 2), e("Job", -1)}
	want := []v1alpha1.InventoryEntry{e("Secret", 2), e("ConfigMap", 0), e("CustomResourceDefinition", 0), e("Namespace", 0), e("Job", -1)}
	got := deleteOrder(in)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("deleteOrder = %v, want %v", got, want)
	}
	if in[0].Kind != "Namespace" {
		t.Error("deleteOrder reordered its input")
	}
}

func TestChangedFields(t *testing.T) {
	live := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "a", "resourceVersion": "5", "labels": map[string]any{"x": "1"}},
		"data":     map[string]any{"k": "v"},
	}
	tests := []struct {
		name string
		dry  map[string]any
		want []string
	}{
		{name: "same but bookkeeping", dry: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "a", "resourceVersion": "6", "managedFields": []any{"x"}, "labels": map[string]any{"x": "1"}},
			"data":     map[string]any{"k": "v"},
		}},
		{name: "data", dry: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "1"}},
			"data":     map[string]any{"k": "w"},
		}, want: []string{"data"}},
		{name: "labels changed, status ignored", dry: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "2"}},
			"data":     map[string]any{"k": "v"}, "status": map[string]any{"s": "x"},
		}, want: []string{"metadata.labels"}},
		{name: "sorted", dry: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata":   map[string]any{"name": "a", "labels": map[string]any{"x": "1"}, "annotations": map[string]any{"a": "b"}},
			"data":       map[string]any{"k": "w"},
			"binaryData": map[string]any{"b": "AA=="},
		}, want: []string{"binaryData", "data", "metadata.annotations"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ChangedFields(&unstructured.Unstructured{Object: live}, &unstructured.Unstructured{Object: tt.dry})
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ChangedFields = %q, want %q", got, tt.want)
			}
		})
	}
}
