package render

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

const mutationInput = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {tier: front}}
spec:
  replicas: 1
  template:
    spec:
      initContainers: [{name: init, image: "registry.io:5000/tools/init:1.0"}]
      containers: [{name: web, image: "nginx:1.25"}, {name: side, image: "envoy@sha256:aaa"}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, annotations: {team: a}}
data: {k: v}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
`

func mutationObjects(t *testing.T) []*unstructured.Unstructured {
	objs, err := renderFiles(map[string]string{"a.yaml": mutationInput}, testScope)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func js(t *testing.T, v any) *apiextensionsv1.JSON {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &apiextensionsv1.JSON{Raw: data}
}

func TestApplyMutations(t *testing.T) {
	tests := []struct {
		name  string
		muts  func(t *testing.T) []v1alpha1.Mutation
		check map[string]string // "Kind/name path" -> want (JSON)
	}{{
		name: "labels on all, annotations by label selector",
		muts: func(t *testing.T) []v1alpha1.Mutation {
			return []v1alpha1.Mutation{
				{Labels: map[string]string{"env": "prod"}},
				{Target: &v1alpha1.MutationTarget{LabelSelector: "tier=front"}, Annotations: map[string]string{"x": "y"}},
			}
		},
		check: map[string]string{
			"Deployment/web metadata.labels":      `{"env":"prod","tier":"front"}`,
			"Namespace/shop metadata.labels":      `{"env":"prod"}`,
			"Deployment/web metadata.annotations": `{"x":"y"}`,
			"ConfigMap/cfg metadata.annotations":  `{"team":"a"}`,
		},
	}, {
		name: "namespace skips cluster-scoped, annotation selector, kind target",
		muts: func(t *testing.T) []v1alpha1.Mutation {
			return []v1alpha1.Mutation{
				{Namespace: "other"},
				{Target: &v1alpha1.MutationTarget{AnnotationSelector: "team=a"}, Labels: map[string]string{"sel": "ann"}},
			}
		},
		check: map[string]string{
			"ConfigMap/cfg metadata.namespace":  `"other"`,
			"Namespace/shop metadata.namespace": `null`,
			"ConfigMap/cfg metadata.labels":     `{"sel":"ann"}`,
			"Deployment/web metadata.labels":    `{"tier":"front"}`,
		},
	}, {
		name: "images: tag, new name, digest, registry with port",
		muts: func(t *testing.T) []v1alpha1.Mutation {
			return []v1alpha1.Mutation{{Images: []v1alpha1.ImageMutation{
				{Name: "nginx", NewName: "mirror/nginx", NewTag: "1.26"},
				{Name: "envoy", Digest: "sha256:bbb"},
				{Name: "registry.io:5000/tools/init", NewTag: "2.0"},
			}}}
		},
		check: map[string]string{
			"Deployment/web spec.template.spec.containers":     `[{"image":"mirror/nginx:1.26","name":"web"},{"image":"envoy@sha256:bbb","name":"side"}]`,
			"Deployment/web spec.template.spec.initContainers": `[{"image":"registry.io:5000/tools/init:2.0","name":"init"}]`,
		},
	}, {
		name: "jsonPatch, mergePatch, strategicMergePatch by name",
		muts: func(t *testing.T) []v1alpha1.Mutation {
			return []v1alpha1.Mutation{
				{Target: &v1alpha1.MutationTarget{Kind: "Deployment"}, JSONPatch: []v1alpha1.JSONPatchOperation{
					{Op: "replace", Path: "/spec/replicas", Value: js(t, 3)}}},
				{Target: &v1alpha1.MutationTarget{Name: "cfg"}, MergePatch: js(t, map[string]any{"data": map[string]any{"k": nil, "n": "1"}})},
				{Target: &v1alpha1.MutationTarget{Group: "apps", Kind: "Deployment"}, StrategicMergePatch: js(t, map[string]any{
					"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx:2"}}}}}})},
			}
		},
		check: map[string]string{
			"Deployment/web spec.replicas":                 `3`,
			"ConfigMap/cfg data":                           `{"n":"1"}`,
			"Deployment/web spec.template.spec.containers": `[{"image":"nginx:2","name":"web"},{"image":"envoy@sha256:aaa","name":"side"}]`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := mutationObjects(t)
			if err := ApplyMutations(objs, tt.muts(t)); err != nil {
				t.Fatalf("ApplyMutations: %v", err)
			}
			for key, want := range tt.check {
				id, field, _ := strings.Cut(key, " ")
				var obj *unstructured.Unstructured
				for _, o := range objs {
					if o.GetKind()+"/"+o.GetName() == id {
						obj = o
					}
				}
				v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(field, ".")...)
				got, _ := json.Marshal(v)
				if string(got) != want {
					t.Errorf("%s = %s, want %s", key, got, want)
				}
			}
			if n, ok := objs[0].Object["spec"].(map[string]any)["replicas"]; ok {
				if _, isInt := n.(int64); !isInt {
					t.Errorf("replicas is %T after mutation, want int64", n)
				}
			}
		})
	}
}

func TestApplyMutationsErrors(t *testing.T) {
	tests := []struct {
		name string
		muts []v1alpha1.Mutation
		want string
	}{
		{"no change", []v1alpha1.Mutation{{}}, "spec.mutations[0]: sets no change"},
		{"two changes", []v1alpha1.Mutation{{Labels: map[string]string{"a": "b"}, Namespace: "x"}}, "sets labels and namespace"},
		{"bad selector", []v1alpha1.Mutation{{Target: &v1alpha1.MutationTarget{LabelSelector: "a in (b"}, Labels: map[string]string{"a": "b"}}}, "target.labelSelector"},
		{"json patch does not apply", []v1alpha1.Mutation{{Labels: map[string]string{"a": "b"}}, {Target: &v1alpha1.MutationTarget{Kind: "ConfigMap"},
			JSONPatch: []v1alpha1.JSONPatchOperation{{Op: "remove", Path: "/spec/missing"}}}}, "spec.mutations[1] on ConfigMap shop/cfg: jsonPatch does not apply"},
		{"patch removes the name", []v1alpha1.Mutation{{Target: &v1alpha1.MutationTarget{Kind: "ConfigMap"},
			JSONPatch: []v1alpha1.JSONPatchOperation{{Op: "remove", Path: "/metadata/name"}}}}, "missing metadata.name"},
		{"strategic merge on a custom kind", []v1alpha1.Mutation{{Target: &v1alpha1.MutationTarget{Kind: "Namespace"},
			StrategicMergePatch: &apiextensionsv1.JSON{Raw: []byte(`{"metadata":{"labels":{"a":"b"}}}`)}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ApplyMutations(mutationObjects(t), tt.muts)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var rerr *Error
			if !errors.As(err, &rerr) {
				t.Fatalf("want *Error, got %T %v", err, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
	objs := []*unstructured.Unstructured{{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}}}}
	err := ApplyMutations(objs, []v1alpha1.Mutation{{StrategicMergePatch: &apiextensionsv1.JSON{Raw: []byte(`{}`)}}})
	if err == nil || !strings.Contains(err.Error(), "needs a built-in kind") {
		t.Errorf("strategic merge patch on a custom kind: %v", err)
	}
}
