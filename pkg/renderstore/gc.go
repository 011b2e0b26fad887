package renderstore

import (
	"time"
)

// Retention bounds a Release's history: the newest MaxHistory entries younger than MaxAge are kept.
// Zero values do not bound.
type Retention struct {
	MaxHistory int
	MaxAge     time.Duration
}

// GCPlan is what garbage collection of one Release does.
type GCPlan struct {
	// History is the log to keep, oldest first.
	History []Entry
	// TrimHistory is true when History drops entries of the current log.
	TrimHistory bool
	// DeleteRenders are the stored renders to delete, sorted.
	DeleteRenders []string
}

// PlanGC decides a garbage collection: history entries beyond MaxHistory or older than MaxAge go,
// except the newest entry, which always stays; a stored render goes when no kept entry refers to it
// and it is not protected (lastSuccessful, lastAttempted, the pin, lastHealthy). So exactly the
// renders of the kept entries plus the protected ones remain.
func PlanGC(history []Entry, stored []string, policy Retention, protected []string, now time.Time) GCPlan {
	keep := history
	if policy.MaxHistory > 0 && len(keep) > policy.MaxHistory {
		keep = keep[len(keep)-policy.MaxHistory:]
	}
	if policy.MaxAge > 0 && len(keep) > 0 {
		cutoff := now.Add(-policy.MaxAge)
		first := len(keep) - 1 // the newest entry stays whatever its age
		for i, e := range keep[:len(keep)-1] {
			if !e.Time.Before(cutoff) {
				first = i
				break
			}
		}
		keep = keep[first:]
	}
	plan := GCPlan{History: append([]Entry(nil), keep...), TrimHistory: len(keep) != len(history)}

	referenced := map[string]bool{}
	for _, e := range keep {
		referenced[e.RenderRef] = true
	}
	for _, ref := range protected {
		if ref != "" {
			referenced[ref] = true
		}
	}
	for _, ref := range sortedUnique(append([]string(nil), stored...)) {
		if !referenced[ref] {
			plan.DeleteRenders = append(plan.DeleteRenders, ref)
		}
	}
	return plan
}
