// Package render turns fetched content into the normalised Kubernetes objects a Release applies.
//
// # Content types
//
// Render dispatches on the content type: manifests (below); helm, rendered with Helm's engine
// (release name, namespace, .Capabilities from Capabilities, chart crds/, packaged dependencies,
// `lookup` answering nothing, NOTES.txt and partials left out, Helm hooks mapped to convoy's
// hook annotations and test hooks dropped, values.schema.json enforced without loading any document
// it refers to; see helm.go, helm_hooks.go and helm_schema.go); and kustomize, built by
// krusty over an in-memory copy of the fetched tree with remote references refused and builtin
// plugins only (kustomize.go). Any other type wraps ErrUnsupported. ApplyMutations runs a
// Release's spec.mutations on the rendered objects (mutations.go).
//
// # Manifests
//
// Every key of Content.Files (a file name, or a ConfigMap key) is parsed, in sorted key order,
// whatever its extension. A file holds multi-document YAML separated by "---" lines, or, when its
// first non-space character is "{", a stream of JSON objects. Empty and comment-only documents are
// skipped. A List (kind "List", or a kind ending in "List" that has "items" and no metadata.name)
// is expanded into its items. Every object needs apiVersion, kind and a valid metadata.name.
// Documents are numbered from 1 in the order the apimachinery YAML reader yields them, skipped
// ones included; errors also give the line in the file, which is exact.
//
// # Normalisation
//
// For each object, Capabilities.Scope decides its namespace: a namespaced kind without a
// namespace gets Options.Namespace (the Release's targetNamespace), a cluster-scoped kind loses
// any namespace, and a kind the target cluster does not serve (for example a custom resource whose
// CRD is in the same render) is left as written, for the dry run to judge. Server-populated fields
// (metadata.resourceVersion, uid, creationTimestamp, managedFields, generation, and status) are
// removed. Two objects with the same group, kind, namespace and name are an error.
//
// # Order and errors
//
// The output keeps the input order (files sorted, documents and List items in order), so the same
// content always renders to the same slice and the same render reference (RenderRef). Every
// failure caused by the content is an *Error naming the file, the document and, where it can be
// computed, the line; the release controller reports it with reason RenderFailed.
package render
