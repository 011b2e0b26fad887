package render

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// writeTree writes files (slash paths) under a fresh temporary directory and returns it.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// testChart is a chart with a CRD, a packaged dependency, hooks, NOTES.txt and a partial.
func testChart() map[string]string {
	return map[string]string{
		"web/Chart.yaml":             "apiVersion: v2\nname: web\nversion: 1.2.3\ndependencies:\n- name: sidecar\n  version: 0.1.0\n  condition: sidecar.enabled\n",
		"web/values.yaml":            "replicas: 1\nimage: nginx:1.25\nextra: false\nsidecar:\n  enabled: true\n",
		"web/crds/widget.yaml":       "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n",
		"web/templates/_helpers.tpl": `{{- define "web.name" -}}{{ .Release.Name }}-web{{- end -}}`,
		"web/templates/NOTES.txt":    "Thanks for installing {{ .Release.Name }}",
		"web/templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "web.name" . }}
  labels:
    kube: {{ .Capabilities.KubeVersion.Minor | quote }}
    ns: {{ .Release.Namespace }}
spec:
  replicas: {{ .Values.replicas }}
  template:
    spec:
      containers:
      - name: web
        image: {{ .Values.image }}
`,
		"web/templates/extra.yaml": `{{- if .Values.extra }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: extra
data:
  lookup: {{ lookup "v1" "Namespace" "" "default" | len | quote }}
{{- end }}
`,
		"web/templates/hooks.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
    helm.sh/hook-weight: "-5"
spec: {template: {spec: {restartPolicy: Never, containers: [{name: m, image: busybox}]}}}
---
apiVersion: v1
kind: Pod
metadata:
  name: test-conn
  annotations:
    helm.sh/hook: test
spec: {containers: [{name: t, image: busybox}]}
`,
		"web/charts/sidecar/Chart.yaml":            "apiVersion: v2\nname: sidecar\nversion: 0.1.0\n",
		"web/charts/sidecar/templates/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sidecar\n",
		"web/charts/sidecar/templates/NOTES.txt":   "sub notes",
		"web/charts/sidecar/templates/_helper.tpl": `{{- define "x" }}x{{ end }}`,
	}
}

func renderChart(t *testing.T, files map[string]string, values map[string]any) ([]string, error) {
	t.Helper()
	dir := filepath.Join(writeTree(t, files), "web")
	objs, err := Render(context.Background(), Content{Type: v1alpha1.ContentTypeHelm, Dir: dir}, values,
		Capabilities{KubeVersion: "v1.37.2", Scope: testScope}, Options{ReleaseName: "rel", Namespace: "shop"})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range objs {
		d := o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
		if h := o.GetAnnotations()[v1alpha1.HookAnnotation]; h != "" {
			d += " hook=" + h + " policy=" + o.GetAnnotations()[HookDeletePolicyAnnotation] + " weight=" + o.GetAnnotations()[HookWeightAnnotation]
		}
		if o.GetKind() == "Deployment" {
			d += " kube=" + o.GetLabels()["kube"]
			img, _, _ := unstructuredImage(o.Object)
			d += " image=" + img
		}
		out = append(out, d)
	}
	return out, nil
}

func unstructuredImage(obj map[string]any) (string, bool, error) {
	spec := obj["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	return spec["containers"].([]any)[0].(map[string]any)["image"].(string), true, nil
}

func TestRenderHelm(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		edit   func(map[string]string)
		want   []string
	}{{
		name: "defaults: crds, dependency, hooks mapped, test hook, NOTES and partials dropped",
		// Files in path order; Job is unknown to testScope so keeps no namespace.
		want: []string{
			"ConfigMap shop/sidecar",
			"CustomResourceDefinition /widgets.example.com",
			"Deployment shop/rel-web kube=37 image=nginx:1.25",
			"Job /migrate hook=preSync policy=BeforeHookCreation,HookSucceeded weight=-5",
		},
	}, {
		name:   "values select objects, disable a dependency, lookup is empty",
		values: map[string]any{"extra": true, "replicas": 3, "image": "nginx:1.26", "sidecar": map[string]any{"enabled": false}},
		want: []string{
			"CustomResourceDefinition /widgets.example.com",
			"Deployment shop/rel-web kube=37 image=nginx:1.26",
			"ConfigMap shop/extra",
			"Job /migrate hook=preSync policy=BeforeHookCreation,HookSucceeded weight=-5",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := testChart()
			if tt.edit != nil {
				tt.edit(files)
			}
			got, err := renderChart(t, files, tt.values)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("objects:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestRenderHelmErrors(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(map[string]string)
		wantFile string
		wantLine int
		wantMsg  string
	}{{
		name:     "template error has file and line",
		edit:     func(f map[string]string) { f["web/templates/broken.yaml"] = "a: 1\nb: {{ .Values.nope.deeper }}\n" },
		wantFile: "web/templates/broken.yaml", wantLine: 2, wantMsg: "nil pointer",
	}, {
		name:     "parse error has file and line",
		edit:     func(f map[string]string) { f["web/templates/broken.yaml"] = "a: 1\n\nb: {{ if }}\n" },
		wantFile: "web/templates/broken.yaml", wantLine: 3, wantMsg: "missing value for if",
	}, {
		name: "missing dependency",
		edit: func(f map[string]string) {
			for name := range f {
				if strings.HasPrefix(name, "web/charts/") {
					delete(f, name)
				}
			}
		},
		wantFile: "web/Chart.yaml", wantMsg: "dependencies sidecar are listed in Chart.yaml but not packaged",
	}, {
		name:     "invalid YAML output",
		edit:     func(f map[string]string) { f["web/templates/bad.yaml"] = "kind: [\n" },
		wantFile: "web/templates/bad.yaml", wantLine: 1, wantMsg: "invalid YAML",
	}, {
		name: "hook with two phases",
		edit: func(f map[string]string) {
			f["web/templates/two.yaml"] = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: two\n  annotations: {helm.sh/hook: \"pre-install,post-delete\"}\n"
		},
		wantMsg: "a convoy hook has one phase",
	}, {
		name: "kubeVersion not satisfied",
		edit: func(f map[string]string) {
			f["web/Chart.yaml"] = strings.Replace(f["web/Chart.yaml"], "version: 1.2.3", "version: 1.2.3\nkubeVersion: '<1.20'", 1)
		},
		wantFile: "web/Chart.yaml", wantMsg: "requires kubeVersion <1.20",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := testChart()
			tt.edit(files)
			_, err := renderChart(t, files, nil)
			var rerr *Error
			if !errors.As(err, &rerr) {
				t.Fatalf("want *Error, got %T %v", err, err)
			}
			if rerr.File != tt.wantFile || (tt.wantLine != 0 && rerr.Line != tt.wantLine) {
				t.Errorf("location %s:%d, want %s:%d (%v)", rerr.File, rerr.Line, tt.wantFile, tt.wantLine, err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tt.wantMsg)
			}
		})
	}
}

func TestRenderHelmDeterministic(t *testing.T) {
	dir := filepath.Join(writeTree(t, testChart()), "web")
	var refs []string
	for range 3 {
		objs, err := Render(context.Background(), Content{Type: v1alpha1.ContentTypeHelm, Dir: dir}, map[string]any{"extra": true},
			Capabilities{Scope: testScope}, Options{ReleaseName: "rel", Namespace: "shop"})
		if err != nil {
			t.Fatal(err)
		}
		ref, err := RenderRef(objs)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	if refs[0] != refs[1] || refs[1] != refs[2] {
		t.Errorf("render refs differ: %v", refs)
	}
}
