package render

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// testScope serves core ConfigMaps, Services, apps Deployments (namespaced) and Namespaces,
// ClusterRoles (cluster-scoped); every other kind is unknown.
func testScope(gvk schema.GroupVersionKind) (bool, bool) {
	switch gvk.GroupKind().String() {
	case "ConfigMap", "Service", "Deployment.apps", "Role.rbac.authorization.k8s.io":
		return true, true
	case "Namespace", "ClusterRole.rbac.authorization.k8s.io":
		return false, true
	}
	return false, false
}

func renderFiles(files map[string]string, scope Scope) ([]*unstructured.Unstructured, error) {
	return Render(context.Background(),
		Content{Type: v1alpha1.ContentTypeManifests, Files: files},
		nil, Capabilities{Scope: scope}, Options{ReleaseName: "rel", Namespace: "shop"})
}

// describe lists objects as "apiVersion/Kind namespace/name".
func describe(objs []*unstructured.Unstructured) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, fmt.Sprintf("%s/%s %s/%s", o.GetAPIVersion(), o.GetKind(), o.GetNamespace(), o.GetName()))
	}
	return out
}

func cm(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
}

func TestRenderManifests(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		scope Scope
		want  []string
	}{{
		name: "multi-document with empty, comment-only and leading separators",
		files: map[string]string{"a.yaml": "---\n# header\n---\n" + cm("one") + "---\n\n---\n" + cm("two") +
			"--- # trailing comment\n" + cm("three") + "---\n"},
		scope: testScope,
		want:  []string{"v1/ConfigMap shop/one", "v1/ConfigMap shop/two", "v1/ConfigMap shop/three"},
	}, {
		name:  "files in sorted order, every key parsed whatever its extension",
		files: map[string]string{"b.yaml": cm("b"), "a.yml": cm("a"), "c": cm("c"), "0.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"z"}}`},
		scope: testScope,
		want:  []string{"v1/ConfigMap shop/z", "v1/ConfigMap shop/a", "v1/ConfigMap shop/b", "v1/ConfigMap shop/c"},
	}, {
		name: "List and typed List expanded in order",
		files: map[string]string{"list.yaml": "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(cm("one"), "\n", "\n  ") +
			"\n---\napiVersion: v1\nkind: ConfigMapList\nmetadata: {resourceVersion: \"7\"}\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: two}}\n" +
			"---\napiVersion: v1\nkind: List\nitems: null\n"},
		scope: testScope,
		want:  []string{"v1/ConfigMap shop/one", "v1/ConfigMap shop/two"},
	}, {
		name:  "kind ending in List with a name is an object",
		files: map[string]string{"x.yaml": "apiVersion: example.com/v1\nkind: AllowList\nmetadata: {name: allow}\nitems: [a, b]\n"},
		scope: testScope,
		want:  []string{"example.com/v1/AllowList /allow"},
	}, {
		name: "JSON object and JSON stream",
		files: map[string]string{"a.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`,
			"b.json": "\n  {\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"b\"}}\n{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"}}]}\n"},
		scope: testScope,
		want:  []string{"v1/ConfigMap shop/a", "v1/ConfigMap shop/b", "v1/ConfigMap shop/c"},
	}, {
		name: "namespace normalisation: namespaced, cluster-scoped, unknown",
		files: map[string]string{"a.yaml": cm("keep-ns")[:len(cm("keep-ns"))-1] + "\n  namespace: other\n---\n" + cm("gets-ns") +
			"---\napiVersion: v1\nkind: Namespace\nmetadata: {name: shop, namespace: wrong}\n" +
			"---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: \"system:viewer\", namespace: shop}\n" +
			"---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\n" +
			"---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w2, namespace: elsewhere}\n"},
		scope: testScope,
		want: []string{"v1/ConfigMap other/keep-ns", "v1/ConfigMap shop/gets-ns", "v1/Namespace /shop",
			"rbac.authorization.k8s.io/v1/ClusterRole /system:viewer", "example.com/v1/Widget /w1", "example.com/v1/Widget elsewhere/w2"},
	}, {
		name:  "nil scope leaves namespaces as written",
		files: map[string]string{"a.yaml": cm("a") + "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ns1, namespace: x}\n"},
		scope: nil,
		want:  []string{"v1/ConfigMap /a", "v1/Namespace x/ns1"},
	}, {
		name:  "same name in different kinds, groups and namespaces",
		files: map[string]string{"a.yaml": cm("x") + "---\napiVersion: v1\nkind: Service\nmetadata: {name: x}\n---\napiVersion: other.io/v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n" + cm("x") + "  namespace: two\n"},
		scope: testScope,
		want:  []string{"v1/ConfigMap shop/x", "v1/Service shop/x", "other.io/v1/ConfigMap /x", "v1/ConfigMap two/x"},
	}, {
		name:  "no files",
		files: nil,
		want:  []string{},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := renderFiles(tt.files, tt.scope)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got := describe(objs); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("objects:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestRenderStripsServerFieldsAndKeepsIntegers(t *testing.T) {
	doc := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  uid: 123
  resourceVersion: "9"
  generation: 4
  creationTimestamp: null
  managedFields: [{manager: x}]
  labels: {app: web}
spec:
  replicas: 3
  ratio: 0.5
status:
  readyReplicas: 3
`
	objs, err := renderFiles(map[string]string{"d.yaml": doc}, testScope)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	want := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{"app": "web"}},
		"spec":       map[string]any{"replicas": int64(3), "ratio": 0.5},
	}
	if len(objs) != 1 || !reflect.DeepEqual(objs[0].Object, want) {
		t.Errorf("object:\n got %#v\nwant %#v", objs[0].Object, want)
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		wantFile string
		wantDoc  int
		wantLine int
		wantMsg  string
	}{{
		name:     "missing kind",
		files:    map[string]string{"a.yaml": cm("a") + "---\n# about b\napiVersion: v1\nmetadata: {name: b}\n"},
		wantFile: "a.yaml", wantDoc: 2, wantLine: 7, wantMsg: "missing kind",
	}, {
		name:     "missing apiVersion",
		files:    map[string]string{"a.yaml": "kind: ConfigMap\nmetadata: {name: b}\n"},
		wantFile: "a.yaml", wantDoc: 1, wantLine: 1, wantMsg: "missing apiVersion",
	}, {
		name:     "missing name in the second file",
		files:    map[string]string{"a.yaml": cm("a"), "b.yaml": cm("b") + "---\n---\n\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {}\n"},
		wantFile: "b.yaml", wantDoc: 2, wantLine: 8, wantMsg: "ConfigMap: missing metadata.name",
	}, {
		name:     "missing name in a List item",
		files:    map[string]string{"l.yaml": "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: ConfigMap}\n"},
		wantFile: "l.yaml", wantDoc: 1, wantLine: 1, wantMsg: "list item 2: ConfigMap: missing metadata.name",
	}, {
		name:     "name not a string",
		files:    map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 5}\n"},
		wantFile: "a.yaml", wantDoc: 1, wantLine: 1, wantMsg: "metadata.name is not a string but a number",
	}, {
		name:     "invalid name",
		files:    map[string]string{"a.yaml": cm("Bad_Name")},
		wantFile: "a.yaml", wantDoc: 1, wantLine: 1, wantMsg: `invalid metadata.name "Bad_Name"`,
	}, {
		name:     "invalid namespace",
		files:    map[string]string{"a.yaml": cm("a") + "  namespace: a.b\n"},
		wantFile: "a.yaml", wantDoc: 1, wantLine: 1, wantMsg: `invalid namespace "a.b"`,
	}, {
		name:     "invalid apiVersion",
		files:    map[string]string{"a.yaml": "apiVersion: a/b/c\nkind: X\nmetadata: {name: x}\n"},
		wantFile: "a.yaml", wantDoc: 1, wantLine: 1, wantMsg: "invalid apiVersion",
	}, {
		name:     "invalid YAML reports the file line",
		files:    map[string]string{"a.yaml": cm("a") + "---\n" + cm("b") + "data:\n  k: v\n   bad: [\n"},
		wantFile: "a.yaml", wantDoc: 2, wantLine: 12, wantMsg: "invalid YAML: yaml: mapping values are not allowed",
	}, {
		name:     "invalid separator",
		files:    map[string]string{"a.yaml": cm("a") + "--- x\n" + cm("b")},
		wantFile: "a.yaml", wantDoc: 1, wantLine: 5, wantMsg: "invalid Yaml document separator",
	}, {
		name:     "invalid JSON in a stream",
		files:    map[string]string{"a.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}` + "\n{\"apiVersion\": \"v1\",\n \"kind\": x}"},
		wantFile: "a.json", wantDoc: 2, wantLine: 3, wantMsg: "invalid JSON",
	}, {
		name:     "document that is not an object",
		files:    map[string]string{"a.yaml": cm("a") + "---\n- just\n- a list\n"},
		wantFile: "a.yaml", wantDoc: 2, wantLine: 6, wantMsg: "document is not an object but an array",
	}, {
		name:     "duplicate in one file",
		files:    map[string]string{"a.yaml": cm("a") + "---\n" + cm("a")},
		wantFile: "a.yaml", wantDoc: 2, wantLine: 6, wantMsg: "duplicate object ConfigMap shop/a (first in a.yaml document 1, line 1)",
	}, {
		name:     "duplicate after namespace normalisation, across files",
		files:    map[string]string{"a.yaml": cm("a") + "  namespace: shop\n", "b.yaml": cm("a")},
		wantFile: "b.yaml", wantDoc: 1, wantLine: 1, wantMsg: "duplicate object ConfigMap shop/a (first in a.yaml document 1, line 1)",
	}, {
		name:     "duplicate with another version of the same kind",
		files:    map[string]string{"a.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n---\napiVersion: apps/v1beta2\nkind: Deployment\nmetadata: {name: d, namespace: shop}\n"},
		wantFile: "a.yaml", wantDoc: 2, wantLine: 5, wantMsg: "duplicate object Deployment.apps shop/d",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := renderFiles(tt.files, testScope)
			var rerr *Error
			if !errors.As(err, &rerr) {
				t.Fatalf("want *Error, got %T %v", err, err)
			}
			if rerr.File != tt.wantFile || rerr.Doc != tt.wantDoc || rerr.Line != tt.wantLine {
				t.Errorf("location = %s doc %d line %d, want %s doc %d line %d (%v)",
					rerr.File, rerr.Doc, rerr.Line, tt.wantFile, tt.wantDoc, tt.wantLine, err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tt.wantMsg)
			}
			prefix := fmt.Sprintf("%s: document %d, line %d: ", tt.wantFile, tt.wantDoc, tt.wantLine)
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error %q does not start with %q", err, prefix)
			}
		})
	}
}

func TestRenderUnsupported(t *testing.T) {
	for _, ct := range []v1alpha1.ContentType{"", "jsonnet"} {
		t.Run(string(ct), func(t *testing.T) {
			_, err := Render(context.Background(), Content{Type: ct, Dir: "/nonexistent"}, nil, Capabilities{}, Options{})
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("want ErrUnsupported, got %v", err)
			}
			var rerr *Error
			if errors.As(err, &rerr) {
				t.Errorf("unsupported content must not be a render *Error: %v", err)
			}
		})
	}
}

func TestRenderCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Render(ctx, Content{Type: v1alpha1.ContentTypeManifests, Files: map[string]string{"a.yaml": cm("a")}}, nil, Capabilities{}, Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

func TestErrorString(t *testing.T) {
	cause := errors.New("boom")
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{File: "deploy.yaml", Doc: 2, Line: 7, Err: cause}, "deploy.yaml: document 2, line 7: boom"},
		{&Error{File: "deploy.yaml", Doc: 2, Err: cause}, "deploy.yaml: document 2: boom"},
		{&Error{File: "deploy.yaml", Line: 3, Err: cause}, "deploy.yaml: line 3: boom"},
		{&Error{File: "deploy.yaml", Err: cause}, "deploy.yaml: boom"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if !errors.Is(tt.err, cause) {
			t.Errorf("%q does not unwrap to its cause", tt.err)
		}
	}
}
