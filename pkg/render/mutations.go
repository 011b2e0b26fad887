package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// ApplyMutations runs the mutations in order on the objects they target, changing objs in place.
// A mutation that is malformed or does not apply to a targeted object is an *Error naming the
// mutation (spec.mutations[i]) and the object.
func ApplyMutations(objs []*unstructured.Unstructured, muts []v1alpha1.Mutation) error {
	for i := range muts {
		m := &muts[i]
		fail := func(obj *unstructured.Unstructured, err error) error {
			where := fmt.Sprintf("spec.mutations[%d]", i)
			if obj != nil {
				where += " on " + describeObject(obj)
			}
			return &Error{Err: fmt.Errorf("%s: %w", where, err)}
		}
		apply, err := mutationFunc(m)
		if err != nil {
			return fail(nil, err)
		}
		match, err := targetMatcher(m.Target)
		if err != nil {
			return fail(nil, err)
		}
		for _, obj := range objs {
			if !match(obj) {
				continue
			}
			if err := apply(obj); err != nil {
				return fail(obj, err)
			}
		}
	}
	return nil
}

func describeObject(obj *unstructured.Unstructured) string {
	kind := obj.GetKind()
	if g := obj.GroupVersionKind().Group; g != "" {
		kind += "." + g
	}
	if ns := obj.GetNamespace(); ns != "" {
		return kind + " " + ns + "/" + obj.GetName()
	}
	return kind + " " + obj.GetName()
}

// targetMatcher returns whether an object is selected by t; a nil target selects all.
func targetMatcher(t *v1alpha1.MutationTarget) (func(*unstructured.Unstructured) bool, error) {
	if t == nil {
		return func(*unstructured.Unstructured) bool { return true }, nil
	}
	labelSel, err := parseSelector("target.labelSelector", t.LabelSelector)
	if err != nil {
		return nil, err
	}
	annSel, err := parseSelector("target.annotationSelector", t.AnnotationSelector)
	if err != nil {
		return nil, err
	}
	return func(obj *unstructured.Unstructured) bool {
		gvk := obj.GroupVersionKind()
		return (t.Group == "" || t.Group == gvk.Group) &&
			(t.Version == "" || t.Version == gvk.Version) &&
			(t.Kind == "" || t.Kind == gvk.Kind) &&
			(t.Name == "" || t.Name == obj.GetName()) &&
			(t.Namespace == "" || t.Namespace == obj.GetNamespace()) &&
			labelSel.Matches(labels.Set(obj.GetLabels())) &&
			annSel.Matches(labels.Set(obj.GetAnnotations()))
	}, nil
}

func parseSelector(field, s string) (labels.Selector, error) {
	if s == "" {
		return labels.Everything(), nil
	}
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", field, s, err)
	}
	return sel, nil
}

// mutationFunc returns the change a mutation makes to one object; exactly one change must be set.
func mutationFunc(m *v1alpha1.Mutation) (func(*unstructured.Unstructured) error, error) {
	var fns []func(*unstructured.Unstructured) error
	var names []string
	add := func(name string, fn func(*unstructured.Unstructured) error) {
		names = append(names, name)
		fns = append(fns, fn)
	}
	if len(m.Labels) > 0 {
		add("labels", func(obj *unstructured.Unstructured) error {
			obj.SetLabels(merged(obj.GetLabels(), m.Labels))
			return nil
		})
	}
	if len(m.Annotations) > 0 {
		add("annotations", func(obj *unstructured.Unstructured) error {
			obj.SetAnnotations(merged(obj.GetAnnotations(), m.Annotations))
			return nil
		})
	}
	if m.Namespace != "" {
		add("namespace", func(obj *unstructured.Unstructured) error {
			// Rendering gave every namespaced object a namespace and took it from cluster-scoped
			// ones, so an object without one is cluster-scoped.
			if obj.GetNamespace() != "" {
				obj.SetNamespace(m.Namespace)
			}
			return nil
		})
	}
	if len(m.Images) > 0 {
		add("images", func(obj *unstructured.Unstructured) error {
			rewriteImages(obj.Object, m.Images)
			return nil
		})
	}
	if len(m.JSONPatch) > 0 {
		ops, err := json.Marshal(m.JSONPatch)
		if err != nil {
			return nil, fmt.Errorf("encoding jsonPatch: %w", err)
		}
		patch, err := jsonpatch.DecodePatch(ops)
		if err != nil {
			return nil, fmt.Errorf("invalid jsonPatch: %w", err)
		}
		add("jsonPatch", func(obj *unstructured.Unstructured) error {
			return patchObject(obj, "jsonPatch", func(doc []byte) ([]byte, error) { return patch.Apply(doc) })
		})
	}
	if m.MergePatch != nil {
		add("mergePatch", func(obj *unstructured.Unstructured) error {
			return patchObject(obj, "mergePatch", func(doc []byte) ([]byte, error) { return jsonpatch.MergePatch(doc, m.MergePatch.Raw) })
		})
	}
	if m.StrategicMergePatch != nil {
		add("strategicMergePatch", func(obj *unstructured.Unstructured) error {
			typed, err := scheme.Scheme.New(obj.GroupVersionKind())
			if err != nil {
				return fmt.Errorf("strategicMergePatch needs a built-in kind, and %s is not one: use mergePatch or jsonPatch", obj.GroupVersionKind())
			}
			return patchObject(obj, "strategicMergePatch", func(doc []byte) ([]byte, error) {
				return strategicpatch.StrategicMergePatch(doc, m.StrategicMergePatch.Raw, typed)
			})
		})
	}
	switch len(fns) {
	case 0:
		return nil, errors.New("sets no change: set one of labels, annotations, namespace, images, jsonPatch, mergePatch, strategicMergePatch")
	case 1:
		return fns[0], nil
	default:
		return nil, fmt.Errorf("sets %s: a mutation makes exactly one change", strings.Join(names, " and "))
	}
}

func merged(base, extra map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(extra))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// patchObject runs a JSON patch function over obj and replaces obj's content with the result,
// which must still be an object with apiVersion, kind and metadata.name.
func patchObject(obj *unstructured.Unstructured, kind string, patch func([]byte) ([]byte, error)) error {
	doc, err := json.Marshal(obj.Object)
	if err != nil {
		return fmt.Errorf("encoding object: %w", err)
	}
	out, err := patch(doc)
	if err != nil {
		return fmt.Errorf("%s does not apply: %w", kind, err)
	}
	v, err := decodeDocument(out)
	if err != nil {
		return fmt.Errorf("%s result: %w", kind, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s result is not an object but %s", kind, jsonTypeName(v))
	}
	if _, err := checkIdentity(m); err != nil {
		return fmt.Errorf("%s result: %w", kind, err)
	}
	obj.Object = m
	return nil
}

// rewriteImages rewrites the image of every container and initContainer found anywhere in the
// object (Pod, pod templates, CronJob job templates, custom resources embedding pod specs).
func rewriteImages(v any, images []v1alpha1.ImageMutation) {
	switch t := v.(type) {
	case map[string]any:
		for key, child := range t {
			if key == "containers" || key == "initContainers" || key == "ephemeralContainers" {
				for _, c := range list(child) {
					if cm, ok := c.(map[string]any); ok {
						if img, ok := cm["image"].(string); ok {
							cm["image"] = rewriteImage(img, images)
						}
					}
				}
			}
			rewriteImages(child, images)
		}
	case []any:
		for _, child := range t {
			rewriteImages(child, images)
		}
	}
}

// rewriteImage applies the first image mutation whose name equals the image's name (without tag
// or digest). A digest replaces tag and digest; a new tag replaces both too.
func rewriteImage(image string, images []v1alpha1.ImageMutation) string {
	name, tag, digest := splitImage(image)
	for _, im := range images {
		if im.Name != name {
			continue
		}
		if im.NewName != "" {
			name = im.NewName
		}
		switch {
		case im.Digest != "":
			return name + "@" + im.Digest
		case im.NewTag != "":
			return name + ":" + im.NewTag
		}
		out := name
		if tag != "" {
			out += ":" + tag
		}
		if digest != "" {
			out += "@" + digest
		}
		return out
	}
	return image
}

// splitImage splits "registry:5000/app:1.2@sha256:..." into name, tag and digest.
func splitImage(image string) (name, tag, digest string) {
	name = image
	if i := strings.Index(name, "@"); i >= 0 {
		name, digest = name[:i], name[i+1:]
	}
	if i := strings.LastIndex(name, ":"); i >= 0 && !strings.Contains(name[i+1:], "/") {
		name, tag = name[:i], name[i+1:]
	}
	return name, tag, digest
}
