// Package hooks reads the lifecycle hooks of a render: objects annotated convoy.kumodo.io/hook
// (Helm hook annotations are mapped to it by pkg/render). A hook is not part of the applied set; it
// runs once per render (and again on a forced sync) in one of five phases, under a name with a short
// suffix of its run, so two runs never share an object. The release controller runs them
// (runHookPhase); this package holds the pure parts: splitting, validating, naming and ordering.
package hooks

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/render"
)

// Phases of a hook, the values of v1alpha1.HookAnnotation.
const (
	PreSync    = "preSync"
	PostSync   = "postSync"
	SyncFailed = "syncFailed"
	PreDelete  = "preDelete"
	PostDelete = "postDelete"
)

// Phases lists every phase in the order a Release's life runs them.
var Phases = []string{PreSync, PostSync, SyncFailed, PreDelete, PostDelete}

// On-failure policies, the values of v1alpha1.HookOnFailureAnnotation.
const (
	OnFailureFail     = "Fail"
	OnFailureContinue = "Continue"
)

// Delete policies, the values of render.HookDeletePolicyAnnotation (Helm's, in convoy's spelling).
const (
	BeforeHookCreation = "BeforeHookCreation"
	HookSucceeded      = "HookSucceeded"
	HookFailed         = "HookFailed"
)

// States of a hook run.
const (
	Running   = "Running"
	Succeeded = "Succeeded"
	Failed    = "Failed"
)

// Hook is one hook object of a render, named for one run.
type Hook struct {
	// Phase is the hook's phase.
	Phase string
	// Name is the rendered name; Object carries the run name.
	Name string
	// Object is a copy of the rendered object renamed for the run.
	Object *unstructured.Unstructured
	// OnFailure is OnFailureFail or OnFailureContinue.
	OnFailure string
	// DeletePolicies are the delete policies; Helm's default is BeforeHookCreation.
	DeletePolicies []string
	// Weight orders hooks within a phase: lower weights run (and finish) first.
	Weight int
}

// HasPolicy reports whether the hook carries a delete policy.
func (h Hook) HasPolicy(p string) bool { return slices.Contains(h.DeletePolicies, p) }

// IsHook reports whether a rendered object is a hook.
func IsHook(obj *unstructured.Unstructured) bool {
	_, ok := obj.GetAnnotations()[v1alpha1.HookAnnotation]
	return ok
}

// Split separates a render into the objects it applies and its hook objects, each in render order.
func Split(objs []*unstructured.Unstructured) (applied, hookObjs []*unstructured.Unstructured) {
	for _, obj := range objs {
		if IsHook(obj) {
			hookObjs = append(hookObjs, obj)
		} else {
			applied = append(applied, obj)
		}
	}
	return applied, hookObjs
}

// Validate checks the hook annotations of a render: a known phase, a known on-failure policy, known
// delete policies and an integer weight. The error names the object.
func Validate(objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		if !IsHook(obj) {
			continue
		}
		if _, err := parse(obj); err != nil {
			return err
		}
	}
	return nil
}

// ForPhase returns the hooks of one phase, renamed for the run runID, in run order: weight, then
// kind and name.
func ForPhase(objs []*unstructured.Unstructured, phase, runID string) ([]Hook, error) {
	var out []Hook
	for _, obj := range objs {
		if obj.GetAnnotations()[v1alpha1.HookAnnotation] != phase {
			continue
		}
		h, err := parse(obj)
		if err != nil {
			return nil, err
		}
		h.Object = obj.DeepCopy()
		h.Object.SetName(RunName(h.Name, runID))
		out = append(out, h)
	}
	slices.SortStableFunc(out, func(a, b Hook) int {
		return cmp.Or(cmp.Compare(a.Weight, b.Weight), cmp.Compare(a.Object.GetKind(), b.Object.GetKind()),
			cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// parse reads the hook annotations of one object.
func parse(obj *unstructured.Unstructured) (Hook, error) {
	ann := obj.GetAnnotations()
	ref := obj.GetKind() + " " + obj.GetName()
	h := Hook{Phase: ann[v1alpha1.HookAnnotation], Name: obj.GetName(), OnFailure: OnFailureFail,
		DeletePolicies: []string{BeforeHookCreation}}
	if !slices.Contains(Phases, h.Phase) {
		return Hook{}, fmt.Errorf("%s: annotation %s: unknown hook phase %q (one of %s)", ref,
			v1alpha1.HookAnnotation, h.Phase, strings.Join(Phases, ", "))
	}
	if v, ok := ann[v1alpha1.HookOnFailureAnnotation]; ok {
		if v != OnFailureFail && v != OnFailureContinue {
			return Hook{}, fmt.Errorf("%s: annotation %s: %q is neither %s nor %s", ref,
				v1alpha1.HookOnFailureAnnotation, v, OnFailureFail, OnFailureContinue)
		}
		h.OnFailure = v
	}
	if v, ok := ann[render.HookDeletePolicyAnnotation]; ok {
		h.DeletePolicies = nil
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			if p != BeforeHookCreation && p != HookSucceeded && p != HookFailed {
				return Hook{}, fmt.Errorf("%s: annotation %s: unknown delete policy %q", ref, render.HookDeletePolicyAnnotation, p)
			}
			h.DeletePolicies = append(h.DeletePolicies, p)
		}
	}
	if v, ok := ann[render.HookWeightAnnotation]; ok {
		w, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return Hook{}, fmt.Errorf("%s: annotation %s: %q is not an integer", ref, render.HookWeightAnnotation, v)
		}
		h.Weight = w
	}
	return h, nil
}

// RunID identifies one run of a render's hooks: the render, and the forced sync that re-runs them.
func RunID(renderRef string, forceSyncAt *time.Time) string {
	if forceSyncAt == nil {
		return renderRef
	}
	return renderRef + "@" + forceSyncAt.UTC().Format(time.RFC3339)
}

// maxNameLength keeps run names valid DNS labels, which Jobs need for their pod labels.
const maxNameLength = 63

// RunName is a hook's object name for one run: its rendered name, a dash and 8 hex digits of the run.
// A long name is cut so the result stays a DNS label.
func RunName(name, runID string) string {
	sum := sha256.Sum256([]byte(runID))
	suffix := "-" + hex.EncodeToString(sum[:4])
	if len(name)+len(suffix) > maxNameLength {
		name = strings.TrimRight(name[:maxNameLength-len(suffix)], "-.")
	}
	return name + suffix
}
