package render

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"helm.sh/helm/v3/pkg/chart"
)

// schemaURL is the location the chart's values.schema.json is compiled at, as Helm names it.
const schemaURL = "file:///values.schema.json"

// validateValues checks values against the values.schema.json of chrt and, for each subchart
// that has values, of the subchart, with Helm's rules and messages (chartutil.ValidateAgainstSchema).
//
// Unlike Helm, the schema compiler loads no document: a chart is tenant content, and Helm's loader
// would make the controller read its own files (a "$ref" to file:///var/run/secrets/... or to a
// device that never ends) or fetch any URL, link-local and metadata addresses included. So a
// "$ref" or "$schema" naming another document is refused; references inside values.schema.json
// ("#/definitions/x") and the JSON Schema drafts' own meta-schemas, which the library embeds, work
// as before. An unresolved urn: reference counts as an empty schema, as in Helm.
func validateValues(chrt *chart.Chart, values map[string]any) error {
	if err := validateChartValues(chrt, values); err != nil {
		return fmt.Errorf("values don't meet the specifications of the schema(s) in the following chart(s):\n%w", err)
	}
	return nil
}

// validateChartValues is Helm's ValidateAgainstSchema with the restricted compiler.
func validateChartValues(chrt *chart.Chart, values map[string]any) error {
	var sb strings.Builder
	if chrt.Schema != nil {
		if err := validateAgainstSchema(values, chrt.Schema); err != nil {
			fmt.Fprintf(&sb, "%s:\n%s", chrt.Name(), err.Error())
		}
	}
	for _, sub := range chrt.Dependencies() {
		raw, ok := values[sub.Name()]
		if !ok || raw == nil {
			continue
		}
		subValues, ok := raw.(map[string]any)
		if !ok {
			fmt.Fprintf(&sb, "%s:\ninvalid type for values: expected object (map), got %T\n", sub.Name(), raw)
			continue
		}
		if err := validateChartValues(sub, subValues); err != nil {
			sb.WriteString(err.Error())
		}
	}
	if sb.Len() > 0 {
		return errors.New(sb.String())
	}
	return nil
}

// validateAgainstSchema compiles one values.schema.json without loading anything and validates
// values with it.
func validateAgainstSchema(values map[string]any, schemaJSON []byte) (err error) {
	defer func() {
		// Helm guards the library the same way: a schema must not crash the controller.
		if r := recover(); r != nil {
			err = fmt.Errorf("unable to validate schema: %v", r)
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return fmt.Errorf("values.schema.json is not valid JSON: %w", err)
	}
	compiler := jsonschema.NewCompiler()
	compiler.UseLoader(noLoader{})
	if err := compiler.AddResource(schemaURL, doc); err != nil {
		return err
	}
	validator, err := compiler.Compile(schemaURL)
	if err != nil {
		return err
	}
	if err := validator.Validate(values); err != nil {
		msg := strings.TrimPrefix(err.Error(), "jsonschema validation failed with '"+schemaURL+"#'\n")
		return errors.New(msg + "\n")
	}
	return nil
}

// errExternalSchema is the cause of a refused schema load.
var errExternalSchema = errors.New("values.schema.json may only refer to itself: a $ref or $schema " +
	"naming another document (a file or URL) is not loaded")

// noLoader loads no document: the compiler asks it only for documents that are neither
// values.schema.json itself nor an embedded meta-schema.
type noLoader struct{}

// Load refuses every URL but urn:, which Helm resolves to the permissive schema true.
func (noLoader) Load(url string) (any, error) {
	if strings.HasPrefix(url, "urn:") {
		return true, nil
	}
	return nil, errExternalSchema
}
