package syncapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/generated/clientset/versioned/fake"
)

// tokens maps bearer tokens to users; grants maps users to the subresources they may create.
var (
	tokens = map[string]string{"alice-token": "alice", "bob-token": "bob", "carol-token": "carol"}
	grants = map[string]map[string]bool{"alice": {"sync": true, "forcesync": true}, "carol": {"sync": true}}
)

func testServer(t *testing.T, now time.Time, rateLimit float64) (*httptest.Server, *fake.Clientset) {
	t.Helper()
	authn := authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		name, ok := tokens[r.Header.Get("Authorization")[len("Bearer "):]]
		if !ok {
			return nil, false, nil
		}
		return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
	})
	authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetVerb() == "create" && a.GetResource() == "releases" && a.GetAPIGroup() == v1alpha1.SchemeGroupVersion.Group &&
			a.GetNamespace() == "ns" && grants[a.GetUser().GetName()][a.GetSubresource()] {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "no rule", nil
	})
	handled := metav1.NewTime(now.Add(2 * time.Second).Truncate(time.Second))
	convoy := fake.NewSimpleClientset(&v1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Status:     v1alpha1.ReleaseStatus{LastHandledForceSyncAt: &handled},
	})
	s, err := New(Config{Authenticator: authn, Authorizer: authz, RateLimit: rateLimit, Burst: 2})
	if err != nil {
		t.Fatal(err)
	}
	s.Handle(SyncPath, NewSyncHandler(convoy, clocktesting.NewFakePassiveClock(now)), SyncAttributes)
	srv := httptest.NewTLSServer(s)
	t.Cleanup(srv.Close)
	return srv, convoy
}

func do(t *testing.T, srv *httptest.Server, method, path, token string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("%s %s: body is not JSON: %v", method, path, err)
	}
	return resp.StatusCode, body
}

func TestSyncAPI(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 500, time.UTC)
	srv, convoy := testServer(t, now, 0)
	tests := []struct {
		name, method, path, token string
		want                      int
		annotation, value         string
	}{
		{"no token", "POST", "/sync?namespace=ns&name=web", "", http.StatusUnauthorized, "", ""},
		{"bad token", "POST", "/sync?namespace=ns&name=web", "nope", http.StatusUnauthorized, "", ""},
		{"GET", "GET", "/sync?namespace=ns&name=web", "alice-token", http.StatusMethodNotAllowed, "", ""},
		{"no name", "POST", "/sync?namespace=ns", "alice-token", http.StatusBadRequest, "", ""},
		{"bad force", "POST", "/sync?namespace=ns&name=web&force=maybe", "alice-token", http.StatusBadRequest, "", ""},
		{"no RBAC", "POST", "/sync?namespace=ns&name=web", "bob-token", http.StatusForbidden, "", ""},
		{"unknown release", "POST", "/sync?namespace=ns&name=nope", "alice-token", http.StatusNotFound, "", ""},
		{"unknown path", "POST", "/history", "alice-token", http.StatusNotFound, "", ""},
		{"sync", "POST", "/sync?namespace=ns&name=web", "carol-token", http.StatusAccepted,
			v1alpha1.SyncRequestedAtAnnotation, "2026-03-01T10:00:00Z"},
		{"force without forcesync", "POST", "/sync?namespace=ns&name=web&force=true", "carol-token", http.StatusForbidden, "", ""},
		// The last forced sync was handled after now: the request time moves past it.
		{"force", "POST", "/sync?namespace=ns&name=web&force=true", "alice-token", http.StatusAccepted,
			v1alpha1.ForceSyncRequestedAtAnnotation, "2026-03-01T10:00:03Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := do(t, srv, tt.method, tt.path, tt.token)
			if code != tt.want {
				t.Fatalf("status = %d (%v), want %d", code, body, tt.want)
			}
			if tt.annotation == "" {
				if body["message"] == "" || body["code"] != float64(code) {
					t.Errorf("error body = %v", body)
				}
				return
			}
			if body["requestedAt"] != tt.value {
				t.Errorf("requestedAt = %v, want %s", body["requestedAt"], tt.value)
			}
			rel, err := convoy.CoreV1alpha1().Releases("ns").Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := rel.Annotations[tt.annotation]; got != tt.value {
				t.Errorf("annotation %s = %q, want %q", tt.annotation, got, tt.value)
			}
		})
	}
}

func TestSyncAPIRateLimit(t *testing.T) {
	srv, _ := testServer(t, time.Now(), 0.001)
	var codes []int
	for range 4 {
		code, _ := do(t, srv, "POST", "/sync?namespace=ns&name=web", "alice-token")
		codes = append(codes, code)
	}
	if codes[0] != http.StatusAccepted || codes[1] != http.StatusAccepted || codes[3] != http.StatusTooManyRequests {
		t.Errorf("codes = %v, want 202 202 ... 429", codes)
	}
	// Another user has a bucket of its own.
	if code, _ := do(t, srv, "POST", "/sync?namespace=ns&name=web", "carol-token"); code != http.StatusAccepted {
		t.Errorf("carol: %d, want 202", code)
	}
}

func TestRequestTime(t *testing.T) {
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(base.Add(d)); return &t }
	tests := []struct {
		now     time.Time
		handled *metav1.Time
		want    time.Time
	}{
		{base.Add(700 * time.Millisecond), nil, base},
		{base.Add(700 * time.Millisecond), at(-time.Second), base},
		{base.Add(700 * time.Millisecond), at(0), base.Add(time.Second)},
		{base, at(5 * time.Second), base.Add(6 * time.Second)},
	}
	for i, tt := range tests {
		if got := requestTime(tt.now, tt.handled); !got.Equal(tt.want) {
			t.Errorf("%d: requestTime = %v, want %v", i, got, tt.want)
		}
	}
}

func TestClient(t *testing.T) {
	srv, _ := testServer(t, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), 0)
	dir := t.TempDir()
	write := func(name, token string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(token), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c := &Client{URL: srv.URL, TokenFile: write("alice", "alice-token\n"), HTTP: srv.Client()}
	at, err := c.RequestSync(context.Background(), "ns", "web", false)
	if err != nil || at != "2026-03-01T10:00:00Z" {
		t.Errorf("RequestSync = %q, %v", at, err)
	}
	c.TokenFile = write("bob", "bob-token")
	if _, err := c.RequestSync(context.Background(), "ns", "web", false); err == nil {
		t.Errorf("RequestSync as bob succeeded, want 403")
	}
}
