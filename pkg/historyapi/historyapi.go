// Package historyapi serves a Release's render history from the render store over HTTP, so
// "kubectl convoy history" works whichever backend the controller uses. The handler is mounted
// next to the sync API (pkg/syncapi), which authenticates the caller and authorizes verb get on
// releases/history in the Release's namespace (Attributes) before the handler runs. Answers are
// JSON, errors shaped like the sync API's ({"code", "reason", "message"}).
package historyapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	listers "github.com/kumodo/convoy/generated/listers/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/renderstore"
)

// Path is where the handler is mounted: GET /history?namespace=NS&name=NAME.
const Path = "/history"

// Response is the body of a successful GET /history.
type Response struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Store describes the render store the history comes from.
	Store string `json:"store"`
	// Entries are the history entries, oldest first.
	Entries []renderstore.Entry `json:"entries"`
}

// handler serves GET /history.
type handler struct {
	store    renderstore.Store
	releases listers.ReleaseLister
}

// NewHandler returns the /history handler. store nil answers 404 (no render store configured);
// releases, when not nil, makes an unknown Release answer 404.
func NewHandler(store renderstore.Store, releases listers.ReleaseLister) http.Handler {
	return &handler{store: store, releases: releases}
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rel, err := parseRequest(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if h.store == nil {
		writeError(w, errorf(http.StatusNotFound, "the controller has no render store (--render-store)"))
		return
	}
	if h.releases != nil {
		if _, err := h.releases.Releases(rel.Namespace).Get(rel.Name); apierrors.IsNotFound(err) {
			writeError(w, errorf(http.StatusNotFound, "release %s not found", rel))
			return
		} else if err != nil {
			writeError(w, errorf(http.StatusInternalServerError, "reading release %s", rel))
			return
		}
	}
	entries, err := h.store.History(r.Context(), rel)
	if err != nil {
		klog.FromContext(r.Context()).Error(err, "Serving render history", "release", rel)
		writeError(w, errorf(http.StatusServiceUnavailable, "the render store is unavailable"))
		return
	}
	if entries == nil {
		entries = []renderstore.Entry{}
	}
	writeJSON(w, http.StatusOK, Response{Namespace: rel.Namespace, Name: rel.Name, Store: h.store.Location(), Entries: entries})
}

// Subresource is the Release subresource a /history request is authorized on, with verb get.
const Subresource = "history"

// Attributes are the authorization attributes of a /history request: get on releases/history of
// the named Release, in its namespace. A request that is not a GET (405) or does not name a
// Release (400) is rejected with a *StatusError before authorization, so a request without a
// namespace is never authorized cluster-wide.
func Attributes(r *http.Request) (authorizer.AttributesRecord, error) {
	rel, err := parseRequest(r)
	if err != nil {
		return authorizer.AttributesRecord{}, err
	}
	return authorizer.AttributesRecord{
		Verb:            "get",
		APIGroup:        v1alpha1.SchemeGroupVersion.Group,
		APIVersion:      v1alpha1.SchemeGroupVersion.Version,
		Resource:        "releases",
		Subresource:     Subresource,
		Namespace:       rel.Namespace,
		Name:            rel.Name,
		ResourceRequest: true,
		Path:            r.URL.Path,
	}, nil
}

// parseRequest checks the method and the query of a /history request.
func parseRequest(r *http.Request) (types.NamespacedName, error) {
	if r.Method != http.MethodGet {
		return types.NamespacedName{}, errorf(http.StatusMethodNotAllowed, "%s is not allowed: use GET", r.Method)
	}
	rel := types.NamespacedName{Namespace: r.URL.Query().Get("namespace"), Name: r.URL.Query().Get("name")}
	if errs := validation.IsDNS1123Label(rel.Namespace); len(errs) > 0 {
		return types.NamespacedName{}, errorf(http.StatusBadRequest, "query parameter namespace %q: %s", rel.Namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(rel.Name); len(errs) > 0 {
		return types.NamespacedName{}, errorf(http.StatusBadRequest, "query parameter name %q: %s", rel.Name, strings.Join(errs, "; "))
	}
	return rel, nil
}

// StatusError is an error answer of the history endpoint with its HTTP status code.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
}

func errorf(code int, format string, args ...any) *StatusError {
	return &StatusError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// errorBody is the JSON body of an error answer, shaped like the sync API's.
type errorBody struct {
	Code    int    `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, err error) {
	var se *StatusError
	if !errors.As(err, &se) {
		se = &StatusError{Code: http.StatusInternalServerError, Message: err.Error()}
	}
	if se.Code == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", http.MethodGet)
	}
	writeJSON(w, se.Code, errorBody{Code: se.Code, Reason: http.StatusText(se.Code), Message: se.Message})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Fetch reads a Release's history from a controller's history endpoint at baseURL (the sync API's
// https://host:port), authenticating with a bearer token when token is not empty.
func Fetch(ctx context.Context, client *http.Client, baseURL, token, namespace, name string) (*Response, error) {
	u, err := url.Parse(strings.TrimSuffix(baseURL, "/") + Path)
	if err != nil {
		return nil, fmt.Errorf("history URL %q: %w", baseURL, err)
	}
	u.RawQuery = url.Values{"namespace": {namespace}, "name": {name}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("building the history request: %w", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the history response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", u.Redacted(), resp.Status, strings.TrimSpace(string(body)))
	}
	var out Response
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("decoding the history response: %w", err)
	}
	return &out, nil
}

// ErrNoSource is returned by callers that have neither a store URL nor a history endpoint.
var ErrNoSource = errors.New("no history source: pass --store URL (an S3 or local file store) or --history-url https://controller:port")
