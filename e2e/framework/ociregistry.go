package framework

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory" // the registry's storage
	"github.com/sirupsen/logrus"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/registry"
)

// quietRegistryLogs keeps the registry's logs (logrus, process-wide: an access log and an error
// for every 404 a client probes for) out of test output.
var quietRegistryLogs sync.Once

// OCIRegistry is an OCI registry (github.com/distribution/distribution) run in the test process
// with in-memory storage, served over plain HTTP on 127.0.0.1.
type OCIRegistry struct {
	// Host is host:port, e.g. 127.0.0.1:41234; a chart repository URL is "oci://" + Host + "/charts".
	Host string

	client *registry.Client
}

// NewOCIRegistry starts an empty registry; it stops when the test ends.
func NewOCIRegistry(t testing.TB) *OCIRegistry {
	t.Helper()
	quietRegistryLogs.Do(func() { logrus.SetLevel(logrus.FatalLevel) })
	cfg := &configuration.Configuration{
		Storage: configuration.Storage{
			"inmemory":    configuration.Parameters{},
			"maintenance": configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}},
		},
	}
	app := handlers.NewApp(context.Background(), cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("oci registry: listen: %v", err)
	}
	r := &OCIRegistry{Host: ln.Addr().String()}
	srv := &http.Server{Handler: app}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	// The pushing client reads and writes no credentials file of the host.
	r.client, err = registry.NewClient(registry.ClientOptPlainHTTP(),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "registry-config.json")))
	if err != nil {
		t.Fatalf("oci registry: helm registry client: %v", err)
	}
	return r
}

// PushChart packages ch and pushes it with Helm's registry client to <Host>/<repository>/<name>
// tagged with its version; it returns the manifest digest.
func (r *OCIRegistry) PushChart(ch *chart.Chart, repository string) (string, error) {
	dir, err := os.MkdirTemp("", "convoy-oci-push-")
	if err != nil {
		return "", fmt.Errorf("push chart %s: %w", ch.Name(), err)
	}
	defer os.RemoveAll(dir)
	path, err := PackageChart(ch, dir)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("push chart %s: %w", ch.Name(), err)
	}
	ref := fmt.Sprintf("%s/%s/%s:%s", r.Host, repository, ch.Metadata.Name, ch.Metadata.Version)
	res, err := r.client.Push(data, ref)
	if err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	return res.Manifest.Digest, nil
}
