package desired

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// defaultValuesKey is the data key of a valuesFrom layer that names none.
const defaultValuesKey = "values.yaml"

// resolveValueLayers merges the Release's Helm values: the valuesFrom layers in order, then the
// inline values (the chart defaults, the weakest layer, are merged by the renderer). Layers are read
// from the Release's own namespace only. A missing layer that is not optional is an error naming
// it; the content of a Secret never appears in an error.
func (r *Renderer) resolveValueLayers(rel *v1alpha1.Release) (map[string]any, error) {
	out := map[string]any{}
	for i, ref := range rel.Spec.ValuesFrom {
		key := ref.Key
		if key == "" {
			key = defaultValuesKey
		}
		name := fmt.Sprintf("valuesFrom[%d]: %s %s/%s key %s", i, ref.Kind, rel.Namespace, ref.Name, key)
		data, found, err := r.valuesLayer(rel.Namespace, ref.Kind, ref.Name, key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if !found {
			if ref.Optional {
				continue
			}
			return nil, fmt.Errorf("%s not found", name)
		}
		layer, err := parseValues(data, ref.Kind == "Secret")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		mergeValues(out, layer)
	}
	if rel.Spec.Values != nil && len(rel.Spec.Values.Raw) > 0 {
		layer, err := parseValues(rel.Spec.Values.Raw, false)
		if err != nil {
			return nil, fmt.Errorf("spec.values: %w", err)
		}
		mergeValues(out, layer)
	}
	return out, nil
}

// valuesLayer reads one data key of a ConfigMap or Secret; found is false when the object or the
// key is missing.
func (r *Renderer) valuesLayer(namespace, kind, name, key string) (data []byte, found bool, err error) {
	switch kind {
	case "ConfigMap":
		if r.ConfigMaps == nil {
			return nil, false, fmt.Errorf("this controller reads no ConfigMaps")
		}
		cm, err := r.ConfigMaps.ConfigMaps(namespace).Get(name)
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("reading: %w", err)
		}
		if v, ok := cm.Data[key]; ok {
			return []byte(v), true, nil
		}
		v, ok := cm.BinaryData[key]
		return v, ok, nil
	case "Secret":
		if r.Secrets == nil {
			return nil, false, fmt.Errorf("this controller reads no Secrets")
		}
		s, err := r.Secrets.Secrets(namespace).Get(name)
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("reading: %w", err)
		}
		v, ok := s.Data[key]
		return v, ok, nil
	default:
		return nil, false, fmt.Errorf("kind must be ConfigMap or Secret")
	}
}

// yamlLine finds the line number at the start of a YAML error message, where the parser puts it;
// further on, the message may quote the content.
var yamlLine = regexp.MustCompile(`^(?:error converting YAML to JSON: )?yaml: line (\d+):`)

// parseValues parses a YAML (or JSON) map of values. For a secret layer the parser's message,
// which may quote the content, is replaced by the line alone.
func parseValues(data []byte, secret bool) (map[string]any, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		if secret {
			// A line past the content's last "\n" line (the parser also breaks lines at a lone
			// "\r") is left out: only a number that cannot come from the content is shown.
			if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
				if line, _ := strconv.Atoi(m[1]); line >= 1 && line <= bytes.Count(data, []byte("\n"))+1 {
					return nil, fmt.Errorf("invalid YAML at line %d", line)
				}
			}
			return nil, fmt.Errorf("invalid YAML")
		}
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	if v == nil {
		return map[string]any{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("values must be a YAML map")
	}
	return m, nil
}

// mergeValues merges src into dst: maps merge key by key, any other value of src replaces dst's
// (as Helm merges -f files). A null in src is kept, so it can remove a chart default.
func mergeValues(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}
