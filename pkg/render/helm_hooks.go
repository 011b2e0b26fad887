package render

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// Helm's hook annotations, read on rendered objects.
const (
	helmHookAnnotation             = "helm.sh/hook"
	helmHookDeletePolicyAnnotation = "helm.sh/hook-delete-policy"
	helmHookWeightAnnotation       = "helm.sh/hook-weight"
)

// Convoy annotations a Helm hook maps to, next to v1alpha1.HookAnnotation.
const (
	// HookDeletePolicyAnnotation carries a Helm hook's delete policies, comma-separated, in convoy's
	// spelling: BeforeHookCreation, HookSucceeded, HookFailed.
	HookDeletePolicyAnnotation = "convoy.kumodo.io/hook-delete-policy"
	// HookWeightAnnotation carries a Helm hook's weight (an integer; lower runs first in a phase).
	HookWeightAnnotation = "convoy.kumodo.io/hook-weight"
)

// Convoy hook phases, the values of v1alpha1.HookAnnotation.
const (
	HookPreSync    = "preSync"
	HookPostSync   = "postSync"
	HookPreDelete  = "preDelete"
	HookPostDelete = "postDelete"
)

// helmHookPhases maps Helm hook events to convoy phases. Rollback events have no convoy phase
// (convoy's rollback re-applies a stored render) and test events are never run.
var helmHookPhases = map[string]string{
	"pre-install":  HookPreSync,
	"pre-upgrade":  HookPreSync,
	"post-install": HookPostSync,
	"post-upgrade": HookPostSync,
	"pre-delete":   HookPreDelete,
	"post-delete":  HookPostDelete,
}

var helmDeletePolicies = map[string]string{
	"before-hook-creation": "BeforeHookCreation",
	"hook-succeeded":       "HookSucceeded",
	"hook-failed":          "HookFailed",
}

// mapHelmHooks gives every object with a helm.sh/hook annotation the convoy hook annotations and
// drops test hooks and hooks with only rollback events. An object whose events map to two convoy
// phases is an error: a convoy hook runs in one phase.
func mapHelmHooks(objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	out := objs[:0]
	for _, obj := range objs {
		ann := obj.GetAnnotations()
		events, ok := ann[helmHookAnnotation]
		if !ok {
			out = append(out, obj)
			continue
		}
		var phases []string
		test := false
		for _, ev := range strings.Split(events, ",") {
			ev = strings.TrimSpace(ev)
			if ev == "test" || ev == "test-success" || ev == "test-failure" {
				test = true
			}
			if p, ok := helmHookPhases[ev]; ok && !slices.Contains(phases, p) {
				phases = append(phases, p)
			}
		}
		if test || len(phases) == 0 {
			continue
		}
		if len(phases) > 1 {
			return nil, &Error{Err: fmt.Errorf("%s %s: helm hook events %q map to convoy phases %s; a convoy hook has one phase",
				obj.GetKind(), obj.GetName(), events, strings.Join(phases, " and "))}
		}
		ann[v1alpha1.HookAnnotation] = phases[0]
		if policies, ok := ann[helmHookDeletePolicyAnnotation]; ok {
			var mapped []string
			for _, p := range strings.Split(policies, ",") {
				p = strings.TrimSpace(p)
				m, ok := helmDeletePolicies[p]
				if !ok {
					return nil, &Error{Err: fmt.Errorf("%s %s: unknown helm hook delete policy %q", obj.GetKind(), obj.GetName(), p)}
				}
				mapped = append(mapped, m)
			}
			ann[HookDeletePolicyAnnotation] = strings.Join(mapped, ",")
		}
		if w, ok := ann[helmHookWeightAnnotation]; ok {
			ann[HookWeightAnnotation] = strings.TrimSpace(w)
		}
		obj.SetAnnotations(ann)
		out = append(out, obj)
	}
	return out, nil
}
