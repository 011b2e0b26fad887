package e2e

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

// syncClient talks to the controller's sync API. Its certificate is self-signed by the controller
// process, so the test skips verification; the connection stays on 127.0.0.1.
var syncClient = &http.Client{
	Timeout:   10 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // self-signed, loopback only
}

// callSync sends method /sync for ns/name with token ("" for none) and returns the status code and
// the decoded JSON body.
func callSync(t *testing.T, method, ns, name, token string, force bool) (int, map[string]any) {
	t.Helper()
	q := url.Values{"namespace": {ns}, "name": {name}}
	if force {
		q.Set("force", "true")
	}
	code, body := callAPI(t, method, "/sync", q, token)
	m, ok := body.(map[string]any)
	if !ok {
		t.Fatalf("%s /sync answered %d with %T, want a JSON object", method, code, body)
	}
	return code, m
}

// callAPI sends method path?query to the controller's sync API with token ("" for none) and
// returns the status code and the decoded body; every answer must be JSON.
func callAPI(t *testing.T, method, path string, query url.Values, token string) (int, any) {
	t.Helper()
	req, err := http.NewRequest(method, env.Controller.SyncAPIURL+path+"?"+query.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := syncClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s %s answered %d with Content-Type %q, want JSON", method, path, resp.StatusCode, ct)
	}
	var body any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("%s %s answered %d with a body that is not JSON: %v", method, path, resp.StatusCode, err)
	}
	return resp.StatusCode, body
}

// expectSync polls /sync until it answers want: authorization answers are cached for seconds, so
// a new RoleBinding takes a moment to show.
func expectSync(t *testing.T, method, ns, name, token string, force bool, want int) map[string]any {
	t.Helper()
	var body map[string]any
	framework.Eventually(t, 30*time.Second, func() (bool, string) {
		var code int
		code, body = callSync(t, method, ns, name, token, force)
		if code != want {
			return false, fmt.Sprintf("%s /sync?force=%v as %q: %d %v, want %d", method, force, token, code, body, want)
		}
		return true, ""
	})
	return body
}

// installSyncRoles creates the ClusterRoles of manifests/rbac/sync.yaml on mgmt.
func installSyncRoles(t *testing.T) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "manifests", "rbac", "sync.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range strings.Split(string(data), "\n---\n") {
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(d), &role); err != nil {
			t.Fatalf("decode manifests/rbac/sync.yaml: %v", err)
		}
		if _, err := env.Mgmt.Kube.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create ClusterRole %s: %v", role.Name, err)
		}
	}
}

// bind grants clusterRole to user in ns.
func bind(t *testing.T, ns, name, clusterRole, user string) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := env.Mgmt.Kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create RoleBinding %s: %v", name, err)
	}
}

// TestSyncAPI: POST /sync authenticates by TokenReview (401 without a valid token), authorizes by
// SubjectAccessReview (403 without RBAC; force needs releases/forcesync), answers 404 for an
// unknown Release and 405 for GET, and with RBAC answers 202 and sets the annotation, which makes
// a Manual Release apply.
func TestSyncAPI(t *testing.T) {
	t.Parallel()
	installSyncRoles(t)
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "api-manifests", map[string]string{"all.yaml": framework.ConfigMapDoc("settings", map[string]string{"k": "v"}, nil)})
	env.CreateConfigMapRelease(t, ns, "api", "bare", "api-manifests", framework.WithManualSync())
	env.WaitApplied(t, ns, "api", convoyv1alpha1.ReasonWaitingForSync, applyTimeout, nil)

	if code, body := callSync(t, http.MethodPost, ns, "api", "", false); code != http.StatusUnauthorized {
		t.Errorf("no token: %d %v, want 401", code, body)
	}
	if code, body := callSync(t, http.MethodPost, ns, "api", "not-a-token", false); code != http.StatusUnauthorized {
		t.Errorf("invalid token: %d %v, want 401", code, body)
	}
	if code, body := callSync(t, http.MethodPost, ns, "api", framework.NobodyToken, false); code != http.StatusForbidden {
		t.Errorf("token without RBAC: %d %v, want 403", code, body)
	}
	if code, body := callSync(t, http.MethodGet, ns, "api", framework.NobodyToken, false); code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d %v, want 405", code, body)
	}

	bind(t, ns, "sync-only", "convoy-sync-only", framework.SyncUser)
	body := expectSync(t, http.MethodPost, ns, "api", framework.SyncUserToken, false, http.StatusAccepted)
	requestedAt, _ := body["requestedAt"].(string)
	r, err := env.GetRelease(ns, "api")
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Annotations[convoyv1alpha1.SyncRequestedAtAnnotation]; got == "" || got != requestedAt {
		t.Errorf("annotation %s = %q, want the answer's requestedAt %q", convoyv1alpha1.SyncRequestedAtAnnotation, got, requestedAt)
	}
	env.WaitApplied(t, ns, "api", convoyv1alpha1.ReasonApplied, applyTimeout, func(r *convoyv1alpha1.Release) (bool, string) {
		return r.Status.LastHandledSyncAt != nil, "the /sync request is not handled yet"
	})

	if code, body := callSync(t, http.MethodPost, ns, "api", framework.SyncUserToken, true); code != http.StatusForbidden {
		t.Errorf("force with releases/sync only: %d %v, want 403", code, body)
	}
	if code, body := callSync(t, http.MethodPost, ns, "nope", framework.SyncUserToken, false); code != http.StatusNotFound {
		t.Errorf("unknown Release: %d %v, want 404", code, body)
	}
	bind(t, ns, "sync", "convoy-sync", framework.SyncUser)
	expectSync(t, http.MethodPost, ns, "api", framework.SyncUserToken, true, http.StatusAccepted)
	r, err = env.GetRelease(ns, "api")
	if err != nil {
		t.Fatal(err)
	}
	if r.Annotations[convoyv1alpha1.ForceSyncRequestedAtAnnotation] == "" {
		t.Errorf("annotation %s not set after a forced /sync: %v", convoyv1alpha1.ForceSyncRequestedAtAnnotation, r.Annotations)
	}
}
