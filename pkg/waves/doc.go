// Package waves orders the objects of a render into sync waves.
//
// # Waves
//
// An object's wave is the integer in its convoy.kumodo.io/sync-wave annotation (default 0,
// negative allowed, int32 range); a value that is not such an integer is an error naming the
// object. Group returns the waves in ascending order; the release controller applies one wave,
// then the next.
//
// # Order inside a wave
//
// Namespaces and CustomResourceDefinitions come first, so later objects find their namespace and
// the REST mapping can be refreshed for custom resources; then the kinds in the order Helm installs
// them; then every other kind. Kinds are compared by name only, as Helm does. Objects of the same
// rank keep their input order (the sort is stable), so the result is deterministic.
//
// # Health gates
//
// A wave's NeedsHealth is true when any of its objects carries
// convoy.kumodo.io/wave-health: required; the release controller then waits for the previous wave
// to be Healthy before applying it (syncPolicy.waveHealth: Required does the same for every wave).
package waves
