package desired

import (
	"errors"
	"slices"
	"strings"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// redacted replaces a secret value in a message.
const redacted = "[redacted]"

// minSecretLength is the shortest value redacted: shorter strings (a port, "yes") would blank out
// ordinary words of the message and hide little.
const minSecretLength = 4

// redactSecrets returns err with every string value of the Release's valuesFrom Secret layers
// replaced by [redacted]. A chart may print its values into a template error (`fail`, `required`,
// a type error), and render errors go to the Release status, Events and logs, which a Secret's
// value must never reach. err is returned as is when it holds no such value; otherwise the
// message is rebuilt (an *Error keeps its reason) and the chain is dropped with the text.
func (r *Renderer) redactSecrets(rel *v1alpha1.Release, err error) error {
	if err == nil {
		return nil
	}
	secrets := r.secretStrings(rel)
	msg := err.Error()
	redactedMsg := redactStrings(msg, secrets)
	if redactedMsg == msg {
		return err
	}
	var derr *Error
	if errors.As(err, &derr) {
		return &Error{Reason: derr.Reason, Transient: derr.Transient, Err: errors.New(redactedMsg)}
	}
	return errors.New(redactedMsg)
}

// secretStrings reads the Release's valuesFrom Secret layers and returns their string values
// (map values and list items at any depth, at least minSecretLength long), longest first so that a
// value containing another is replaced whole. Layers that cannot be read or parsed give nothing:
// their errors never quote them.
func (r *Renderer) secretStrings(rel *v1alpha1.Release) []string {
	var out []string
	for _, ref := range rel.Spec.ValuesFrom {
		if ref.Kind != "Secret" {
			continue
		}
		key := ref.Key
		if key == "" {
			key = defaultValuesKey
		}
		data, found, err := r.valuesLayer(rel.Namespace, ref.Kind, ref.Name, key)
		if err != nil || !found {
			continue
		}
		layer, err := parseValues(data, true)
		if err != nil {
			continue
		}
		out = collectStrings(out, layer)
	}
	slices.SortFunc(out, func(a, b string) int {
		if d := len(b) - len(a); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(out)
}

// collectStrings appends the strings of v (a parsed YAML value) to out.
func collectStrings(out []string, v any) []string {
	switch t := v.(type) {
	case string:
		if len(t) >= minSecretLength {
			out = append(out, t)
		}
	case map[string]any:
		for _, e := range t {
			out = collectStrings(out, e)
		}
	case []any:
		for _, e := range t {
			out = collectStrings(out, e)
		}
	}
	return out
}

// redactStrings replaces every occurrence of each secret in msg, and of its lines for a
// multi-line value (a message may quote one line of a certificate or key).
func redactStrings(msg string, secrets []string) string {
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, redacted)
		if strings.Contains(s, "\n") {
			for _, line := range strings.Split(s, "\n") {
				if line = strings.TrimSpace(line); len(line) >= minSecretLength {
					msg = strings.ReplaceAll(msg, line, redacted)
				}
			}
		}
	}
	return msg
}
