package renderstore

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kumodo/convoy/pkg/render"
)

// backends returns a fresh store per backend: a temporary directory and an in-process S3 server.
func backends(t *testing.T) map[string]Store {
	t.Helper()
	fileStore, err := Open("file://" + t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return map[string]Store{"file": fileStore, "s3": fakeS3(t)}
}

// fakeS3 starts gofakes3 with a bucket "convoy" and opens a store on it under the prefix "renders".
func fakeS3(t *testing.T) Store {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket("convoy"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
	s, err := Open("s3://convoy/renders?endpoint=" + strings.TrimPrefix(srv.URL, "http://") + "&region=us-east-1&tls=false&pathStyle=true")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testRender is a render of n ConfigMaps with numbers and nested fields, as rendering produces.
func testRender(t *testing.T, n int, revision string) *Render {
	t.Helper()
	var objs []*unstructured.Unstructured
	for i := range n {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web-" + string(rune('a'+i)), "namespace": "shop",
				"annotations": map[string]any{"convoy.kumodo.io/sync-wave": "1"}},
			"spec": map[string]any{"replicas": int64(i + 1), "ratio": 0.5, "paused": false,
				"template": map[string]any{"spec": map[string]any{"containers": []any{
					map[string]any{"name": "app", "image": "registry.example/web:" + revision}}}}},
		}})
	}
	ref, err := render.RenderRef(objs)
	if err != nil {
		t.Fatal(err)
	}
	return &Render{RenderRef: ref, Revision: revision, Objects: objs}
}

var shop = types.NamespacedName{Namespace: "team-a", Name: "shop"}

func TestRenders(t *testing.T) {
	ctx := context.Background()
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			r1, r2 := testRender(t, 3, "1.0.0"), testRender(t, 2, "1.1.0")
			if _, err := s.GetRender(ctx, shop, r1.RenderRef); !errors.Is(err, ErrNotFound) {
				t.Fatalf("GetRender of a missing render: %v, want ErrNotFound", err)
			}
			for _, r := range []*Render{r1, r2, r1} {
				if err := s.PutRender(ctx, shop, r); err != nil {
					t.Fatalf("PutRender: %v", err)
				}
			}
			got, err := s.GetRender(ctx, shop, r1.RenderRef)
			if err != nil {
				t.Fatalf("GetRender: %v", err)
			}
			if got.RenderRef != r1.RenderRef || got.Revision != "1.0.0" || !reflect.DeepEqual(got.Objects, r1.Objects) {
				t.Fatalf("GetRender = %+v, want %+v", got, r1)
			}
			refs, err := s.ListRenders(ctx, shop)
			if err != nil {
				t.Fatalf("ListRenders: %v", err)
			}
			want := sortedUnique([]string{r1.RenderRef, r2.RenderRef})
			if !reflect.DeepEqual(refs, want) {
				t.Fatalf("ListRenders = %v, want %v", refs, want)
			}
			if other, err := s.ListRenders(ctx, types.NamespacedName{Namespace: "team-a", Name: "shop2"}); err != nil || len(other) != 0 {
				t.Fatalf("ListRenders of another Release = %v, %v", other, err)
			}
			if err := s.DeleteRender(ctx, shop, r2.RenderRef); err != nil {
				t.Fatalf("DeleteRender: %v", err)
			}
			if err := s.DeleteRender(ctx, shop, r2.RenderRef); err != nil {
				t.Fatalf("DeleteRender of a missing render: %v", err)
			}
			if refs, _ := s.ListRenders(ctx, shop); !reflect.DeepEqual(refs, []string{r1.RenderRef}) {
				t.Fatalf("ListRenders after delete = %v", refs)
			}
		})
	}
}

func TestCorruptRender(t *testing.T) {
	ctx := context.Background()
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			r1, r2 := testRender(t, 1, "a"), testRender(t, 2, "b")
			if err := s.PutRender(ctx, shop, r2); err != nil {
				t.Fatal(err)
			}
			// Store r2's blob under r1's key: the reference check must refuse it.
			data, err := s.(*store).b.get(ctx, mustKey(t, shop, r2.RenderRef))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.(*store).b.put(ctx, mustKey(t, shop, r1.RenderRef), data, ""); err != nil {
				t.Fatal(err)
			}
			if _, err := s.GetRender(ctx, shop, r1.RenderRef); err == nil || errors.Is(err, ErrNotFound) {
				t.Fatalf("GetRender of a blob holding another render: %v, want a corruption error", err)
			}
			if err := s.(*store).b.put(ctx, mustKey(t, shop, r1.RenderRef), []byte("not gzip"), ""); err != nil {
				t.Fatal(err)
			}
			if _, err := s.GetRender(ctx, shop, r1.RenderRef); err == nil || !strings.Contains(err.Error(), "decompressing") {
				t.Fatalf("GetRender of garbage: %v", err)
			}
		})
	}
}

func mustKey(t *testing.T, rel types.NamespacedName, ref string) string {
	t.Helper()
	k, err := renderKey(rel, ref)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestHistory(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			h, err := s.History(ctx, shop)
			if err != nil || len(h) != 0 {
				t.Fatalf("History of a new Release = %v, %v", h, err)
			}
			for i, c := range []byte{'1', '2', '3'} {
				e, err := s.AppendHistory(ctx, shop, Entry{RenderRef: ref(c), Revision: "v" + string(c), Generation: int64(i + 1), Time: at.Add(time.Duration(i) * time.Minute)})
				if err != nil {
					t.Fatalf("AppendHistory: %v", err)
				}
				if e.Number != int64(i+1) {
					t.Fatalf("entry number %d, want %d", e.Number, i+1)
				}
			}
			h, err = s.History(ctx, shop)
			if err != nil || len(h) != 3 || h[2].RenderRef != ref('3') || h[2].Revision != "v3" || h[2].Generation != 3 || !h[2].Time.Equal(at.Add(2*time.Minute)) {
				t.Fatalf("History = %+v, %v", h, err)
			}
			if err := s.ReplaceHistory(ctx, shop, h[2:]); err != nil {
				t.Fatalf("ReplaceHistory: %v", err)
			}
			e, err := s.AppendHistory(ctx, shop, Entry{RenderRef: ref('4'), Time: at})
			if err != nil || e.Number != 4 {
				t.Fatalf("AppendHistory after GC = %+v, %v; want number 4", e, err)
			}
			if _, err := s.AppendHistory(ctx, shop, Entry{RenderRef: "sha256:nope"}); err == nil {
				t.Fatal("AppendHistory accepted an invalid reference")
			}
		})
	}
}

func TestParseHistoryTornLine(t *testing.T) {
	data := []byte(`{"number":1,"renderRef":"` + refA + `","generation":1,"time":"2026-07-01T12:00:00Z"}` + "\n" + `{"number":2,"rend`)
	h, err := parseHistory(data)
	if err != nil || len(h) != 1 || h[0].Number != 1 {
		t.Fatalf("parseHistory = %+v, %v; want the first entry only", h, err)
	}
	if _, err := parseHistory([]byte("garbage\n{}\n")); err == nil {
		t.Fatal("parseHistory accepted a bad line in the middle")
	}
}

func TestDeleteRelease(t *testing.T) {
	ctx := context.Background()
	other := types.NamespacedName{Namespace: "team-a", Name: "shop-2"}
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			for _, rel := range []types.NamespacedName{shop, other} {
				if err := s.PutRender(ctx, rel, testRender(t, 1, "x")); err != nil {
					t.Fatal(err)
				}
				if _, err := s.AppendHistory(ctx, rel, Entry{RenderRef: testRender(t, 1, "x").RenderRef, Time: time.Now()}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.DeleteRelease(ctx, shop); err != nil {
				t.Fatalf("DeleteRelease: %v", err)
			}
			if refs, err := s.ListRenders(ctx, shop); err != nil || len(refs) != 0 {
				t.Fatalf("renders left: %v, %v", refs, err)
			}
			if h, err := s.History(ctx, shop); err != nil || len(h) != 0 {
				t.Fatalf("history left: %v, %v", h, err)
			}
			if keys, err := s.(*store).b.list(ctx, "team-a/shop/"); err != nil || len(keys) != 0 {
				t.Fatalf("keys left under the prefix: %v, %v", keys, err)
			}
			if refs, err := s.ListRenders(ctx, other); err != nil || len(refs) != 1 {
				t.Fatalf("the other Release lost its renders: %v, %v", refs, err)
			}
			if err := s.DeleteRelease(ctx, shop); err != nil {
				t.Fatalf("DeleteRelease of a deleted Release: %v", err)
			}
			if err := s.DeleteRelease(ctx, types.NamespacedName{Namespace: "team-a", Name: ".."}); err == nil {
				t.Fatal("DeleteRelease accepted an escaping name")
			}
		})
	}
}

func TestFileStoreLayout(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open("file://" + dir)
	if err != nil {
		t.Fatal(err)
	}
	r := testRender(t, 1, "x")
	if err := s.PutRender(ctx, shop, r); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendHistory(ctx, shop, Entry{RenderRef: r.RenderRef, Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"team-a/shop/renders/" + strings.TrimPrefix(r.RenderRef, "sha256:") + ".json.gz", "team-a/shop/history.jsonl"} {
		if fi, err := os.Stat(filepath.Join(dir, p)); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "team-a/shop/*/"+tmpPrefix+"*")); len(matches) > 0 {
		t.Fatalf("temporary files left: %v", matches)
	}
	if err := s.DeleteRelease(ctx, shop); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "team-a")); !os.IsNotExist(err) {
		t.Fatalf("namespace directory left after deleting its only Release: %v", err)
	}
}

func TestStoreDown(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// A file where the store directory should be: every write fails, as with a lost volume.
	root := filepath.Join(dir, "renders")
	if err := os.WriteFile(root, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	fileStore, err := Open("file://" + root)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
	srv := httptest.NewServer(nil)
	addr := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	s3Store, err := Open("s3://convoy/renders?endpoint=" + addr + "&tls=false&region=us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]Store{"file": fileStore, "s3": s3Store} {
		t.Run(name, func(t *testing.T) {
			r := testRender(t, 1, "x")
			if err := s.PutRender(ctx, shop, r); err == nil {
				t.Fatal("PutRender succeeded on a store that is down")
			}
			if _, err := s.GetRender(ctx, shop, r.RenderRef); err == nil || errors.Is(err, ErrNotFound) {
				t.Fatalf("GetRender on a store that is down: %v, want an error that is not ErrNotFound", err)
			}
		})
	}
}
