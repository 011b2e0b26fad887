// Package observer runs convoy's two observer loops on one Release informer; each has its own
// named, rate-limited workqueue and starts with the shard gate. They share no memory with the
// release controller and talk to it only through API objects.
//
// # Drift loop ("drift" queue)
//
// (*Controller).syncHandler checks whether the target cluster still holds what a Release wants.
// renderDesired selects the desired objects: the pinned render (the fresh render when the pin names
// it, else read from the render store the release controller writes), then the last healthy render
// of a RolledBack rollout (from the store), else the source rendered through pkg/desired, the very
// render path the release controller uses (the same *desired.Renderer in one process), mutations
// included; hooks are never part of the compared set. Until status.lastSuccessful names the
// desired render, the release controller has not applied it: InSync is Unknown with reason
// NotApplied, no object is read, no sync is requested, and the check is repeated after 10 s,
// doubling up to 2 min (at most syncPolicy.interval). Otherwise diffObjects reads each live object
// and sends it as a server-side apply dry run under the field manager convoy, prepared exactly as
// the deployer applies it (deployer.Prepare): an object differs when the dry run would change a
// field convoy manages (deployer.ChangedFields), and a missing object is drift. writeInSync writes
// the InSync condition and status.drift (the first 20 drifted objects) with server-side apply
// under convoy-observe; an undetermined drift (no render store, a render the store lacks, a store
// or cluster that cannot be read, a failed render) is Unknown and is not retried before the next
// check. In Automatic mode, requestSync calls POST /sync of the sync API with the controller's own
// token. scheduleRecheck requeues after syncPolicy.interval; after a /sync request it rechecks
// within driftRecheckAfterSync, so InSync turns True soon after the repair. A Release being
// deleted is ignored.
//
// # Health loop ("health" queue)
//
// The health loop assesses every ReleaseInventory entry on the target (pkg/health), writes the
// per-object, per-wave and per-hook health to the ReleaseInventory status, and the verdict with
// the inventory's renderRef to the Release (Healthy condition and status.health, field manager
// convoy-health). It is woken by Release and ReleaseInventory spec changes and polls every
// Config.HealthInterval. For a Release being deleted it only polls the delete-phase hooks.
// Statuses are written only when something but the assessment time changed, so assessedAt is
// when the current assessment was first made.
//
// # Events
//
// Both loops enqueue a Release on create, delete, generation or deletion-timestamp changes and on
// informer resyncs; the health loop also on ReleaseInventory create, delete and spec (generation)
// changes. A status write or a change of the sync annotations wakes neither loop.
package observer
