package deployer

import (
	"reflect"
	"slices"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// Ref formats "Kind namespace/name" (or "Kind name" for a cluster-scoped object) for messages.
func Ref(obj *unstructured.Unstructured) string {
	return formatRef(obj.GetKind(), obj.GetNamespace(), obj.GetName())
}

// EntryRef formats an inventory entry like Ref.
func EntryRef(e v1alpha1.InventoryEntry) string {
	return formatRef(e.Kind, e.Namespace, e.Name)
}

func formatRef(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}

// serverFields are metadata fields the API server owns; a rendered object that carries them (a
// copy of a live object, say) would make the apply fail or pin a resourceVersion.
var serverFields = []string{
	"resourceVersion", "uid", "selfLink", "creationTimestamp", "generation", "managedFields",
	"deletionTimestamp", "deletionGracePeriodSeconds",
}

// Prepare returns the object to apply: a copy of obj without server-owned metadata, with the
// managed-by label and the owner annotation (owner is the Release's namespace/name), in namespace
// (empty for cluster-scoped objects). The observer's drift check sends exactly this object as its
// dry run, so both compare the same thing.
func Prepare(obj *unstructured.Unstructured, owner, namespace string) *unstructured.Unstructured {
	out := obj.DeepCopy()
	for _, f := range serverFields {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	labels := out.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1alpha1.ManagedByLabel] = v1alpha1.ManagedByValue
	out.SetLabels(labels)
	annotations := out.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[v1alpha1.OwnerAnnotation] = owner
	out.SetAnnotations(annotations)
	out.SetNamespace(namespace)
	return out
}

// objectNamespace is the namespace an object goes to: its own, the target namespace when it names
// none, and none when the kind is cluster-scoped.
func objectNamespace(obj *unstructured.Unstructured, namespaced bool, target string) string {
	switch {
	case !namespaced:
		return ""
	case obj.GetNamespace() == "":
		return target
	default:
		return obj.GetNamespace()
	}
}

// checkPolicy enforces the Cluster's policy on one object: a cluster-scoped object needs
// AllowClusterScoped; a namespaced one must be in the target namespace or an allowed namespace.
func checkPolicy(ref, kind, name, namespace string, namespaced bool, opts Options) error {
	if !namespaced {
		if opts.AllowClusterScoped {
			return nil
		}
		return &RejectedError{Object: ref,
			Message: "cluster-scoped " + kind + "/" + name + " needs Cluster spec.allowClusterScoped"}
	}
	if namespace == opts.TargetNamespace || slices.Contains(opts.AllowedNamespaces, "*") ||
		slices.Contains(opts.AllowedNamespaces, namespace) {
		return nil
	}
	return &RejectedError{Object: ref,
		Message: "namespace " + namespace + " is neither the target namespace " + opts.TargetNamespace +
			" nor in Cluster spec.allowedNamespaces"}
}

// checkOwner refuses to touch a live object that another Release applied. A live object without
// the owner annotation is adopted.
func checkOwner(ref string, live *unstructured.Unstructured, owner string) error {
	if live == nil {
		return nil
	}
	if current := live.GetAnnotations()[v1alpha1.OwnerAnnotation]; current != "" && current != owner {
		return &ConflictError{Object: ref, Owner: current}
	}
	return nil
}

// SameContent reports whether the dry-run result of an apply equals the live object in what the
// apply can change (see ChangedFields).
func SameContent(live, dry *unstructured.Unstructured) bool {
	return len(ChangedFields(live, dry)) == 0
}

// ChangedFields returns, sorted, what a dry-run apply would change in the live object: the
// metadata labels, annotations, ownerReferences and finalizers ("metadata.labels", ...) and every
// top-level field but metadata and status. Server bookkeeping (resourceVersion, managedFields,
// generation) is ignored. The dry run only sets the fields the apply holds, so a field set by
// another manager that the render does not hold (an HPA's replicas) never shows here.
func ChangedFields(live, dry *unstructured.Unstructured) []string {
	var out []string
	for _, f := range []string{"labels", "annotations", "ownerReferences", "finalizers"} {
		a, _, _ := unstructured.NestedFieldNoCopy(live.Object, "metadata", f)
		b, _, _ := unstructured.NestedFieldNoCopy(dry.Object, "metadata", f)
		if !equalJSON(a, b) {
			out = append(out, "metadata."+f)
		}
	}
	keys := map[string]bool{}
	for k := range live.Object {
		keys[k] = true
	}
	for k := range dry.Object {
		keys[k] = true
	}
	for k := range keys {
		if k == "metadata" || k == "status" {
			continue
		}
		if !equalJSON(live.Object[k], dry.Object[k]) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// equalJSON compares two decoded JSON values, treating absent, null and empty maps or lists alike.
func equalJSON(a, b any) bool {
	if isEmpty(a) && isEmpty(b) {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	case map[string]string:
		return len(t) == 0
	}
	return false
}

// waveOf reads the sync wave of an object (default 0; an unparsable value counts as 0, the render
// having rejected it already).
func waveOf(obj *unstructured.Unstructured) int32 {
	w, err := strconv.ParseInt(obj.GetAnnotations()[v1alpha1.SyncWaveAnnotation], 10, 32)
	if err != nil {
		return 0
	}
	return int32(w)
}

// crdGroupKind is the kind of CustomResourceDefinition objects.
var crdGroupKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// crdInfo is what the deployer reads from a CustomResourceDefinition object.
type crdInfo struct {
	name       string
	namespaced bool
	versions   map[string]bool // served versions
}

// crdIndex indexes the CustomResourceDefinitions of a render by the kind they define.
type crdIndex map[schema.GroupKind]crdInfo

// indexCRDs finds the CustomResourceDefinition objects in objs.
func indexCRDs(objs []*unstructured.Unstructured) crdIndex {
	idx := crdIndex{}
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() != crdGroupKind {
			continue
		}
		if gk, info, ok := parseCRD(o); ok {
			idx[gk] = info
		}
	}
	return idx
}

// parseCRD reads the group, kind, scope and served versions of a CustomResourceDefinition.
func parseCRD(o *unstructured.Unstructured) (schema.GroupKind, crdInfo, bool) {
	group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
	scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
	if group == "" || kind == "" {
		return schema.GroupKind{}, crdInfo{}, false
	}
	info := crdInfo{name: o.GetName(), namespaced: scope != "Cluster", versions: map[string]bool{}}
	versions, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		served, _ := m["served"].(bool)
		if name != "" && served {
			info.versions[name] = true
		}
	}
	return schema.GroupKind{Group: group, Kind: kind}, info, true
}

// creatingNamespaces returns the names of the Namespace objects in objs.
func creatingNamespaces(objs []*unstructured.Unstructured) map[string]bool {
	out := map[string]bool{}
	for _, o := range objs {
		if gvk := o.GroupVersionKind(); gvk.Group == "" && gvk.Kind == "Namespace" {
			out[o.GetName()] = true
		}
	}
	return out
}
