package syncapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"golang.org/x/sync/singleflight"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/generated/clientset/versioned"
)

// SyncPath is the path of the sync endpoint.
const SyncPath = "/sync"

// Subresources authorized for /sync and /sync?force=true.
const (
	SyncSubresource      = "sync"
	ForceSyncSubresource = "forcesync"
)

// SyncResponse is the body of a 202 answer of /sync.
type SyncResponse struct {
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	Force       bool   `json:"force"`
	RequestedAt string `json:"requestedAt"`
}

// syncRequest is a parsed /sync request.
type syncRequest struct {
	namespace, name string
	force           bool
}

// parseSync checks the method and query of a /sync request.
func parseSync(r *http.Request) (syncRequest, error) {
	if r.Method != http.MethodPost {
		return syncRequest{}, Errorf(http.StatusMethodNotAllowed, "%s is not allowed: use POST", r.Method)
	}
	q := r.URL.Query()
	req := syncRequest{namespace: q.Get("namespace"), name: q.Get("name")}
	if errs := validation.IsDNS1123Label(req.namespace); len(errs) > 0 {
		return syncRequest{}, Errorf(http.StatusBadRequest, "query parameter namespace %q: %v", req.namespace, errs)
	}
	if errs := validation.IsDNS1123Subdomain(req.name); len(errs) > 0 {
		return syncRequest{}, Errorf(http.StatusBadRequest, "query parameter name %q: %v", req.name, errs)
	}
	if f := q.Get("force"); f != "" {
		force, err := strconv.ParseBool(f)
		if err != nil {
			return syncRequest{}, Errorf(http.StatusBadRequest, "query parameter force %q is not a boolean", f)
		}
		req.force = force
	}
	return req, nil
}

// SyncAttributes are the authorization attributes of a /sync request: create on
// releases/sync (releases/forcesync for force) of the named Release.
func SyncAttributes(r *http.Request) (authorizer.AttributesRecord, error) {
	req, err := parseSync(r)
	if err != nil {
		return authorizer.AttributesRecord{}, err
	}
	sub := SyncSubresource
	if req.force {
		sub = ForceSyncSubresource
	}
	return authorizer.AttributesRecord{
		Verb:            "create",
		APIGroup:        v1alpha1.SchemeGroupVersion.Group,
		APIVersion:      v1alpha1.SchemeGroupVersion.Version,
		Resource:        "releases",
		Subresource:     sub,
		Namespace:       req.namespace,
		Name:            req.name,
		ResourceRequest: true,
		Path:            r.URL.Path,
	}, nil
}

// NewSyncHandler returns the /sync handler: it sets the Release's sync annotation to the request
// time. Mount it with Handle(SyncPath, NewSyncHandler(...), SyncAttributes).
func NewSyncHandler(convoy versioned.Interface, clk clock.PassiveClock) http.Handler {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &syncHandler{convoy: convoy, clock: clk}
}

type syncHandler struct {
	convoy versioned.Interface
	clock  clock.PassiveClock
	// flights merges the concurrent requests for one Release (and force): a flood of /sync costs
	// the API server one read and at most one write at a time, not one of each per request.
	flights singleflight.Group
}

// flightTimeout bounds one shared recording of a request, which no single caller may cancel.
const flightTimeout = 20 * time.Second

func (h *syncHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, err := parseSync(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	ctx := r.Context()
	// A request that joins a flight in progress shares its answer: that flight's write completes
	// after this request arrived, so the sync it asks for also comes after this request.
	key := req.namespace + "/" + req.name + "/" + strconv.FormatBool(req.force)
	flight := h.flights.DoChan(key, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flightTimeout)
		defer cancel()
		return h.request(fctx, req)
	})
	var value string
	select {
	case res := <-flight:
		if res.Err != nil {
			WriteError(w, res.Err)
			return
		}
		value = res.Val.(string)
	case <-ctx.Done():
		return // the client is gone
	}
	user := "unknown"
	if u, ok := request.UserFrom(ctx); ok {
		user = u.GetName()
	}
	klog.FromContext(ctx).Info("Sync requested", "release", klog.KRef(req.namespace, req.name), "force", req.force, "user", user, "at", value)
	WriteJSON(w, http.StatusAccepted, SyncResponse{Namespace: req.namespace, Name: req.name, Force: req.force, RequestedAt: value})
}

// conflictBackoff bounds the retries of a request that lost a race with another sync request.
var conflictBackoff = wait.Backoff{Steps: 10, Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 0.5}

// request records the sync request req on its Release and returns the request time now held by
// the annotation. The annotation only moves forward: when it already holds a pending request at
// or after this one's time, this request coalesces into it and nothing is written. Otherwise the
// write is conditioned on the annotation still holding what was read (patchAnnotation), so
// concurrent requests cannot put back an older time, which would leave an accepted request
// unhandled for good; a request that lost the race reads the Release again.
func (h *syncHandler) request(ctx context.Context, req syncRequest) (string, error) {
	releases := h.convoy.CoreV1alpha1().Releases(req.namespace)
	var value string
	err := retry.OnError(conflictBackoff, lostRace, func() error {
		rel, err := releases.Get(ctx, req.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		annotation, handled := v1alpha1.SyncRequestedAtAnnotation, rel.Status.LastHandledSyncAt
		if req.force {
			annotation, handled = v1alpha1.ForceSyncRequestedAtAnnotation, rel.Status.LastHandledForceSyncAt
		}
		at := requestTime(h.clock.Now(), handled)
		// at is after the handled time, so an annotation at or after at is a pending request.
		if current, err := time.Parse(time.RFC3339, rel.Annotations[annotation]); err == nil && !current.Before(at) {
			value = current.UTC().Format(time.RFC3339)
			return nil
		}
		value = at.Format(time.RFC3339)
		pt, patch, err := patchAnnotation(rel, annotation, value)
		if err != nil {
			return err
		}
		_, err = releases.Patch(ctx, req.name, pt, patch, metav1.PatchOptions{FieldManager: "convoy-sync-api"})
		return err
	})
	if apierrors.IsNotFound(err) {
		return "", Errorf(http.StatusNotFound, "release %s/%s not found", req.namespace, req.name)
	}
	if err != nil {
		return "", fmt.Errorf("recording the sync request on release %s/%s: %w", req.namespace, req.name, err)
	}
	return value, nil
}

// patchAnnotation returns the patch that sets annotation to value only if the Release still holds
// what rel holds. When rel has the annotation, a JSON patch tests its value before replacing it:
// only another sync request makes it fail, not the status writes of the controllers, which change
// the resourceVersion all the time. Without the annotation, a merge patch carries rel's
// resourceVersion.
func patchAnnotation(rel *v1alpha1.Release, annotation, value string) (types.PatchType, []byte, error) {
	current, ok := rel.Annotations[annotation]
	if !ok {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": rel.ResourceVersion, "annotations": map[string]string{annotation: value}}})
		return types.MergePatchType, patch, err
	}
	path := "/metadata/annotations/" + strings.ReplaceAll(strings.ReplaceAll(annotation, "~", "~0"), "/", "~1")
	patch, err := json.Marshal([]map[string]string{
		{"op": "test", "path": path, "value": current},
		{"op": "replace", "path": path, "value": value},
	})
	return types.JSONPatchType, patch, err
}

// lostRace reports whether a conditional write failed because the Release changed since it was
// read: a conflict of the resourceVersion, or a failed JSON patch test (422 Invalid).
func lostRace(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsInvalid(err)
}

// requestTime is the time written to the annotation: now at second precision (status times are
// stored at second precision, so a finer time would never compare as handled), and always after
// the last handled request, so a request made within the second a previous one was handled in
// is still pending.
func requestTime(now time.Time, handled *metav1.Time) time.Time {
	at := now.UTC().Truncate(time.Second)
	if handled != nil && !at.After(handled.Time) {
		at = handled.Time.UTC().Truncate(time.Second).Add(time.Second)
	}
	return at
}
