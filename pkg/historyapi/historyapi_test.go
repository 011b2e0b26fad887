package historyapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	listers "github.com/kumodo/convoy/generated/listers/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/renderstore"
)

func TestHandler(t *testing.T) {
	ctx := context.Background()
	store, err := renderstore.Open("file://" + t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ref := "sha256:" + strings.Repeat("ab", 32)
	if _, err := store.AppendHistory(ctx, types.NamespacedName{Namespace: "team-a", Name: "shop"},
		renderstore.Entry{RenderRef: ref, Revision: "1.0.0", Generation: 2, Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range []string{"shop", "empty"} {
		if err := indexer.Add(&v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(NewHandler(store, listers.NewReleaseLister(indexer)))
	defer srv.Close()
	noStore := httptest.NewServer(NewHandler(nil, nil))
	defer noStore.Close()

	got, err := Fetch(ctx, srv.Client(), srv.URL, "token", "team-a", "shop")
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if len(got.Entries) != 1 || got.Entries[0].RenderRef != ref || got.Entries[0].Number != 1 || got.Store == "" {
		t.Fatalf("Fetch = %+v", got)
	}
	if got, err := Fetch(ctx, srv.Client(), srv.URL, "", "team-a", "empty"); err != nil || len(got.Entries) != 0 || got.Entries == nil {
		t.Fatalf("Fetch of a Release without history = %+v, %v; want an empty list", got, err)
	}
	tests := []struct {
		name   string
		base   string
		ns, rn string
		status string
	}{
		{"unknown release", srv.URL, "team-a", "nope", "404"},
		{"invalid name", srv.URL, "team-a", "../x", "400"},
		{"invalid namespace", srv.URL, "", "shop", "400"},
		{"no store", noStore.URL, "team-a", "shop", "404"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Fetch(ctx, srv.Client(), tt.base, "", tt.ns, tt.rn); err == nil || !strings.Contains(err.Error(), tt.status) {
				t.Fatalf("Fetch = %v, want status %s", err, tt.status)
			}
		})
	}
	resp, err := http.Post(srv.URL+Path+"?namespace=team-a&name=shop", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST = %d, want 405", resp.StatusCode)
	}
}

func TestAttributes(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		query    string
		wantCode int
	}{
		{name: "get", method: http.MethodGet, query: "namespace=team-a&name=shop"},
		{name: "no namespace", method: http.MethodGet, query: "name=shop", wantCode: http.StatusBadRequest},
		{name: "no name", method: http.MethodGet, query: "namespace=team-a", wantCode: http.StatusBadRequest},
		{name: "bad name", method: http.MethodGet, query: "namespace=team-a&name=..%2Fx", wantCode: http.StatusBadRequest},
		{name: "post", method: http.MethodPost, query: "namespace=team-a&name=shop", wantCode: http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Attributes(httptest.NewRequest(tt.method, Path+"?"+tt.query, nil))
			if tt.wantCode != 0 {
				se, ok := err.(*StatusError)
				if !ok || se.Code != tt.wantCode {
					t.Fatalf("Attributes error = %v, want status %d", err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Verb != "get" || a.APIGroup != v1alpha1.SchemeGroupVersion.Group || a.Resource != "releases" || a.Subresource != "history" ||
				a.Namespace != "team-a" || a.Name != "shop" || !a.ResourceRequest {
				t.Errorf("Attributes = %+v", a)
			}
		})
	}
}
