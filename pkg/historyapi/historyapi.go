// Package historyapi serves a Release's render history from the render store over HTTP, so
// "kubectl convoy history" works whichever backend the controller uses. The handler is mounted
// next to the sync API (pkg/syncapi), which authenticates the caller and authorizes verb get on
// releases/history in the Release's namespace before the handler runs.
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
	"k8s.io/klog/v2"

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
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "only GET", http.StatusMethodNotAllowed)
		return
	}
	ns, name := r.URL.Query().Get("namespace"), r.URL.Query().Get("name")
	if len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		http.Error(w, "namespace and name must name a Release", http.StatusBadRequest)
		return
	}
	if h.store == nil {
		http.Error(w, "the controller has no render store (--render-store)", http.StatusNotFound)
		return
	}
	if h.releases != nil {
		if _, err := h.releases.Releases(ns).Get(name); apierrors.IsNotFound(err) {
			http.Error(w, fmt.Sprintf("release %s/%s not found", ns, name), http.StatusNotFound)
			return
		} else if err != nil {
			http.Error(w, "reading the release", http.StatusInternalServerError)
			return
		}
	}
	entries, err := h.store.History(r.Context(), types.NamespacedName{Namespace: ns, Name: name})
	if err != nil {
		klog.FromContext(r.Context()).Error(err, "Serving render history", "namespace", ns, "name", name)
		http.Error(w, "the render store is unavailable", http.StatusServiceUnavailable)
		return
	}
	if entries == nil {
		entries = []renderstore.Entry{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(Response{Namespace: ns, Name: name, Store: h.store.Location(), Entries: entries})
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
