package syncapi

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Error is an HTTP error answer with its status code. Attribute functions given to Handle return
// one to reject a request before authorization (400, 405).
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
}

// Errorf builds an *Error.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// errorBody is the JSON body of an error answer.
type errorBody struct {
	Code    int    `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// WriteError writes err as a JSON error answer; an error that is not an *Error is a 500.
func WriteError(w http.ResponseWriter, err error) {
	e, ok := err.(*Error)
	if !ok {
		e = &Error{Code: http.StatusInternalServerError, Message: err.Error()}
	}
	WriteJSON(w, e.Code, errorBody{Code: e.Code, Reason: http.StatusText(e.Code), Message: e.Message})
}

// WriteJSON writes v as a JSON answer with the given status code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
