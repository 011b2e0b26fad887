package coordinator

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory" // the registry's storage
	"github.com/sirupsen/logrus"
	"helm.sh/helm/v3/pkg/registry"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

var quietRegistry sync.Once

// ociRegistry runs an in-memory distribution registry on 127.0.0.1 (plain HTTP), behind
// requireAuth when auth is set, and returns its host:port and a Helm client that pushes to it.
func ociRegistry(t testing.TB, auth bool) (string, *registry.Client, *atomic.Int64) {
	t.Helper()
	quietRegistry.Do(func() { logrus.SetLevel(logrus.FatalLevel) })
	app := handlers.NewApp(context.Background(), &configuration.Configuration{Storage: configuration.Storage{
		"inmemory":    configuration.Parameters{},
		"maintenance": configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}},
	}})
	var seen atomic.Int64
	var h http.Handler = app
	opts := []registry.ClientOption{registry.ClientOptPlainHTTP(),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json"))}
	if auth {
		h = requireAuth(app, &seen)
		opts = append(opts, registry.ClientOptBasicAuth(testUser, testPassword))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	client, err := registry.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return ln.Addr().String(), client, &seen
}

// pushChart pushes chart name at version to host/charts and returns the manifest digest.
func pushChart(t testing.TB, client *registry.Client, host, name, version string) string {
	t.Helper()
	res, err := client.Push(packageChart(t, name, version, nil), host+"/charts/"+name+":"+version)
	if err != nil {
		t.Fatalf("push %s %s: %v", name, version, err)
	}
	return res.Manifest.Digest
}

// TestEnsureOCI pulls charts from a real registry by version, by constraint and by digest; the same
// manifest is downloaded once.
func TestEnsureOCI(t *testing.T) {
	host, client, _ := ociRegistry(t, false)
	digests := map[string]string{}
	for _, v := range []string{"1.0.0", "1.2.0", "2.0.0"} {
		digests[v] = pushChart(t, client, host, "web", v)
	}
	c := newTestCoordinator(t, Options{})
	tests := []struct {
		version, want, wantErr string
	}{
		{version: "1.0.0", want: "1.0.0"},
		{version: "1.x", want: "1.2.0"},
		{version: ">=1.1 <3", want: "2.0.0"},
		{version: "", want: "2.0.0"},
		{version: digests["1.0.0"], want: "1.0.0"},
		{version: "3.x", wantErr: `no tag of ` + host + `/charts/web matches version "3.x"`},
		{version: "1.0.1", wantErr: "1.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			res, err := c.Ensure(context.Background(), helmRelease("oci://"+host+"/charts", "web", tt.version))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			if !res.Ready || res.Content.Revision != tt.want || res.Content.Type != v1alpha1.ContentTypeHelm || res.Content.Dir == "" {
				t.Fatalf("result %+v, want chart %s", res, tt.want)
			}
		})
	}
	// 1.0.0 by tag and by digest is one manifest: three charts, three downloads.
	if got := c.Stats().Downloads; got != 3 {
		t.Errorf("downloads = %d, want 3 (one per manifest)", got)
	}
}

// TestEnsureOCICredentials pulls from a registry that requires basic auth, with a secretRef.
func TestEnsureOCICredentials(t *testing.T) {
	host, client, seen := ociRegistry(t, true)
	pushChart(t, client, host, "web", "1.0.0")
	secrets := secretLister(t, map[string]map[string][]byte{
		"basic": {"username": []byte(testUser), "password": []byte(testPassword)},
		"wrong": {"username": []byte(testUser), "password": []byte("nope")},
	})
	for _, tt := range []struct{ secret, wantErr string }{{"basic", ""}, {"wrong", "401"}, {"", "basic credential not found"}} {
		t.Run("secret="+tt.secret, func(t *testing.T) {
			rel := helmRelease("oci://"+host+"/charts", "web", "1.0.0")
			if tt.secret != "" {
				rel.Spec.Source.SecretRef = &v1alpha1.LocalObjectReference{Name: tt.secret}
			}
			before := seen.Load()
			res, err := newTestCoordinator(t, Options{Secrets: secrets}).Ensure(context.Background(), rel)
			if tt.wantErr == "" {
				if err != nil || !res.Ready || res.Content.Revision != "1.0.0" {
					t.Fatalf("Ensure = %+v, %v", res, err)
				}
				if seen.Load() == before {
					t.Error("no request carried the credentials")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), testPassword) {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}
