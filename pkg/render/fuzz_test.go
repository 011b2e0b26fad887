package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// maxFuzzInput bounds fuzz inputs so every execution stays fast; size limits are tested elsewhere.
const maxFuzzInput = 64 << 10

// FuzzRenderManifests feeds arbitrary YAML and JSON streams to the manifests renderer. A failure
// must be an *Error naming the file; a success must hold only valid, normalised, unique objects
// that survive being written back as a JSON stream and as YAML documents with the same reference.
func FuzzRenderManifests(f *testing.F) {
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n")
	f.Add("---\n# only a comment\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: shop, namespace: x}\n")
	f.Add("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, status: {x: 1}}\n")
	f.Add(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"7"}} {"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"n":1.5,"big":12345678901234567890}}`)
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n--- junk\n")
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: {x: [}\n")
	f.Add("a: &a [x, *a]\n")
	f.Add("[1, 2]\n")
	f.Add(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"zero":-0.0}}`)
	f.Add("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {zero: -0.0, f: 1.0, e: 1e21}\n")
	f.Fuzz(func(t *testing.T, data string) {
		if len(data) > maxFuzzInput {
			t.Skip("input too large")
		}
		const file = "in.yaml"
		objs, err := renderFiles(map[string]string{file: data}, testScope)
		if err != nil {
			var rerr *Error
			if !errors.As(err, &rerr) {
				t.Fatalf("error is not a *render.Error: %T %v", err, err)
			}
			if rerr.File != file || rerr.Doc < 1 {
				t.Fatalf("error does not name the file and document: %+v", rerr)
			}
			// An unexpected end of the input is reported on the line after the last one.
			if lines := strings.Count(data, "\n") + 1; rerr.Line < 0 || rerr.Line > lines+1 {
				t.Fatalf("error line %d beyond the end of the %d lines of the input: %v", rerr.Line, lines, err)
			}
			return
		}
		checkRendered(t, objs)
		ref := mustRef(t, objs)
		if again, err := renderFiles(map[string]string{file: data}, testScope); err != nil || mustRef(t, again) != ref {
			t.Fatalf("rendering the same input twice differs (err %v)", err)
		}
		if len(objs) == 0 {
			return
		}

		// The objects written back as a JSON stream and as YAML documents render to the same objects.
		var jsonStream, yamlDocs bytes.Buffer
		yamlOK := true
		for _, obj := range objs {
			j, err := json.Marshal(obj.Object)
			if err != nil {
				t.Fatalf("marshal rendered object to JSON: %v", err)
			}
			jsonStream.Write(j)
			jsonStream.WriteByte('\n')
			y, err := yaml.Marshal(obj.Object)
			if err != nil {
				// The YAML emitter refuses a string holding DEL (U+007F), which JSON and the YAML
				// parser accept: such objects are written back as JSON only.
				if !strings.Contains(err.Error(), "control characters are not allowed") {
					t.Fatalf("marshal rendered object to YAML: %v", err)
				}
				yamlOK = false
			}
			yamlDocs.WriteString("---\n")
			yamlDocs.Write(y)
		}
		forms := map[string]string{"json": jsonStream.String()}
		if yamlOK {
			forms["yaml"] = yamlDocs.String()
		}
		for name, out := range forms {
			back, err := renderFiles(map[string]string{"out": out}, testScope)
			if err != nil {
				t.Fatalf("re-rendering the %s form fails: %v\n%s", name, err, out)
			}
			if got := mustRef(t, back); got != ref {
				t.Fatalf("the %s form renders to %s, want %s\n%s", name, got, ref, out)
			}
		}
	})
}

// checkRendered checks what every render guarantees about its objects.
func checkRendered(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	seen := map[objectKey]bool{}
	for i, obj := range objs {
		gvk, err := checkIdentity(obj.Object)
		if err != nil {
			t.Fatalf("object %d has a bad identity: %v", i, err)
		}
		if _, ok := obj.Object["status"]; ok {
			t.Fatalf("object %d keeps its status", i)
		}
		md, _ := obj.Object["metadata"].(map[string]any)
		for _, field := range serverFields {
			if _, ok := md[field]; ok {
				t.Fatalf("object %d keeps metadata.%s", i, field)
			}
		}
		ns := obj.GetNamespace()
		if ns != "" && len(validation.IsDNS1123Label(ns)) > 0 {
			t.Fatalf("object %d has invalid namespace %q", i, ns)
		}
		if namespaced, known := testScope(gvk); known && namespaced != (ns != "") {
			t.Fatalf("object %d (%s, namespaced %v) has namespace %q", i, gvk, namespaced, ns)
		}
		key := objectKey{group: gvk.Group, kind: gvk.Kind, namespace: ns, name: obj.GetName()}
		if seen[key] {
			t.Fatalf("object %s appears twice", key)
		}
		seen[key] = true
	}
}

// fuzzMutationObjects is the fixed object set mutations are fuzzed against: built-in namespaced
// and cluster-scoped kinds, and a custom resource with an embedded pod spec.
const fuzzMutationObjects = mutationInput + `---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: shop, labels: {tier: back}}
spec:
  n: 3
  ratio: 0.5
  template: {spec: {containers: [{name: c, image: "nginx:1.25"}]}}
`

// Mutation modes: how the fuzzed body is used.
const (
	modeMergePatch = iota
	modeStrategicMergePatch
	modeJSONPatch
	modeWholeMutation
	numModes
)

// FuzzApplyMutations applies one fuzzed mutation (a merge patch, strategic merge patch or JSON
// patch body, or a whole Mutation as JSON, with a fuzzed target) to a fixed object set. A failure
// must be an *Error naming spec.mutations[0]; a success must leave objects the target does not
// select untouched, keep every object's identity, give a reference that survives the render
// store's JSON round trip, be deterministic, and a merge patch must be idempotent.
func FuzzApplyMutations(f *testing.F) {
	f.Add(uint8(modeMergePatch), []byte(`{"metadata":{"labels":{"x":"y"}},"spec":{"replicas":null}}`), "", "", "")
	f.Add(uint8(modeMergePatch), []byte(`{"metadata":{"name":null}}`), "ConfigMap", "", "")
	f.Add(uint8(modeMergePatch), []byte(`{"spec":{"n":9007199254740993,"ratio":1e300}}`), "Widget", "w", "tier=back")
	f.Add(uint8(modeStrategicMergePatch), []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:2"}]}}}}`), "Deployment", "", "")
	f.Add(uint8(modeStrategicMergePatch), []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"side","$patch":"delete"}]}}}}`), "", "web", "tier in (front)")
	f.Add(uint8(modeJSONPatch), []byte(`[{"op":"add","path":"/metadata/labels/a","value":"b"},{"op":"remove","path":"/data/k"}]`), "ConfigMap", "cfg", "")
	f.Add(uint8(modeJSONPatch), []byte(`[{"op":"move","from":"/metadata","path":"/spec/m"}]`), "", "", "!tier")
	f.Add(uint8(modeJSONPatch), []byte(`[{"op":"test","path":"/kind","value":"Namespace"},{"op":"replace","path":"/metadata/name","value":"x"}]`), "", "", "")
	f.Add(uint8(modeWholeMutation), []byte(`{"images":[{"name":"nginx","newTag":"1.27"},{"name":"registry.io:5000/tools/init","digest":"sha256:abc"}]}`), "", "", "")
	f.Add(uint8(modeWholeMutation), []byte(`{"namespace":"other","target":{"group":"apps"}}`), "", "", "")
	f.Add(uint8(modeWholeMutation), []byte(`{"labels":{"a":"b"},"annotations":{"c":"d"}}`), "", "", "")
	f.Add(uint8(modeWholeMutation), []byte(`{"annotations":{"team":"b"},"target":{"annotationSelector":"team=a"}}`), "", "", "")
	base, err := renderFiles(map[string]string{"objs.yaml": fuzzMutationObjects}, testScope)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, mode uint8, body []byte, kind, name, selector string) {
		if len(body) > maxFuzzInput {
			t.Skip("input too large")
		}
		var mut v1alpha1.Mutation
		switch mode % numModes {
		case modeMergePatch:
			mut.MergePatch = &apiextensionsv1.JSON{Raw: body}
		case modeStrategicMergePatch:
			mut.StrategicMergePatch = &apiextensionsv1.JSON{Raw: body}
		case modeJSONPatch:
			if err := json.Unmarshal(body, &mut.JSONPatch); err != nil {
				t.Skip("not a JSON patch")
			}
		case modeWholeMutation:
			if err := json.Unmarshal(body, &mut); err != nil {
				t.Skip("not a Mutation")
			}
		}
		if mut.Target == nil && kind+name+selector != "" {
			mut.Target = &v1alpha1.MutationTarget{Kind: kind, Name: name, LabelSelector: selector}
		}
		muts := []v1alpha1.Mutation{mut}

		objs := deepCopyAll(base)
		err := ApplyMutations(objs, muts)
		if err != nil {
			var rerr *Error
			if !errors.As(err, &rerr) || !strings.HasPrefix(rerr.Err.Error(), "spec.mutations[0]") {
				t.Fatalf("error is not a *render.Error naming spec.mutations[0]: %T %v", err, err)
			}
			return
		}
		match, err := targetMatcher(mut.Target)
		if err != nil {
			t.Fatalf("mutation applied although its target does not parse: %v", err)
		}
		for i, obj := range objs {
			if _, err := checkIdentity(obj.Object); err != nil {
				t.Fatalf("object %d lost its identity: %v", i, err)
			}
			if !match(base[i]) && mustRef(t, objs[i:i+1]) != mustRef(t, base[i:i+1]) {
				t.Fatalf("object %d is not targeted but changed", i)
			}
		}
		ref := mustRef(t, objs)
		if got := mustRef(t, jsonRoundTrip(t, objs)); got != ref {
			t.Fatalf("mutated objects hash to %s after a JSON round trip, %s before", got, ref)
		}
		again := deepCopyAll(base)
		if err := ApplyMutations(again, muts); err != nil || mustRef(t, again) != ref {
			t.Fatalf("applying the same mutation again to the same objects differs (err %v)", err)
		}
		if mut.MergePatch != nil {
			if err := ApplyMutations(again, muts); err != nil || mustRef(t, again) != ref {
				t.Fatalf("a merge patch applied twice differs from once (err %v)", err)
			}
		}
	})
}

func deepCopyAll(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, obj := range objs {
		out[i] = obj.DeepCopy()
	}
	return out
}

// jsonRoundTrip encodes and decodes objects the way the render store does.
func jsonRoundTrip(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	maps := make([]map[string]any, len(objs))
	for i, obj := range objs {
		maps[i] = obj.Object
	}
	data, err := json.Marshal(maps)
	if err != nil {
		t.Fatalf("encode objects: %v", err)
	}
	var back []map[string]any
	if err := utiljson.Unmarshal(data, &back); err != nil {
		t.Fatalf("decode objects: %v", err)
	}
	out := make([]*unstructured.Unstructured, len(back))
	for i, m := range back {
		out[i] = &unstructured.Unstructured{Object: m}
	}
	return out
}

var refPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// FuzzRenderRef computes render references of objects decoded as the renderer decodes them from
// two fuzzed JSON documents, with a fuzzed number planted in the first. The reference must be well
// formed, deterministic, independent of the key order of the input and of the render store's JSON
// round trip, equal for two renders exactly when their canonical JSON is equal, and an unencodable
// number must be an error, never a panic.
func FuzzRenderRef(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"b":"1","a":"2"}}`), []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"},"data":{"a":"2","b":"1"}}`), 1.5)
	f.Add([]byte(`{"a":1}`), []byte(`{"a":1.0}`), math.NaN())
	f.Add([]byte(`{"s":"\u003c\u2028\ud800x"}`), []byte(`{"s":"<"}`), math.Inf(1))
	f.Add([]byte(`{"n":12345678901234567890,"f":1e21,"z":-0,"nz":-0.0}`), []byte(`{"l":[-0e1]}`), math.Copysign(0, -1))
	f.Add([]byte(`{"a":{"b":[{"c":null},true,"x"]}}`), []byte(`{"a":{"b":[{"c":null},true,"x"]}}`), 1e-7)
	f.Fuzz(func(t *testing.T, a, b []byte, x float64) {
		if len(a)+len(b) > maxFuzzInput {
			t.Skip("input too large")
		}
		ma, mb := decodeObject(a), decodeObject(b)
		if ma == nil || mb == nil {
			t.Skip("not JSON objects")
		}
		// Rendered objects hold numbers as decodeDocument leaves them: no negative zero.
		ma["fuzzNumber"] = positiveZero(x)
		objs := []*unstructured.Unstructured{{Object: ma}, {Object: mb}}
		ref, err := RenderRef(objs)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			if err == nil {
				t.Fatalf("RenderRef of an object holding %v = %s, want an error", x, ref)
			}
			delete(ma, "fuzzNumber")
			ref, err = RenderRef(objs)
		}
		if err != nil {
			t.Fatalf("RenderRef: %v", err)
		}
		if !refPattern.MatchString(ref) {
			t.Fatalf("malformed reference %q", ref)
		}
		if short := ShortRef(ref); len(short) != 12 || !strings.HasPrefix(ref, refPrefix+short) {
			t.Fatalf("ShortRef(%q) = %q", ref, short)
		}
		if again := mustRef(t, deepCopyAll(objs)); again != ref {
			t.Fatalf("a deep copy hashes to %s, want %s", again, ref)
		}
		if back := mustRef(t, jsonRoundTrip(t, objs)); back != ref {
			t.Fatalf("after the render store's JSON round trip the objects hash to %s, want %s", back, ref)
		}
		reordered := make([]*unstructured.Unstructured, len(objs))
		for i, obj := range objs {
			m := decodeObject(reversedJSON(t, obj.Object))
			if m == nil {
				t.Fatalf("object %d written with keys in reverse order does not decode", i)
			}
			reordered[i] = &unstructured.Unstructured{Object: m}
		}
		if got := mustRef(t, reordered); got != ref {
			t.Fatalf("the objects with keys in reverse order hash to %s, want %s", got, ref)
		}

		// One render equals another exactly when their canonical forms are equal.
		ja, _ := json.Marshal(objs[0].Object)
		jb, _ := json.Marshal(objs[1].Object)
		swapped := mustRef(t, []*unstructured.Unstructured{objs[1], objs[0]})
		if (swapped == ref) != bytes.Equal(ja, jb) {
			t.Fatalf("swapping the objects: same reference %v, same canonical JSON %v", swapped == ref, bytes.Equal(ja, jb))
		}
		if only := mustRef(t, objs[:1]); only == ref {
			t.Fatal("dropping an object keeps the reference")
		}
		if _, err := RenderRef(append(objs, nil)); !errors.Is(err, errNilObject) {
			t.Fatalf("RenderRef with a nil object: %v, want errNilObject", err)
		}
	})
}

// decodeObject decodes data as the renderer does, nil when it is not a JSON object.
func decodeObject(data []byte) map[string]any {
	v, err := decodeDocument(data)
	if err != nil {
		return nil
	}
	m, _ := v.(map[string]any)
	return m
}

// reversedJSON writes v as JSON with every object's keys in reverse sorted order.
func reversedJSON(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	var write func(v any)
	write = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			slices.Reverse(keys)
			buf.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					buf.WriteByte(',')
				}
				write(k)
				buf.WriteByte(':')
				write(v[k])
			}
			buf.WriteByte('}')
		case []any:
			buf.WriteByte('[')
			for i, item := range v {
				if i > 0 {
					buf.WriteByte(',')
				}
				write(item)
			}
			buf.WriteByte(']')
		default:
			data, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("encode %v: %v", v, err)
			}
			buf.Write(data)
		}
	}
	write(v)
	return buf.Bytes()
}

// TestReversedJSON keeps the FuzzRenderRef helper honest: it really reverses the keys.
func TestReversedJSON(t *testing.T) {
	got := string(reversedJSON(t, map[string]any{"a": int64(1), "b": map[string]any{"c": true, "d": []any{"x"}}}))
	if want := `{"b":{"d":["x"],"c":true},"a":1}`; got != want {
		t.Fatalf("reversedJSON = %s, want %s", got, want)
	}
}

// TestNegativeZeroKeepsRenderRef is the regression test of a FuzzRenderManifests find: a JSON
// manifest (or a patch) holding -0.0 gave a render whose reference changed after the render
// store's JSON round trip ("-0" decodes as the integer 0), so the stored render read back as corrupt.
func TestNegativeZeroKeepsRenderRef(t *testing.T) {
	const doc = `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"z":-0.0,"l":[-0e3,{"y":-0.00}],"one":-1.0}}`
	patch := func(raw string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(raw)} }
	tests := []struct {
		name string
		muts []v1alpha1.Mutation
	}{
		{"manifest", nil},
		{"merge patch", []v1alpha1.Mutation{{MergePatch: patch(`{"spec":{"m":-0.0}}`)}}},
		{"json patch", []v1alpha1.Mutation{{JSONPatch: []v1alpha1.JSONPatchOperation{{Op: "add", Path: "/spec/p", Value: patch(`-0.0`)}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := mustRender(t, map[string]string{"w.json": doc})
			if err := ApplyMutations(objs, tt.muts); err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal(objs[0].Object)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(data, []byte("-0")) {
				t.Fatalf("the object still holds a negative zero: %s", data)
			}
			if got, want := mustRef(t, jsonRoundTrip(t, objs)), mustRef(t, objs); got != want {
				t.Fatalf("after a JSON round trip the render hashes to %s, want %s", got, want)
			}
		})
	}
}
