package framework

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
)

// HelmRepo is a Helm chart repository served over plain HTTP on 127.0.0.1 by the test process:
// charts are packaged at test time into a directory, which is served with its index.yaml.
type HelmRepo struct {
	// URL is the repository's base URL, e.g. http://127.0.0.1:41234.
	URL string

	dir      string
	srv      *http.Server
	mu       sync.Mutex
	user     string
	password string
	requests atomic.Int64
}

// NewHelmRepo starts an empty repository; it stops when the test ends.
func NewHelmRepo(t testing.TB) *HelmRepo {
	t.Helper()
	r := &HelmRepo{dir: t.TempDir()}
	// An empty index makes the repository valid before the first chart.
	if err := repo.NewIndexFile().WriteFile(filepath.Join(r.dir, "index.yaml"), 0o644); err != nil {
		t.Fatalf("helm repo: write index: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("helm repo: listen: %v", err)
	}
	r.URL = "http://" + ln.Addr().String()
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve)}
	go func() { _ = r.srv.Serve(ln) }()
	t.Cleanup(func() { _ = r.srv.Close() })
	return r
}

// RequireBasicAuth makes every request need these credentials; without them it answers 401.
func (r *HelmRepo) RequireBasicAuth(user, password string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.user, r.password = user, password
}

// Requests returns how many requests the repository answered.
func (r *HelmRepo) Requests() int64 { return r.requests.Load() }

func (r *HelmRepo) serve(w http.ResponseWriter, req *http.Request) {
	r.requests.Add(1)
	r.mu.Lock()
	user, password := r.user, r.password
	r.mu.Unlock()
	if user != "" {
		u, p, ok := req.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	http.FileServer(http.Dir(r.dir)).ServeHTTP(w, req)
}

// AddChartDir packages the chart in dir (with whatever is in its charts/) and publishes it;
// it returns the chart's version.
func (r *HelmRepo) AddChartDir(dir string) (string, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return "", fmt.Errorf("load chart %s: %w", dir, err)
	}
	return ch.Metadata.Version, r.AddChart(ch)
}

// AddChart packages ch and publishes it: the archive is written next to the others and the
// index is rebuilt from them, with their digests.
func (r *HelmRepo) AddChart(ch *chart.Chart) error {
	if _, err := PackageChart(ch, r.dir); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	index, err := repo.IndexDirectory(r.dir, r.URL)
	if err != nil {
		return fmt.Errorf("index %s: %w", r.dir, err)
	}
	index.SortEntries()
	// Written under another name, then renamed: a reader never sees half an index.
	tmp := filepath.Join(r.dir, ".index.yaml.tmp")
	if err := index.WriteFile(tmp, 0o644); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(r.dir, "index.yaml")); err != nil {
		return fmt.Errorf("publish index: %w", err)
	}
	return nil
}

// PackageChart writes ch as <name>-<version>.tgz into outDir, as `helm package` does, and
// returns the archive's path.
func PackageChart(ch *chart.Chart, outDir string) (string, error) {
	if err := ch.Validate(); err != nil {
		return "", fmt.Errorf("chart %s: %w", ch.Name(), err)
	}
	path, err := chartutil.Save(ch, outDir)
	if err != nil {
		return "", fmt.Errorf("package chart %s: %w", ch.Name(), err)
	}
	return path, nil
}
