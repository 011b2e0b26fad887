package desired

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// secretLayerError is every message a Secret layer may fail with: the content never shows.
var secretLayerError = regexp.MustCompile(`^valuesFrom\[1\]: Secret shop/creds key values\.yaml: (invalid YAML( at line (\d+))?|values must be a YAML map)$`)

// FuzzValueLayers resolves a ConfigMap layer, a Secret layer and inline values, all fuzzed. A
// failure must name its layer, and a Secret layer's must not show the content (at most a line of
// it). A success must follow the override merge: every value of a layer that no later layer
// touches survives, the last layer's values all win, nothing appears that no layer holds, and
// merging the last layer again changes nothing.
func FuzzValueLayers(f *testing.F) {
	f.Add("replicas: 2\nimage: {repo: nginx, tag: \"1.25\"}\n", "image: {tag: \"1.26\"}\npassword: hunter2\n", `{"replicas": 3}`)
	f.Add("a: {b: {c: 1, d: [1, 2]}}\n", "a: {b: 5}\n", `{"a": {"b": {"e": null}}}`)
	f.Add("a: 1\n", "a: {x: {}}\n", `{"a": {"x": {"y": true}}}`)
	f.Add("", "", "")
	f.Add("# just a comment\n", "~\n", "null")
	f.Add("- 1\n- 2\n", "password: hunter2\n  oops: [\n", `{`)
	f.Add("a: b\n", "{[k, v]: x}\n", "")
	f.Add("a: &x {b: 1}\nc: *x\n", "\"quoted\": 'value'\n", `{"c": {"b": 2}}`)
	f.Fuzz(func(t *testing.T, base, secret, inline string) {
		if len(base)+len(secret)+len(inline) > 64<<10 {
			t.Skip("input too large")
		}
		r := fuzzRenderer(t, base, secret)
		rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
			Spec: v1alpha1.ReleaseSpec{ValuesFrom: []v1alpha1.ValuesReference{{Kind: "ConfigMap", Name: "base"}, {Kind: "Secret", Name: "creds"}}}}
		if inline != "" {
			rel.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(inline)}
		}
		out, err := r.resolveValueLayers(rel)
		if err != nil {
			msg := err.Error()
			switch {
			case strings.HasPrefix(msg, "valuesFrom[0]: ConfigMap shop/base key values.yaml: "),
				strings.HasPrefix(msg, "spec.values: "):
			case strings.HasPrefix(msg, "valuesFrom[1]: "):
				m := secretLayerError.FindStringSubmatch(msg)
				if m == nil {
					t.Fatalf("a Secret layer error may show its content: %q", msg)
				}
				if m[3] != "" {
					if line, _ := strconv.Atoi(m[3]); line < 1 || line > strings.Count(secret, "\n")+1 {
						t.Fatalf("a Secret layer error names line %d of a %d-line Secret: its digits come from the content", line, strings.Count(secret, "\n")+1)
					}
				}
			default:
				t.Fatalf("error names no layer: %q", msg)
			}
			return
		}
		if _, err := json.Marshal(out); err != nil {
			t.Fatalf("merged values do not encode as JSON: %v", err)
		}

		// Fresh parses: merging may share maps of a layer with the result.
		var layers []map[string]any
		var lastData string
		for _, data := range []string{base, secret, inline} {
			if data == "" {
				continue
			}
			lastData = data
			layer, err := parseValues([]byte(data), false)
			if err != nil {
				t.Fatalf("a layer that merged does not parse alone: %v", err)
			}
			layers = append(layers, layer)
		}
		for i, layer := range layers {
			walkLeaves(layer, nil, func(path []string, v any) {
				for _, later := range layers[i+1:] {
					if touches(later, path) {
						return
					}
				}
				if got, ok := lookup(out, path); !ok || !jsonEqual(t, got, v) {
					t.Fatalf("layer %d's value at %s is %v, but the merged values hold %v (present %v)", i, strings.Join(path, "."), v, got, ok)
				}
			})
		}
		walkLeaves(out, nil, func(path []string, v any) {
			for _, layer := range layers {
				if lv, ok := lookup(layer, path); ok && jsonEqual(t, lv, v) {
					return
				}
			}
			t.Fatalf("the merged value at %s (%v) is in no layer", strings.Join(path, "."), v)
		})
		if len(layers) > 0 {
			before, _ := json.Marshal(out)
			last, _ := parseValues([]byte(lastData), false)
			mergeValues(out, last)
			if after, _ := json.Marshal(out); !bytes.Equal(before, after) {
				t.Fatalf("merging the last layer again changes the values:\n%s\n%s", before, after)
			}
		}
	})
}

// fuzzRenderer serves one ConfigMap "base" and one Secret "creds" in namespace shop.
func fuzzRenderer(t *testing.T, base, secret string) *Renderer {
	cms := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := cms.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "base"},
		Data: map[string]string{defaultValuesKey: base}}); err != nil {
		t.Fatal(err)
	}
	if err := secrets.Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "creds"},
		Data: map[string][]byte{defaultValuesKey: []byte(secret)}}); err != nil {
		t.Fatal(err)
	}
	return &Renderer{ConfigMaps: corev1listers.NewConfigMapLister(cms), Secrets: corev1listers.NewSecretLister(secrets)}
}

// walkLeaves calls fn with the path and value of every value in m that is not a map.
func walkLeaves(m map[string]any, prefix []string, fn func(path []string, v any)) {
	for k, v := range m {
		path := append(append([]string(nil), prefix...), k)
		if sub, ok := v.(map[string]any); ok {
			walkLeaves(sub, path, fn)
			continue
		}
		fn(path, v)
	}
}

// touches reports whether merging layer would replace or reach the value at path: the layer holds
// something at path or a non-map value at a prefix of it.
func touches(layer map[string]any, path []string) bool {
	var node any = layer
	for _, k := range path {
		m, ok := node.(map[string]any)
		if !ok {
			return true
		}
		if node, ok = m[k]; !ok {
			return false
		}
	}
	return true
}

// lookup returns the value at path in m.
func lookup(m map[string]any, path []string) (any, bool) {
	var node any = m
	for _, k := range path {
		mm, ok := node.(map[string]any)
		if !ok {
			return nil, false
		}
		if node, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return node, true
}

func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		t.Fatalf("values do not encode as JSON: %v, %v", errA, errB)
	}
	return bytes.Equal(ja, jb)
}

// TestTouches keeps the merge model of FuzzValueLayers honest.
func TestTouches(t *testing.T) {
	layer := map[string]any{"a": map[string]any{"b": int64(1)}, "s": "x"}
	tests := []struct {
		path []string
		want bool
	}{
		{[]string{"a", "b"}, true},
		{[]string{"a", "c"}, false},
		{[]string{"a"}, true},
		{[]string{"s", "deeper"}, true},
		{[]string{"z"}, false},
	}
	for _, tt := range tests {
		if got := touches(layer, tt.path); got != tt.want {
			t.Errorf("touches(%v) = %v, want %v", tt.path, got, tt.want)
		}
	}
}
