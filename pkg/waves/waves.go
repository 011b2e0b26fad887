package waves

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// waveHealthRequired is the value of the wave-health annotation that gates a wave on health.
const waveHealthRequired = "required"

// Wave is one sync wave: objects applied together.
type Wave struct {
	// Number is the wave's sync-wave annotation value.
	Number int32
	// Objects are the wave's objects in apply order.
	Objects []*unstructured.Unstructured
	// NeedsHealth is true when an object of the wave asks for the previous wave to be healthy.
	NeedsHealth bool
}

// Group groups objects into waves by their sync-wave annotation, waves ascending, each wave in
// apply order (see the package documentation). The objects are not copied.
func Group(objs []*unstructured.Unstructured) ([]Wave, error) {
	byNumber := map[int32]*Wave{}
	for _, obj := range objs {
		n, err := Of(obj)
		if err != nil {
			return nil, err
		}
		w, ok := byNumber[n]
		if !ok {
			w = &Wave{Number: n}
			byNumber[n] = w
		}
		w.Objects = append(w.Objects, obj)
		if strings.EqualFold(obj.GetAnnotations()[v1alpha1.WaveHealthAnnotation], waveHealthRequired) {
			w.NeedsHealth = true
		}
	}
	waves := make([]Wave, 0, len(byNumber))
	for _, n := range slices.Sorted(maps.Keys(byNumber)) {
		w := byNumber[n]
		slices.SortStableFunc(w.Objects, func(a, b *unstructured.Unstructured) int {
			return cmp.Compare(kindRank(a.GetKind()), kindRank(b.GetKind()))
		})
		waves = append(waves, *w)
	}
	return waves, nil
}

// errNilObject is returned for a nil object.
var errNilObject = errors.New("nil object")

// Of returns an object's wave number (0 when unannotated).
func Of(obj *unstructured.Unstructured) (int32, error) {
	if obj == nil || obj.Object == nil {
		return 0, fmt.Errorf("sync wave: %w", errNilObject)
	}
	v, ok := obj.GetAnnotations()[v1alpha1.SyncWaveAnnotation]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s: annotation %s: value %q is not an int32 integer: %w",
			describe(obj), v1alpha1.SyncWaveAnnotation, v, err)
	}
	return int32(n), nil
}

// describe names an object in messages: Kind.group namespace/name.
func describe(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	kind := gvk.Kind
	if gvk.Group != "" {
		kind += "." + gvk.Group
	}
	if ns := obj.GetNamespace(); ns != "" {
		return kind + " " + ns + "/" + obj.GetName()
	}
	return kind + " " + obj.GetName()
}
