package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// errNilObject is returned by RenderRef for a nil object in the slice.
var errNilObject = errors.New("nil object")

// refPrefix starts every render reference.
const refPrefix = "sha256:"

// RenderRef returns "sha256:" + the hex SHA-256 of the canonical JSON of objs in order (hooks
// included): each object's map marshalled by encoding/json, which sorts map keys, followed by a
// newline. The same objects give the same reference on every replica and every run.
func RenderRef(objs []*unstructured.Unstructured) (string, error) {
	h := sha256.New()
	for i, obj := range objs {
		if obj == nil || obj.Object == nil {
			return "", fmt.Errorf("render ref: object %d: %w", i, errNilObject)
		}
		data, err := json.Marshal(obj.Object)
		if err != nil {
			return "", fmt.Errorf("render ref: object %d (%s %s): %w", i, obj.GetKind(), obj.GetName(), err)
		}
		h.Write(data)
		h.Write([]byte{'\n'})
	}
	return refPrefix + hex.EncodeToString(h.Sum(nil)), nil
}

// ShortRef returns the first 12 hex digits of a render reference, for display ("" for "").
func ShortRef(ref string) string {
	hexPart := strings.TrimPrefix(ref, refPrefix)
	if len(hexPart) > 12 {
		return hexPart[:12]
	}
	return hexPart
}
