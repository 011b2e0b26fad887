package render

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// renderManifests parses every file in sorted name order and returns the normalised objects.
func renderManifests(ctx context.Context, files map[string]string, caps Capabilities, opts Options) ([]*unstructured.Unstructured, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)

	b := newBuilder(caps, opts)
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("render manifests: %w", err)
		}
		data := []byte(files[name])
		var err error
		if utilyaml.IsJSONBuffer(data) {
			err = parseJSONStream(b, name, data)
		} else {
			err = parseYAMLDocuments(b, name, data)
		}
		if err != nil {
			return nil, err
		}
	}
	return b.objs, nil
}

// parseYAMLDocuments splits data into "---" separated documents with the apimachinery YAML reader
// and converts each to JSON with sigs.k8s.io/yaml.
func parseYAMLDocuments(b *builder, file string, data []byte) error {
	lines := scanDocLines(data)
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		chunk, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			// The reader fails only on a separator line followed by something other than a comment.
			return &Error{File: file, Doc: doc, Line: lines.badSeparator, Err: fmt.Errorf("invalid YAML: %w", err)}
		}
		start := 0
		if doc <= len(lines.starts) {
			start = lines.starts[doc-1]
		}
		jsonData, err := yaml.YAMLToJSON(chunk)
		if err != nil {
			return yamlError(file, doc, start, chunk, err)
		}
		if err := b.addDocument(file, doc, firstContentLine(chunk, start), jsonData); err != nil {
			return err
		}
	}
}

// parseJSONStream reads a stream of JSON values; each value is one document.
func parseJSONStream(b *builder, file string, data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	for doc := 1; ; doc++ {
		offset := dec.InputOffset()
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			line := 0
			var syntaxErr *json.SyntaxError
			switch {
			case errors.As(err, &syntaxErr):
				line = lineAt(data, syntaxErr.Offset)
			case errors.Is(err, io.ErrUnexpectedEOF):
				line = lineAt(data, int64(len(data)))
			}
			return &Error{File: file, Doc: doc, Line: line, Err: fmt.Errorf("invalid JSON: %w", err)}
		}
		// InputOffset is where the previous value ended; the document starts after the white space.
		rest := data[offset:]
		start := lineAt(data, offset+int64(len(rest)-len(bytes.TrimLeft(rest, " \t\r\n"))))
		if err := b.addDocument(file, doc, start, raw); err != nil {
			return err
		}
	}
}

// docLines locates in a file the documents the apimachinery YAML reader yields. The reader does
// not report positions, so this follows its rule: a document starts at the first line not yet
// read (a "---" line there is part of it) and runs up to the next line starting with "---", which
// ends it and is consumed.
type docLines struct {
	// starts holds the first line (1-based) of each document.
	starts []int
	// badSeparator is the first separator line followed by more than a comment, 0 when none.
	badSeparator int
}

// scanDocLines computes the docLines of data.
func scanDocLines(data []byte) docLines {
	var out docLines
	lines := bytes.Split(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		// A trailing newline (or empty input) does not start another line.
		lines = lines[:len(lines)-1]
	}
	isSeparator := func(i int) bool { return bytes.HasPrefix(lines[i], []byte("---")) }
	for i := range lines {
		if !isSeparator(i) {
			continue
		}
		if rest := bytes.TrimSpace(lines[i][3:]); len(rest) > 0 && rest[0] != '#' {
			out.badSeparator = i + 1
			break
		}
	}
	for start := 0; start < len(lines); {
		out.starts = append(out.starts, start+1)
		end := start + 1
		for end < len(lines) && !isSeparator(end) {
			end++
		}
		start = end + 1
	}
	return out
}

// firstContentLine returns the line of the first line of chunk that is not blank, a comment or a
// "---" separator, counting from start, the line of chunk's first line; it returns start when
// there is none or start is unknown.
func firstContentLine(chunk []byte, start int) int {
	if start == 0 {
		return 0
	}
	for i, line := range strings.Split(string(chunk), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed != "" && !strings.HasPrefix(trimmed, "#") && !strings.HasPrefix(line, "---") {
			return start + i
		}
	}
	return start
}

// lineAt returns the 1-based line of byte offset in data.
func lineAt(data []byte, offset int64) int {
	offset = min(max(offset, 0), int64(len(data)))
	return bytes.Count(data[:offset], []byte("\n")) + 1
}

// yamlLinePattern finds the document-relative line the YAML library puts in its messages.
var yamlLinePattern = regexp.MustCompile(`line (\d+): `)

// yamlError turns a YAML conversion error of document chunk starting at line start into an *Error
// carrying the line in the file, and drops the document-relative line from the message.
func yamlError(file string, doc, start int, chunk []byte, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	line := 0
	if m := yamlLinePattern.FindStringSubmatchIndex(msg); m != nil {
		rel, convErr := strconv.Atoi(msg[m[2]:m[3]])
		// The parser also breaks lines at a lone "\r": a line past the chunk's last "\n" line (or
		// the one after it, for an unexpected end) cannot be mapped to the file and is left out.
		if convErr == nil && start > 0 && rel <= bytes.Count(chunk, []byte("\n"))+1 {
			line = start + rel - 1
		}
		msg = msg[:m[0]] + msg[m[1]:]
	}
	// Keep err in the chain for callers that inspect it; the message carries the file line instead.
	return &Error{File: file, Doc: doc, Line: line, Err: &yamlSyntaxError{msg: "invalid YAML: " + msg, err: err}}
}

// yamlSyntaxError is a YAML library error with a message rewritten to file lines.
type yamlSyntaxError struct {
	msg string
	err error
}

func (e *yamlSyntaxError) Error() string { return e.msg }
func (e *yamlSyntaxError) Unwrap() error { return e.err }

// decodeDocument decodes one document's JSON into a generic value, numbers as int64 or float64
// the way unstructured objects hold them.
func decodeDocument(data []byte) (any, error) {
	var v any
	if err := utiljson.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("decode document: %w", err)
	}
	return positiveZero(v), nil
}

// positiveZero replaces every float -0 in v by 0. Encoded as "-0", a -0 decodes as the integer 0,
// so a render holding one would hash to another reference after the render store's JSON round
// trip and read back as corrupt.
func positiveZero(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			t[k] = positiveZero(child)
		}
	case []any:
		for i, child := range t {
			t[i] = positiveZero(child)
		}
	case float64:
		if t == 0 {
			return float64(0)
		}
	}
	return v
}
