package coordinator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// packageChart writes a chart named name at version with the given extra files and returns the
// archive bytes.
func packageChart(t testing.TB, name, version string, extra map[string]string) []byte {
	t.Helper()
	src := t.TempDir()
	files := map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: " + name + "\nversion: " + version + "\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	for k, v := range files {
		p := filepath.Join(src, name, k)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	chrt, err := loader.LoadDir(filepath.Join(src, name))
	if err != nil {
		t.Fatal(err)
	}
	out, err := chartutil.Save(chrt, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// helmRepo serves charts and an index.yaml, counting the requests per path.
type helmRepo struct {
	*httptest.Server
	mu       sync.Mutex
	files    map[string][]byte
	requests map[string]*atomic.Int64
	index    *repo.IndexFile
}

func newHelmRepo(t testing.TB) *helmRepo {
	r := &helmRepo{files: map[string][]byte{}, requests: map[string]*atomic.Int64{}, index: repo.NewIndexFile()}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		data, ok := r.files[strings.TrimPrefix(req.URL.Path, "/")]
		n := r.requests[req.URL.Path]
		if n == nil {
			n = &atomic.Int64{}
			r.requests[req.URL.Path] = n
		}
		r.mu.Unlock()
		n.Add(1)
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Write(data)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *helmRepo) add(t testing.TB, name, version string, data []byte, digest string) {
	file := name + "-" + version + ".tgz"
	if digest == "" {
		sum := sha256.Sum256(data)
		digest = hex.EncodeToString(sum[:])
	}
	chrt, err := loader.LoadArchive(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.index.MustAdd(chrt.Metadata, file, "", digest); err != nil {
		t.Fatal(err)
	}
	r.index.SortEntries()
	idx, err := yaml.Marshal(r.index)
	if err != nil {
		t.Fatal(err)
	}
	r.files[file] = data
	r.files["index.yaml"] = idx
}

func (r *helmRepo) count(path string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.requests[path]; n != nil {
		return n.Load()
	}
	return 0
}

func helmRelease(repoURL, chart, version string) *v1alpha1.Release {
	return &v1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec:       v1alpha1.ReleaseSpec{Source: v1alpha1.ReleaseSource{Helm: &v1alpha1.HelmSource{RepoURL: repoURL, Chart: chart, Version: version}}},
	}
}

func newTestCoordinator(t testing.TB, opts Options) *Coordinator {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = t.TempDir()
	}
	c, err := NewWithOptions(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEnsureHelmHTTP(t *testing.T) {
	r := newHelmRepo(t)
	for _, v := range []string{"1.4.0", "1.4.2", "1.5.0", "2.0.0", "2.1.0-rc.1", "3.0.0"} {
		r.add(t, "web", v, packageChart(t, "web", v, nil), "")
	}
	tests := []struct {
		version, want string
	}{{"1.4.x", "1.4.2"}, {">=2 <3", "2.0.0"}, {"1.5.0", "1.5.0"}, {"", "3.0.0"}, {"~1.4.0", "1.4.2"}}
	c := newTestCoordinator(t, Options{})
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			res, err := c.Ensure(context.Background(), helmRelease(r.URL, "web", tt.version))
			if err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			if !res.Ready || res.Content.Revision != tt.want || res.Content.Type != v1alpha1.ContentTypeHelm {
				t.Fatalf("result %+v, want revision %s", res, tt.want)
			}
			if _, err := os.Stat(filepath.Join(res.Content.Dir, "Chart.yaml")); err != nil {
				t.Errorf("chart dir: %v", err)
			}
		})
	}
}

func TestEnsureHelmHTTPErrors(t *testing.T) {
	r := newHelmRepo(t)
	r.add(t, "web", "1.0.0", packageChart(t, "web", "1.0.0", nil), strings.Repeat("0", 64))
	big := packageChart(t, "big", "1.0.0", map[string]string{"files/blob.txt": strings.Repeat("convoy ", 300000)})
	r.add(t, "big", "1.0.0", big, "")
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	tests := []struct {
		name    string
		rel     *v1alpha1.Release
		opts    Options
		want    string
		refused bool
	}{
		{"digest mismatch", helmRelease(r.URL, "web", "1.0.0"), Options{}, "does not match the index", false},
		{"no such version", helmRelease(r.URL, "web", "9.x"), Options{}, "chart web version 9.x", false},
		{"unreachable repository", helmRelease(dead.URL, "web", "1.0.0"), Options{}, "fetching the helm repository index", false},
		{"download over the limit", helmRelease(r.URL, "big", "1.0.0"), Options{MaxDownloadBytes: int64(len(big)) - 1}, "over the download limit", true},
		{"unpacked over the limit", helmRelease(r.URL, "big", "1.0.0"), Options{MaxUnpackedBytes: 1 << 20}, "unpacked chart is over the limit", true},
		{"secret missing", func() *v1alpha1.Release {
			rel := helmRelease(r.URL, "web", "1.0.0")
			rel.Spec.Source.SecretRef = &v1alpha1.LocalObjectReference{Name: "creds"}
			return rel
		}(), Options{}, "reads no Secrets", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newTestCoordinator(t, tt.opts).Ensure(context.Background(), tt.rel)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if errors.Is(err, ErrRefused) != tt.refused {
				t.Errorf("errors.Is(ErrRefused) = %v, want %v", !tt.refused, tt.refused)
			}
		})
	}
}

// TestEnsureHelmFetchCount renders 50 Releases of one chart at once and then again: the chart is
// downloaded once and the index once (singleflight, then the cache).
func TestEnsureHelmFetchCount(t *testing.T) {
	r := newHelmRepo(t)
	r.add(t, "web", "1.0.0", packageChart(t, "web", "1.0.0", nil), "")
	c := newTestCoordinator(t, Options{})
	for round := range 2 {
		var wg sync.WaitGroup
		errs := make(chan error, 50)
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.Ensure(context.Background(), helmRelease(r.URL, "web", "1.x")); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	st := c.Stats()
	t.Logf("100 Ensure calls (50 concurrent, twice): %d chart downloads, %d index fetches, %d cache hits; server saw %d chart and %d index requests",
		st.Downloads, st.IndexFetches, st.CacheHits, r.count("/web-1.0.0.tgz"), r.count("/index.yaml"))
	if got := r.count("/web-1.0.0.tgz"); got != 1 {
		t.Errorf("chart downloaded %d times, want 1", got)
	}
	if got := r.count("/index.yaml"); got != 1 {
		t.Errorf("index downloaded %d times, want 1", got)
	}
}
