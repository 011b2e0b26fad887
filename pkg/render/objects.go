package render

import (
	"fmt"
	"strings"

	pathvalidation "k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// builder collects the objects of one render, normalising and checking each as it is added.
type builder struct {
	caps Capabilities
	opts Options
	objs []*unstructured.Unstructured
	// seen maps each object's identity to where it was first found, to report duplicates.
	seen map[objectKey]location
}

// objectKey identifies an object on a cluster: the version does not matter.
type objectKey struct {
	group, kind, namespace, name string
}

func (k objectKey) String() string {
	kind := k.kind
	if k.group != "" {
		kind += "." + k.group
	}
	if k.namespace == "" {
		return kind + " " + k.name
	}
	return kind + " " + k.namespace + "/" + k.name
}

// location is where an object came from.
type location struct {
	file string
	doc  int
	line int
}

func newBuilder(caps Capabilities, opts Options) *builder {
	return &builder{caps: caps, opts: opts, seen: map[objectKey]location{}}
}

// addDocument adds the objects of one JSON document found in file at document doc, line line.
func (b *builder) addDocument(file string, doc, line int, data []byte) error {
	fail := func(err error) error { return &Error{File: file, Doc: doc, Line: line, Err: err} }
	v, err := decodeDocument(data)
	if err != nil {
		return fail(err)
	}
	if v == nil {
		// Empty and comment-only documents decode to null.
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fail(fmt.Errorf("document is not an object but %s", jsonTypeName(v)))
	}
	loc := location{file: file, doc: doc, line: line}
	if items, ok := listItems(m); ok {
		for i, item := range items {
			im, ok := item.(map[string]any)
			if !ok {
				return fail(fmt.Errorf("list item %d is not an object but %s", i+1, jsonTypeName(item)))
			}
			if err := b.addObject(im, loc); err != nil {
				return fail(fmt.Errorf("list item %d: %w", i+1, err))
			}
		}
		return nil
	}
	if err := b.addObject(m, loc); err != nil {
		return fail(err)
	}
	return nil
}

// listItems returns the items of a List document. A kind ending in "List" with an items array is
// a list unless it has a metadata.name: then it is an object whose kind happens to end in "List".
func listItems(m map[string]any) ([]any, bool) {
	kind, _ := m["kind"].(string)
	if !strings.HasSuffix(kind, "List") {
		return nil, false
	}
	var items []any
	switch v := m["items"].(type) {
	case []any:
		items = v
	case nil:
		// "items: null" is an empty List; a document without items is not a List.
		if _, present := m["items"]; !present {
			return nil, false
		}
	default:
		return nil, false
	}
	if kind != "List" {
		if name, _, _ := unstructured.NestedString(m, "metadata", "name"); name != "" {
			return nil, false
		}
	}
	return items, true
}

// addObject checks, normalises and appends one object.
func (b *builder) addObject(m map[string]any, loc location) error {
	obj := &unstructured.Unstructured{Object: m}
	gvk, err := checkIdentity(m)
	if err != nil {
		return err
	}
	b.normalise(obj, gvk)
	if ns := obj.GetNamespace(); ns != "" {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			return fmt.Errorf("%s %q: invalid namespace %q: %s", gvk.Kind, obj.GetName(), ns, strings.Join(msgs, "; "))
		}
	}
	key := objectKey{group: gvk.Group, kind: gvk.Kind, namespace: obj.GetNamespace(), name: obj.GetName()}
	if first, dup := b.seen[key]; dup {
		where := fmt.Sprintf("%s document %d", first.file, first.doc)
		if first.line > 0 {
			where += fmt.Sprintf(", line %d", first.line)
		}
		return fmt.Errorf("duplicate object %s (first in %s)", key, where)
	}
	b.seen[key] = loc
	b.objs = append(b.objs, obj)
	return nil
}

// checkIdentity checks apiVersion, kind and metadata.name and returns the object's kind.
func checkIdentity(m map[string]any) (schema.GroupVersionKind, error) {
	apiVersion, err := requiredString(m, "apiVersion")
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	kind, err := requiredString(m, "kind")
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("%s: invalid apiVersion: %w", kind, err)
	}
	gvk := gv.WithKind(kind)
	if md, present := m["metadata"]; present {
		if _, ok := md.(map[string]any); !ok {
			return gvk, fmt.Errorf("%s: metadata is not an object but %s", kind, jsonTypeName(md))
		}
	}
	name, err := requiredString(m, "metadata", "name")
	if err != nil {
		return gvk, fmt.Errorf("%s: %w", kind, err)
	}
	if msgs := validateName(gvk, name); len(msgs) > 0 {
		return gvk, fmt.Errorf("%s: invalid metadata.name %q: %s", kind, name, strings.Join(msgs, "; "))
	}
	if ns, present, _ := unstructured.NestedFieldNoCopy(m, "metadata", "namespace"); present && ns != nil {
		if _, ok := ns.(string); !ok {
			return gvk, fmt.Errorf("%s %q: metadata.namespace is not a string but %s", kind, name, jsonTypeName(ns))
		}
	}
	return gvk, nil
}

// requiredString returns the non-empty string at path in m.
func requiredString(m map[string]any, path ...string) (string, error) {
	field := strings.Join(path, ".")
	v, present, _ := unstructured.NestedFieldNoCopy(m, path...)
	if !present || v == nil {
		return "", fmt.Errorf("missing %s", field)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s is not a string but %s", field, jsonTypeName(v))
	}
	if s == "" {
		return "", fmt.Errorf("missing %s", field)
	}
	return s, nil
}

// validateName checks a name loosely: RBAC objects allow any path segment (e.g. "system:viewer"),
// every other kind must be a DNS-1123 subdomain. The dry run applies the exact rules of each kind.
func validateName(gvk schema.GroupVersionKind, name string) []string {
	if gvk.Group == "rbac.authorization.k8s.io" {
		return pathvalidation.IsValidPathSegmentName(name)
	}
	return validation.IsDNS1123Subdomain(name)
}

// serverFields are the metadata fields the API server sets; a render never carries them.
var serverFields = []string{"resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"}

// normalise sets or removes the namespace by the kind's scope and strips server-set fields.
func (b *builder) normalise(obj *unstructured.Unstructured, gvk schema.GroupVersionKind) {
	namespaced, known := false, false
	if b.caps.Scope != nil {
		namespaced, known = b.caps.Scope(gvk)
	}
	switch {
	case known && namespaced && obj.GetNamespace() == "":
		obj.SetNamespace(b.opts.Namespace)
	case known && !namespaced:
		unstructured.RemoveNestedField(obj.Object, "metadata", "namespace")
	}
	for _, f := range serverFields {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(obj.Object, "status")
}

// jsonTypeName names the JSON type of a decoded value for messages.
func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64:
		return "a number"
	default:
		return fmt.Sprintf("%T", v)
	}
}
