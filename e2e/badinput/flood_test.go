package badinput

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

// floodRequests is the number of concurrent POST /sync of TestSyncFlood.
const floodRequests = 500

// syncClient talks to the controller's sync API, whose certificate the controller process signed
// itself; the connection stays on 127.0.0.1. It speaks HTTP/2, so the flood is one of requests
// multiplexed over a few connections, not of TLS handshakes: 500 RSA handshakes at once on a
// loaded 2-core machine outlast the server's 30 s write timeout, and the answers arrive broken.
var syncClient = &http.Client{
	Timeout: 2 * time.Minute,
	Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed, loopback only
		ForceAttemptHTTP2: true,
	},
}

// postSync sends POST /sync for ns/name as the sync user and returns the status code and body.
func postSync(ns, name string) (int, map[string]any, error) {
	q := url.Values{"namespace": {ns}, "name": {name}}
	req, err := http.NewRequest(http.MethodPost, env.Controller.SyncAPIURL+"/sync?"+q.Encode(), nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+framework.SyncUserToken)
	resp, err := syncClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("%d with a body that is not JSON: %w", resp.StatusCode, err)
	}
	return resp.StatusCode, body, nil
}

// grantSync lets the sync user request syncs of the Releases of ns.
func grantSync(t *testing.T, ns string) {
	t.Helper()
	rbac := env.Mgmt.Kube.RbacV1()
	if _, err := rbac.Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "sync"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{convoyv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"releases/sync"},
			Verbs: []string{"create"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sync"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "sync"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: framework.SyncUser}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// appliedLogLines counts the controller log lines of renders applied for Release ns/name.
func appliedLogLines(t *testing.T, ns, name string) int {
	t.Helper()
	log, err := os.ReadFile(env.Controller.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, `"Applied render"`) && strings.Contains(line, `release="`+ns+"/"+name+`"`) {
			n++
		}
	}
	return n
}

// TestSyncFlood: 500 concurrent POST /sync for one Manual Release answer 202 or 429 only, never a
// server error; the accepted requests coalesce into few applies; the latest accepted request is
// handled; and the API answers at once afterwards.
func TestSyncFlood(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	grantSync(t, ns)
	env.CreateSource(t, ns, "src", map[string]string{"app.yaml": keepDoc})
	env.CreateConfigMapRelease(t, ns, release, "bare", "src", framework.WithManualSync())
	env.WaitApplied(t, ns, release, convoyv1alpha1.ReasonWaitingForSync, applyTimeout, nil)
	// Every POST, refused or not, takes from the user's rate-limit bucket: wait until the API server
	// grants the request before the first POST, rather than polling the sync API.
	framework.Eventually(t, 30*time.Second, func() (bool, string) {
		sar, err := env.Mgmt.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: framework.SyncUser, ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: "create", Group: convoyv1alpha1.SchemeGroupVersion.Group, Resource: "releases", Subresource: "sync", Name: release,
			}}}, metav1.CreateOptions{})
		if err != nil {
			return false, err.Error()
		}
		return sar.Status.Allowed, fmt.Sprintf("SubjectAccessReview of the sync user: %+v", sar.Status)
	})
	if code, body, err := postSync(ns, release); err != nil || code != http.StatusAccepted {
		t.Fatalf("POST /sync: %d %v %v", code, body, err)
	}
	proto := probeProto(t)
	env.WaitApplied(t, ns, release, convoyv1alpha1.ReasonApplied, applyTimeout, func(r *convoyv1alpha1.Release) (bool, string) {
		return r.Status.LastHandledSyncAt != nil, "the first /sync is not handled yet"
	})
	before := appliedLogLines(t, ns, release)
	time.Sleep(time.Second) // the rate limit's bucket refills a little

	codes := map[int]int{}
	var latest string
	var errs []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range floodRequests {
		wg.Go(func() {
			code, body, err := postSync(ns, release)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err.Error())
				return
			}
			codes[code]++
			if code != http.StatusAccepted && code != http.StatusTooManyRequests && len(errs) < 5 {
				errs = append(errs, fmt.Sprintf("%d: %v", code, body["message"]))
			}
			if at, _ := body["requestedAt"].(string); code == http.StatusAccepted && at > latest {
				latest = at
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	t.Logf("%d concurrent POST /sync (%s) in %s: codes %v, %d errors", floodRequests, proto, took.Round(time.Millisecond), codes, len(errs))
	if len(errs) > 0 {
		t.Errorf("%d requests failed or were answered with an error, e.g. %q", len(errs), errs)
	}
	for code, n := range codes {
		if code != http.StatusAccepted && code != http.StatusTooManyRequests {
			t.Errorf("%d answers %d: want only 202 and 429", n, code)
		}
	}
	accepted := codes[http.StatusAccepted]
	if accepted == 0 || codes[http.StatusTooManyRequests] == 0 {
		t.Fatalf("codes %v: want both accepted and rate-limited requests", codes)
	}
	latestAt, err := time.Parse(time.RFC3339, latest)
	if err != nil {
		t.Fatalf("requestedAt %q: %v", latest, err)
	}

	// The latest accepted request is handled (coalesced, not lost), by a bounded number of applies.
	env.WaitApplied(t, ns, release, convoyv1alpha1.ReasonApplied, applyTimeout, func(r *convoyv1alpha1.Release) (bool, string) {
		if at := r.Status.LastHandledSyncAt; at == nil || at.Time.Before(latestAt) {
			return false, fmt.Sprintf("lastHandledSyncAt %v, want the latest accepted request %s", at, latest)
		}
		return true, ""
	})
	time.Sleep(quietPeriod)
	applies := appliedLogLines(t, ns, release) - before
	bound := int(took/time.Second) + 3
	recordResult("sync-flood", "202/429", fmt.Sprintf("%d POST /sync: %v; %d applies for %d accepted requests", floodRequests, codes, applies, accepted))
	t.Logf("%d applies for %d accepted requests (bound %d)", applies, accepted, bound)
	if applies < 1 || applies > bound || applies >= accepted {
		t.Errorf("%d applies for %d accepted requests in %s: want at least 1 and at most %d, fewer than the requests", applies, accepted, took, bound)
	}

	// The API still answers promptly: a request after the bucket refilled is accepted.
	framework.Eventually(t, 30*time.Second, func() (bool, string) {
		begin := time.Now()
		code, body, err := postSync(ns, release)
		if err != nil || time.Since(begin) > 5*time.Second {
			return false, fmt.Sprintf("POST /sync after the flood: %v (took %s)", err, time.Since(begin))
		}
		return code == http.StatusAccepted, fmt.Sprintf("POST /sync after the flood: %d %v", code, body)
	})
	checkController(t)
}

// probeProto returns the protocol syncClient speaks with the sync API (GET /healthz-like probe of
// /sync, answered 405 or 401 without touching a Release).
func probeProto(t *testing.T) string {
	t.Helper()
	resp, err := syncClient.Get(env.Controller.SyncAPIURL + "/sync")
	if err != nil {
		t.Fatalf("probe the sync API: %v", err)
	}
	resp.Body.Close()
	return resp.Proto
}
