package render

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRenderHelmValuesSchema: values.schema.json is enforced as Helm enforces it, and a schema
// that refers to another document (a device, a local file, a URL) or to itself in a loop fails
// fast with an *Error, without reading the file or sending the request.
func TestRenderHelmValuesSchema(t *testing.T) {
	var requests atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte(`{"type": "object"}`))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	remote := "http://" + ln.Addr().String()

	const refused = "may only refer to itself"
	tests := []struct {
		name    string
		schema  string
		values  map[string]any
		wantErr string // "" for success
	}{{
		name:   "valid values",
		schema: `{"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1}}}`,
	}, {
		name:    "invalid values",
		schema:  `{"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 2}}}`,
		wantErr: "minimum",
	}, {
		name:   "local $ref and a draft meta-schema",
		schema: `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": "#/$defs/top", "$defs": {"top": {"type": "object"}}}`,
	}, {
		name:    "local $ref catches invalid values",
		schema:  `{"$ref": "#/definitions/top", "definitions": {"top": {"properties": {"image": {"type": "integer"}}}}}`,
		wantErr: "want integer",
	}, {
		name:    "$ref to a device file",
		schema:  `{"$ref": "file:///dev/zero"}`,
		wantErr: refused,
	}, {
		name:    "$ref to a local file",
		schema:  `{"$ref": "file:///etc/hostname"}`,
		wantErr: refused,
	}, {
		name:    "relative $ref resolves to a local file",
		schema:  `{"$ref": "other.json"}`,
		wantErr: refused,
	}, {
		name:    "$ref to a URL",
		schema:  `{"$ref": "` + remote + `/x.json"}`,
		wantErr: refused,
	}, {
		name:    "$schema naming a URL",
		schema:  `{"$schema": "` + remote + `/meta"}`,
		wantErr: refused,
	}, {
		name:    "$ref to itself",
		schema:  `{"$ref": "#"}`,
		wantErr: "reference cycle",
	}, {
		name:    "$ref loop",
		schema:  `{"$ref": "#/definitions/a", "definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}}}`,
		wantErr: "reference cycle",
	}, {
		name:   "unresolved urn: is permissive, as in Helm",
		schema: `{"$ref": "urn:example:unknown"}`,
	}, {
		name:    "not JSON",
		schema:  `{"type": `,
		wantErr: "not valid JSON",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := testChart()
			files["web/values.schema.json"] = tt.schema
			start := time.Now()
			_, err := renderChart(t, files, tt.values)
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("render took %s", took)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Render: %v", err)
				}
				return
			}
			var rerr *Error
			if !errors.As(err, &rerr) || rerr.File != "web/values.schema.json" {
				t.Fatalf("want an *Error in web/values.schema.json, got %T %v", err, err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the schema compiler sent %d requests, want none", n)
	}
}

// TestRenderHelmSubchartSchema: a subchart's schema is checked against its values, and its
// references are refused like the parent's.
func TestRenderHelmSubchartSchema(t *testing.T) {
	files := testChart()
	files["web/charts/sidecar/values.schema.json"] = `{"properties": {"enabled": {"type": "boolean"}, "port": {"type": "integer"}}}`
	if _, err := renderChart(t, files, map[string]any{"sidecar": map[string]any{"port": 80}}); err != nil {
		t.Fatalf("valid subchart values: %v", err)
	}
	_, err := renderChart(t, files, map[string]any{"sidecar": map[string]any{"port": "eighty"}})
	if err == nil || !strings.Contains(err.Error(), "sidecar:") || !strings.Contains(err.Error(), "want integer") {
		t.Errorf("invalid subchart values: error %v, want one naming sidecar and the type", err)
	}
	files["web/charts/sidecar/values.schema.json"] = `{"$ref": "file:///etc/passwd"}`
	_, err = renderChart(t, files, nil)
	if err == nil || !strings.Contains(err.Error(), "may only refer to itself") {
		t.Errorf("subchart $ref to a file: error %v, want a refusal", err)
	}
}
