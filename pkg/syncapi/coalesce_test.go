package syncapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// releasesResource is the resource of Releases in the fake clientset's tracker.
var releasesResource = v1alpha1.SchemeGroupVersion.WithResource("releases")

// setAnnotation writes the sync annotation of ns/web straight into the fake clientset.
func setAnnotation(t *testing.T, release func() *v1alpha1.Release, update func(*v1alpha1.Release), value string) {
	t.Helper()
	rel := release()
	metav1.SetMetaDataAnnotation(&rel.ObjectMeta, v1alpha1.SyncRequestedAtAnnotation, value)
	update(rel)
}

// TestSyncNeverMovesBack: a request whose time is not after the pending request coalesces into
// it without a write; a write is conditioned on what was read (the resourceVersion without an
// annotation, else a JSON patch test of its value); a concurrent request that wrote a later time
// between this one's read and write makes the write fail, and the retry coalesces into the later
// time instead of putting back an older one.
func TestSyncNeverMovesBack(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	srv, convoy := testServer(t, now, 0)
	releases := convoy.CoreV1alpha1().Releases("ns")
	get := func() *v1alpha1.Release {
		rel, err := releases.Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return rel
	}
	update := func(rel *v1alpha1.Release) {
		if _, err := releases.Update(context.Background(), rel, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var patches atomic.Int64
	var lastPatch atomic.Value // string: patch type and body
	convoy.PrependReactor("patch", "releases", func(a clienttesting.Action) (bool, runtime.Object, error) {
		patches.Add(1)
		p := a.(clienttesting.PatchAction)
		lastPatch.Store(string(p.GetPatchType()) + " " + string(p.GetPatch()))
		return false, nil, nil
	})

	// The first request of a Release without the annotation: a merge patch conditioned on the
	// resourceVersion.
	code, body := do(t, srv, "POST", "/sync?namespace=ns&name=web", "carol-token")
	if code != http.StatusAccepted || body["requestedAt"] != "2026-03-01T10:00:00Z" {
		t.Fatalf("first POST /sync: %d %v", code, body)
	}
	if p, _ := lastPatch.Load().(string); !strings.HasPrefix(p, string(types.MergePatchType)) || !strings.Contains(p, `"resourceVersion"`) {
		t.Errorf("first patch %q: want a merge patch with the resourceVersion", p)
	}
	patches.Store(0)

	// A pending request later than now: the new request joins it.
	later := "2026-03-01T10:00:05Z"
	setAnnotation(t, get, update, later)
	code, body = do(t, srv, "POST", "/sync?namespace=ns&name=web", "carol-token")
	if code != http.StatusAccepted || body["requestedAt"] != later {
		t.Fatalf("POST /sync with a later pending request: %d %v, want 202 with requestedAt %s", code, body, later)
	}
	if n := patches.Load(); n != 0 {
		t.Errorf("%d patches, want none", n)
	}
	if got := get().Annotations[v1alpha1.SyncRequestedAtAnnotation]; got != later {
		t.Errorf("annotation %q, want it left at %s", got, later)
	}

	// An older pending request is replaced by a JSON patch that first tests the value read: a
	// status write of a controller changes the resourceVersion, never this.
	setAnnotation(t, get, update, "2026-03-01T09:59:00Z")
	code, body = do(t, srv, "POST", "/sync?namespace=ns&name=web", "carol-token")
	if code != http.StatusAccepted || body["requestedAt"] != "2026-03-01T10:00:00Z" {
		t.Fatalf("POST /sync over an older request: %d %v", code, body)
	}
	wantOps := `[{"op":"test","path":"/metadata/annotations/release.core.convoy.kumodo.io~1sync-requested-at","value":"2026-03-01T09:59:00Z"},` +
		`{"op":"replace","path":"/metadata/annotations/release.core.convoy.kumodo.io~1sync-requested-at","value":"2026-03-01T10:00:00Z"}]`
	if p, _ := lastPatch.Load().(string); p != string(types.JSONPatchType)+" "+wantOps {
		t.Errorf("patch %q, want %s %s", p, types.JSONPatchType, wantOps)
	}
	if got := get().Annotations[v1alpha1.SyncRequestedAtAnnotation]; got != "2026-03-01T10:00:00Z" {
		t.Errorf("annotation %q after the patch, want 2026-03-01T10:00:00Z", got)
	}

	// A concurrent request writes 10:00:07 between this request's read and its write.
	setAnnotation(t, get, update, "2026-03-01T09:59:00Z")
	raced := false
	convoy.PrependReactor("patch", "releases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if raced {
			return false, nil, nil
		}
		raced = true
		// The tracker directly: the clientset is locked while its reactors run.
		obj, err := convoy.Tracker().Get(releasesResource, "ns", "web")
		if err != nil {
			t.Error(err)
		}
		rel := obj.(*v1alpha1.Release)
		metav1.SetMetaDataAnnotation(&rel.ObjectMeta, v1alpha1.SyncRequestedAtAnnotation, "2026-03-01T10:00:07Z")
		if err := convoy.Tracker().Update(releasesResource, rel, "ns"); err != nil {
			t.Error(err)
		}
		// What the API server answers when the JSON patch's test fails.
		return true, nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "patch", releasesResource.GroupResource(),
			"web", "testing value /metadata/annotations/... failed", 0, false)
	})
	code, body = do(t, srv, "POST", "/sync?namespace=ns&name=web", "carol-token")
	if code != http.StatusAccepted || body["requestedAt"] != "2026-03-01T10:00:07Z" {
		t.Fatalf("POST /sync racing a later request: %d %v, want 202 with the later time", code, body)
	}
	if got := get().Annotations[v1alpha1.SyncRequestedAtAnnotation]; got != "2026-03-01T10:00:07Z" {
		t.Errorf("annotation %q after the race, want the later request's time kept", got)
	}
}

// TestSyncMergesConcurrentRequests: concurrent requests for one Release share the reads and
// writes of the request in flight, and all get the time it recorded.
func TestSyncMergesConcurrentRequests(t *testing.T) {
	srv, convoy := testServer(t, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), 0)
	var gets atomic.Int64
	convoy.PrependReactor("get", "releases", func(clienttesting.Action) (bool, runtime.Object, error) {
		gets.Add(1)
		time.Sleep(50 * time.Millisecond) // an API server under load: requests pile up meanwhile
		return false, nil, nil
	})
	const n = 20
	answers := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			code, body := do(t, srv, "POST", "/sync?namespace=ns&name=web", "carol-token")
			answers <- fmt.Sprint(code, " ", body["requestedAt"])
		})
	}
	wg.Wait()
	close(answers)
	for a := range answers {
		if a != "202 2026-03-01T10:00:00Z" {
			t.Errorf("answer %q, want 202 2026-03-01T10:00:00Z", a)
		}
	}
	t.Logf("%d reads for %d requests", gets.Load(), n)
	if got := gets.Load(); got >= n/2 {
		t.Errorf("%d reads of the Release for %d concurrent requests: they were not merged", got, n)
	}
}
