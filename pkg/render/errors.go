package render

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnsupported is wrapped by the error Render returns for a content type this build cannot
// render (helm and kustomize for now).
var ErrUnsupported = errors.New("content type not supported by this build")

// Error is a render failure caused by the content (reason RenderFailed). It names the file and,
// where known, the document (1-based, 0 when the failure is not tied to one) and the line in the
// file (1-based, 0 when unknown).
type Error struct {
	// File is the file name or ConfigMap key.
	File string
	// Doc is the 1-based document index in the file, 0 when unknown.
	Doc int
	// Line is the 1-based line in the file, 0 when unknown.
	Line int
	// Err is the cause.
	Err error
}

// Error formats the failure as `deploy.yaml: document 2, line 7: <msg>`, leaving out what is unknown.
func (e *Error) Error() string {
	var parts []string
	if e.File != "" {
		parts = append(parts, e.File)
	}
	switch {
	case e.Doc > 0 && e.Line > 0:
		parts = append(parts, fmt.Sprintf("document %d, line %d", e.Doc, e.Line))
	case e.Doc > 0:
		parts = append(parts, fmt.Sprintf("document %d", e.Doc))
	case e.Line > 0:
		parts = append(parts, fmt.Sprintf("line %d", e.Line))
	}
	msg := "render failed"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	parts = append(parts, msg)
	return strings.Join(parts, ": ")
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }
