package coordinator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/repo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// Credentials of the authenticated test servers; the tests check they never appear in errors.
const (
	testUser     = "deployer"
	testPassword = "s3cret-password"
	testToken    = "s3cret-token"
)

// requireAuth wraps next: requests without basic auth testUser/testPassword or bearer testToken
// get 401. seen counts requests that carried an Authorization header.
func requireAuth(next http.Handler, seen *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "" {
			seen.Add(1)
		}
		u, p, basic := req.BasicAuth()
		if (basic && u == testUser && p == testPassword) || req.Header.Get("Authorization") == "Bearer "+testToken {
			next.ServeHTTP(w, req)
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
}

// secretLister holds Secrets of namespace "shop".
func secretLister(t testing.TB, secrets map[string]map[string][]byte) corev1listers.SecretLister {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for name, data := range secrets {
		if err := idx.Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	return corev1listers.NewSecretLister(idx)
}

// caPEM is the PEM certificate of a TLS test server.
func caPEM(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// TestEnsureHelmCredentials fetches a chart from a real HTTPS repository that requires
// credentials, with the Secret keys username/password, token and ca.crt.
func TestEnsureHelmCredentials(t *testing.T) {
	files := newHelmRepo(t) // the content; served below behind authentication over TLS
	files.add(t, "web", "1.0.0", packageChart(t, "web", "1.0.0", nil), "")
	var seen atomic.Int64
	srv := httptest.NewTLSServer(requireAuth(files.Config.Handler, &seen))
	t.Cleanup(srv.Close)
	ca := caPEM(srv)
	secrets := secretLister(t, map[string]map[string][]byte{
		"basic":       {"username": []byte(testUser), "password": []byte(testPassword), "ca.crt": ca},
		"token":       {"token": []byte(testToken), "caFile": ca},
		"wrong":       {"username": []byte(testUser), "password": []byte("nope"), "ca.crt": ca},
		"ca-only":     {"ca.crt": ca},
		"no-ca":       {"username": []byte(testUser), "password": []byte(testPassword)},
		"not-a-cert":  {"ca.crt": []byte("hello")},
		"user-and-tk": {"username": []byte(testUser), "token": []byte(testPassword), "ca.crt": ca},
	})
	tests := []struct {
		secret  string
		wantErr string
	}{
		{secret: "basic"},
		{secret: "token"},
		{secret: "user-and-tk"}, // the token is the password of basic auth with a username
		{secret: "wrong", wantErr: "401 Unauthorized"},
		{secret: "ca-only", wantErr: "401 Unauthorized"},
		{secret: "no-ca", wantErr: "certificate"},
		{secret: "not-a-cert", wantErr: "holds no PEM certificate"},
		{secret: "absent", wantErr: "source secretRef shop/absent not found"},
	}
	for _, tt := range tests {
		t.Run(tt.secret, func(t *testing.T) {
			c := newTestCoordinator(t, Options{Secrets: secrets})
			rel := helmRelease(srv.URL, "web", "1.x")
			rel.Spec.Source.SecretRef = &v1alpha1.LocalObjectReference{Name: tt.secret}
			res, err := c.Ensure(context.Background(), rel)
			if tt.wantErr == "" {
				if err != nil || !res.Ready || res.Content.Revision != "1.0.0" {
					t.Fatalf("Ensure = %+v, %v; want chart 1.0.0", res, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			for _, secret := range []string{testPassword, testToken} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error shows a credential: %v", err)
				}
			}
		})
	}
	if seen.Load() == 0 {
		t.Error("no request carried credentials")
	}
}

// TestEnsureHelmCredentialsStayOnHost: a chart whose index entry points at another host is
// downloaded from it without the repository's credentials.
func TestEnsureHelmCredentialsStayOnHost(t *testing.T) {
	data := packageChart(t, "web", "1.0.0", nil)
	var chartAuth, repoAuth atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "" {
			chartAuth.Add(1)
		}
		w.Write(data)
	}))
	t.Cleanup(other.Close)
	chrt, err := loader.LoadArchive(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	index := repo.NewIndexFile()
	if err := index.MustAdd(chrt.Metadata, "web-1.0.0.tgz", other.URL, hex.EncodeToString(sum[:])); err != nil {
		t.Fatal(err)
	}
	indexYAML, err := yaml.Marshal(index)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(requireAuth(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Write(indexYAML)
	}), &repoAuth))
	t.Cleanup(srv.Close)

	c := newTestCoordinator(t, Options{Secrets: secretLister(t, map[string]map[string][]byte{
		"basic": {"username": []byte(testUser), "password": []byte(testPassword)},
	})})
	rel := helmRelease(srv.URL, "web", "1.0.0")
	rel.Spec.Source.SecretRef = &v1alpha1.LocalObjectReference{Name: "basic"}
	if res, err := c.Ensure(context.Background(), rel); err != nil || !res.Ready {
		t.Fatalf("Ensure = %+v, %v", res, err)
	}
	if repoAuth.Load() != 1 {
		t.Errorf("the repository saw %d authenticated requests, want 1 (the index)", repoAuth.Load())
	}
	if chartAuth.Load() != 0 {
		t.Errorf("the other host got the repository's credentials %d times", chartAuth.Load())
	}
}
