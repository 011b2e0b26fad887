package inventory

import (
	"slices"
	"strings"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// Key identifies an entry regardless of version and wave: group/kind/namespace/name.
func Key(e v1alpha1.InventoryEntry) string {
	return strings.Join([]string{e.Group, e.Kind, e.Namespace, e.Name}, "/")
}

// Union returns prev ∪ applied (applied wins on duplicates), sorted by Key for determinism.
func Union(prev, applied []v1alpha1.InventoryEntry) []v1alpha1.InventoryEntry {
	byKey := make(map[string]v1alpha1.InventoryEntry, len(prev)+len(applied))
	for _, e := range prev {
		byKey[Key(e)] = e
	}
	for _, e := range applied {
		byKey[Key(e)] = e
	}
	out := make([]v1alpha1.InventoryEntry, 0, len(byKey))
	for _, e := range byKey {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b v1alpha1.InventoryEntry) int { return strings.Compare(Key(a), Key(b)) })
	return out
}

// Stale returns the entries of prev whose Key is not in applied (what prune deletes), in prev's
// order, each once.
func Stale(prev, applied []v1alpha1.InventoryEntry) []v1alpha1.InventoryEntry {
	seen := make(map[string]bool, len(applied)+len(prev))
	for _, e := range applied {
		seen[Key(e)] = true
	}
	var out []v1alpha1.InventoryEntry
	for _, e := range prev {
		k := Key(e)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	return out
}
