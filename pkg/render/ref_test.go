package render

import (
	"regexp"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func mustRender(t *testing.T, files map[string]string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := renderFiles(files, testScope)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return objs
}

func mustRef(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	ref, err := RenderRef(objs)
	if err != nil {
		t.Fatalf("RenderRef: %v", err)
	}
	return ref
}

func TestRenderRef(t *testing.T) {
	base := map[string]string{
		"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {z: \"1\", a: \"2\"}}\ndata: {k: v}\n",
		"b.yaml": cm("b"),
	}
	baseRef := mustRef(t, mustRender(t, base))
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(baseRef) {
		t.Fatalf("ref %q is not sha256:<64 hex>", baseRef)
	}
	tests := []struct {
		name  string
		files map[string]string
		same  bool
	}{
		{"same input again", base, true},
		{"key order and formatting do not matter", map[string]string{
			"a.yaml": "# comment\nkind: ConfigMap\napiVersion: v1\ndata:\n  k: v\nmetadata:\n  labels:\n    a: \"2\"\n    z: \"1\"\n  name: a\n",
			"b.yaml": cm("b"),
		}, true},
		{"a value changes", map[string]string{
			"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {z: \"1\", a: \"2\"}}\ndata: {k: w}\n",
			"b.yaml": cm("b"),
		}, false},
		{"order changes", map[string]string{
			"a.yaml": cm("b"),
			"b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {z: \"1\", a: \"2\"}}\ndata: {k: v}\n",
		}, false},
		{"an object is added", map[string]string{
			"a.yaml": base["a.yaml"],
			"b.yaml": cm("b") + "---\n" + cm("c"),
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := mustRef(t, mustRender(t, tt.files))
			if (ref == baseRef) != tt.same {
				t.Errorf("ref %s vs base %s: same=%v, want %v", ref, baseRef, ref == baseRef, tt.same)
			}
		})
	}
}

func TestRenderRefEmptyAndNil(t *testing.T) {
	// SHA-256 of no bytes.
	const emptyRef = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if got := mustRef(t, nil); got != emptyRef {
		t.Errorf("RenderRef(nil) = %s, want %s", got, emptyRef)
	}
	if _, err := RenderRef([]*unstructured.Unstructured{nil}); err == nil {
		t.Error("RenderRef with a nil object: want an error")
	}
}

func TestShortRef(t *testing.T) {
	tests := []struct{ ref, want string }{
		{"", ""},
		{"sha256:0123456789abcdef0123", "0123456789ab"},
		{"sha256:abc", "abc"},
		{"0123456789abcdef", "0123456789ab"},
	}
	for _, tt := range tests {
		if got := ShortRef(tt.ref); got != tt.want {
			t.Errorf("ShortRef(%q) = %q, want %q", tt.ref, got, tt.want)
		}
	}
}
