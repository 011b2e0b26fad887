package coordinator

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"

	"github.com/kumodo/convoy/pkg/render"
)

// podinfoRepo packages $CONVOY_REAL_CHARTS/podinfo and serves it from a test repository.
func podinfoRepo(b *testing.B) (*helmRepo, map[string]any) {
	dir := os.Getenv("CONVOY_REAL_CHARTS")
	if dir == "" {
		b.Skip("CONVOY_REAL_CHARTS is not set: the podinfo benchmark needs the real charts directory")
	}
	chrt, err := loader.LoadDir(filepath.Join(dir, "podinfo"))
	if err != nil {
		b.Fatal(err)
	}
	out, err := chartutil.Save(chrt, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	r := newHelmRepo(b)
	r.add(b, "podinfo", chrt.Metadata.Version, data, "")
	prod, err := os.ReadFile(filepath.Join(dir, "podinfo", "values-prod.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(prod, &values); err != nil {
		b.Fatal(err)
	}
	return r, values
}

func renderPodinfo(b *testing.B, c *Coordinator, repoURL string, values map[string]any) {
	res, err := c.Ensure(context.Background(), helmRelease(repoURL, "podinfo", ""))
	if err != nil {
		b.Fatal(err)
	}
	objs, err := render.Render(context.Background(), res.Content, values, render.Capabilities{KubeVersion: "v1.37.2"},
		render.Options{ReleaseName: "podinfo", Namespace: "shop"})
	if err != nil {
		b.Fatal(err)
	}
	if len(objs) == 0 {
		b.Fatal("podinfo rendered no objects")
	}
}

// BenchmarkPodinfo measures fetch + render of podinfo with values-prod.yaml: cold (an empty cache,
// so the index and the chart are downloaded and unpacked) and warm (everything cached).
func BenchmarkPodinfo(b *testing.B) {
	r, values := podinfoRepo(b)
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			renderPodinfo(b, newTestCoordinator(b, Options{CacheDir: b.TempDir()}), r.URL, values)
		}
	})
	b.Run("warm", func(b *testing.B) {
		c := newTestCoordinator(b, Options{})
		renderPodinfo(b, c, r.URL, values)
		b.ReportAllocs()
		for b.Loop() {
			renderPodinfo(b, c, r.URL, values)
		}
	})
}
