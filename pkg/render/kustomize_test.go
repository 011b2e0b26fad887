package render

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

func TestRenderKustomize(t *testing.T) {
	files := map[string]string{
		"base/kustomization.yaml":    "resources: [cm.yaml]\nlabels: [{pairs: {app: web}}]\n",
		"base/cm.yaml":               cm("cfg"),
		"overlay/kustomization.yaml": "resources: [../base]\nnamePrefix: prod-\npatches:\n- path: patch.yaml\n",
		"overlay/patch.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {env: prod}\n",
	}
	root := writeTree(t, files)
	objs, err := Render(context.Background(), Content{Type: v1alpha1.ContentTypeKustomize, Root: root, Dir: filepath.Join(root, "overlay")},
		nil, Capabilities{Scope: testScope}, Options{Namespace: "shop"})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	if got := describe(objs); !reflect.DeepEqual(got, []string{"v1/ConfigMap shop/prod-cfg"}) {
		t.Fatalf("objects %q", got)
	}
	if objs[0].GetLabels()["app"] != "web" || objs[0].Object["data"].(map[string]any)["env"] != "prod" {
		t.Errorf("object %v", objs[0].Object)
	}
}

func TestRenderKustomizeRefused(t *testing.T) {
	tests := []struct {
		name  string
		kust  string
		extra map[string]string
		want  string
	}{
		{"remote git base", "resources: [\"github.com/org/repo//base?ref=v1\"]\n", nil, "remote reference"},
		{"remote https file", "resources: [https://example.com/x.yaml]\n", nil, "remote reference"},
		{"remote patch", "patches:\n- path: https://example.com/p.yaml\n", nil, "remote reference"},
		{"base outside the tree", "resources: [../../outside]\n", nil, "kustomize build"},
		{"helm charts", "helmCharts: [{name: x}]\n", nil, "helmCharts are not supported"},
		{"exec plugin", "generators: [gen.yaml]\n", map[string]string{"app/gen.yaml": "apiVersion: someteam.example.com/v1\nkind: ChartInflator\nmetadata: {name: x}\n"}, "kustomize build"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"app/kustomization.yaml": tt.kust}
			for k, v := range tt.extra {
				files[k] = v
			}
			root := writeTree(t, files)
			_, err := Render(context.Background(), Content{Type: v1alpha1.ContentTypeKustomize, Root: root, Dir: filepath.Join(root, "app")},
				nil, Capabilities{}, Options{})
			var rerr *Error
			if !errors.As(err, &rerr) {
				t.Fatalf("want *Error, got %T %v", err, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}
