// Package inventory keeps the ReleaseInventory: the record of every object a Release applied to its
// target cluster, so that convoy can always find, prune and assess them.
//
// # Entries and keys
//
// An entry names an object by group, version, kind, namespace and name, plus its sync wave.
// Key identifies an entry regardless of version and wave (group/kind/namespace/name): an object
// whose apiVersion or wave changed between two renders is still the same object, so it is never
// pruned for that.
//
// # Crash safety
//
// The release controller writes the inventory in two steps. After each wave it writes the Union of
// the previous inventory and the objects applied so far, so a crash at any point leaves every
// applied object findable. After pruning the Stale entries (previous entries whose Key is not in
// the applied set) it writes the exact applied set.
//
// # Writing
//
// Put writes the spec with server-side apply under the field manager convoy-release; the health
// loop writes the status under its own manager, so neither overwrites the other. The
// ReleaseInventory has the Release's name and namespace and a controller ownerReference to it, so
// the garbage collector removes it with the Release. A spec too large to store is refused before
// anything is written (ErrTooLarge).
package inventory
