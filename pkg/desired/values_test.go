package desired

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

func testRenderer(t *testing.T) *Renderer {
	cms := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, obj := range []any{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "base"}, Data: map[string]string{
			"values.yaml": "replicas: 2\nimage: {repo: nginx, tag: \"1.25\"}\n", "bad.yaml": "a: [\n"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "foreign"}, Data: map[string]string{"values.yaml": "x: 1\n"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "creds"}, Data: map[string][]byte{
			"values.yaml": []byte("image: {tag: \"1.26\"}\npassword: hunter2\n"), "bad.yaml": []byte("password: hunter2\n  oops: [\n")}},
	} {
		var err error
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			err = cms.Add(cm)
		} else {
			err = secrets.Add(obj)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return &Renderer{ConfigMaps: corev1listers.NewConfigMapLister(cms), Secrets: corev1listers.NewSecretLister(secrets)}
}

func TestResolveValueLayers(t *testing.T) {
	tests := []struct {
		name    string
		from    []v1alpha1.ValuesReference
		inline  string
		want    map[string]any
		wantErr string
	}{{
		name:   "layers in order, then inline values",
		from:   []v1alpha1.ValuesReference{{Kind: "ConfigMap", Name: "base"}, {Kind: "Secret", Name: "creds", Key: "values.yaml"}},
		inline: `{"replicas": 3}`,
		want:   map[string]any{"replicas": float64(3), "image": map[string]any{"repo": "nginx", "tag": "1.26"}, "password": "hunter2"},
	}, {
		name: "optional missing layer skipped",
		from: []v1alpha1.ValuesReference{{Kind: "ConfigMap", Name: "nope", Optional: true}, {Kind: "Secret", Name: "creds", Key: "missing", Optional: true}},
		want: map[string]any{},
	}, {
		name:    "missing required layer named",
		from:    []v1alpha1.ValuesReference{{Kind: "ConfigMap", Name: "base"}, {Kind: "Secret", Name: "gone"}},
		wantErr: "valuesFrom[1]: Secret shop/gone key values.yaml not found",
	}, {
		name:    "other namespace is not read",
		from:    []v1alpha1.ValuesReference{{Kind: "ConfigMap", Name: "foreign"}},
		wantErr: "ConfigMap shop/foreign key values.yaml not found",
	}, {
		name:    "missing key named",
		from:    []v1alpha1.ValuesReference{{Kind: "ConfigMap", Name: "base", Key: "prod.yaml"}},
		wantErr: "ConfigMap shop/base key prod.yaml not found",
	}, {
		name:    "invalid ConfigMap YAML",
		from:    []v1alpha1.ValuesReference{{Kind: "ConfigMap", Name: "base", Key: "bad.yaml"}},
		wantErr: "invalid YAML: ",
	}, {
		name:    "invalid Secret YAML does not show the content",
		from:    []v1alpha1.ValuesReference{{Kind: "Secret", Name: "creds", Key: "bad.yaml"}},
		wantErr: "Secret shop/creds key bad.yaml: invalid YAML at line",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
				Spec: v1alpha1.ReleaseSpec{ValuesFrom: tt.from}}
			if tt.inline != "" {
				rel.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(tt.inline)}
			}
			got, err := testRenderer(t).resolveValueLayers(rel)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("error shows secret content: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("values %#v, want %#v", got, tt.want)
			}
		})
	}
}
