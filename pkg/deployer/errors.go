package deployer

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// RejectedError means the API server or the Cluster's policy rejected an object: retrying the same
// render cannot help (reason Unappliable).
type RejectedError struct {
	// Object is "Kind namespace/name".
	Object string
	// Message is the API server's or the policy's message.
	Message string
}

// Error implements error.
func (e *RejectedError) Error() string { return e.Object + " rejected: " + e.Message }

// ConflictError means the object belongs to another Release (reason Conflict).
type ConflictError struct {
	// Object is "Kind namespace/name".
	Object string
	// Owner is the "namespace/name" of the Release that owns the object.
	Owner string
}

// Error implements error.
func (e *ConflictError) Error() string {
	return e.Object + " belongs to Release " + e.Owner
}

// classify turns an API error about the object ref into a *RejectedError when the server refused
// the object itself, else wraps it as a transient error naming the operation and the object.
func classify(op, ref string, err error) error {
	if isRejection(err) {
		return &RejectedError{Object: ref, Message: apiMessage(err)}
	}
	return fmt.Errorf("%s %s: %w", op, ref, err)
}

// isRejection reports whether an API error is a refusal of the object rather than a failure of
// the cluster: retrying it unchanged would fail again.
func isRejection(err error) bool {
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return false // a 403 that goes away with the namespace
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err),
		apierrors.IsRequestEntityTooLargeError(err), apierrors.IsMethodNotSupported(err),
		apierrors.IsUnsupportedMediaType(err), apierrors.IsNotAcceptable(err):
		return true
	case apierrors.IsNotFound(err):
		return isNamespaceNotFound(err)
	}
	return isTypedPatchError(err)
}

// isTypedPatchError reports whether the API server failed to convert the applied object to its
// schema (a field not declared in it, a wrong type). Such an object can never be applied, but the
// server answers 500 without a reason (kubernetes/kubernetes#122480), so the message tells.
func isTypedPatchError(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	return s.Code == http.StatusInternalServerError && strings.HasPrefix(s.Message, "failed to create typed patch object")
}

// isNamespaceNotFound reports whether a NotFound error is about the object's namespace.
func isNamespaceNotFound(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Group == "" && d.Kind == "namespaces"
}

// apiMessage is the API server's message of err, or err's text.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}
