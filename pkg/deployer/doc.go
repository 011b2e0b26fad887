// Package deployer applies, dry-runs and deletes the rendered objects of a Release on its target
// cluster with server-side apply.
//
// # Apply
//
// Deploy applies the objects of one sync wave with server-side apply under the field manager
// convoy, forcing conflicts, after adding the label app.kubernetes.io/managed-by=convoy and the
// owner annotation (release.core.convoy.kumodo.io/owner: <namespace>/<name> of the Release). Each
// object is first mapped to its resource, checked against the Cluster's policy and against its
// live owner, then sent as a dry run; when the dry-run result equals the live object the write is
// skipped. Every object yields a Change: created, configured or unchanged.
//
// # Ownership
//
// A live object whose owner annotation names another Release is a *ConflictError and is never
// taken over. A live object without the annotation is adopted: the apply adds it.
//
// # Policy
//
// Objects go to the Release's namespaces only: a namespaced object must be in the Release's
// target namespace or in one of the Cluster's spec.allowedNamespaces ("*" allows any), and a
// cluster-scoped object (Namespaces included) needs the Cluster's spec.allowClusterScoped.
// A violation is a *RejectedError, as is an object the API server refuses (invalid, forbidden,
// bad request, or its namespace does not exist). Every other failure is transient: a plain error.
//
// # Dry run
//
// DryRun judges a whole render before anything is applied: policy, ownership and a server-side
// apply with dryRun=All for every object. Objects that cannot be judged before their wave are
// skipped: those in a namespace that a Namespace object of the render creates, and those of a kind
// the cluster does not serve yet but whose CustomResourceDefinition is in the render.
//
// # New kinds
//
// The REST mapping is cached per cluster. On a no-match it is reset once per call; in Deploy a
// kind whose CRD exists but is not established yet (just applied) is waited for, up to
// crdEstablishTimeout.
//
// # Delete
//
// Delete removes inventoried objects with background propagation, highest wave first (within a
// wave: other kinds, then CRDs, then Namespaces). It deletes only what convoy can prove it applied
// for this Release: objects that are gone or already being deleted, that carry convoy.kumodo.io/prune: disabled, or whose
// owner annotation is missing or names another Release are skipped.
package deployer
